"""LoRA adapters' GPU buffers as vLLM and SGLang preallocate them at start-up (--enable-lora).

Both engines allocate, for every linear layer they wrap, an A buffer of N slots x rank x input and a B buffer of
N slots x output x rank in the model's dtype (N: vLLM's --max-loras, SGLang's --max-loras-per-batch; rank:
--max-lora-rank), whatever adapters are loaded later. Column-parallel layers (q/k/v, gate/up) keep A whole and B
split TP ways; row-parallel ones (o, down) split A and keep B whole. Per decoder layer on one GPU, in elements:

    q, k, v     A 3 r H             B r (h_q d + h_kv' (d + d_v)) / tp      h_kv': KV heads a GPU (replicated
    o           A r h_q d_v / tp    B r H                                   past h_kv, as the KV cache)
    gate, up    A 2 r H             B 2 r F / tp
    down        A r F / tp          B r H

times N slots and the dtype's bytes. Sources: vLLM vllm/lora/layers/base_linear.py create_lora_weights (commit
1ace43e: lora_a_stacked (max_loras, 1, rank, input_size) and lora_b_stacked (max_loras, 1, output_size, rank) per
slice; QKV three slices, gate_up two); SGLang python/sglang/srt/lora/mem_pool.py get_lora_A_shape /
get_lora_B_shape ((max_loras_per_batch, rank x stacked, input_dim) and (max_loras_per_batch, output_dim, rank),
input split for row-parallel modules, output for the rest), every module targeted (--lora-target-modules all).

Where the buffers land: vLLM creates them inside load_model's memory profiler (vllm/v1/worker/gpu_model_runner.py:
load_lora_model under DeviceMemoryProfiler; V0 from v0.8.0, vllm#14469), so they are part of its weights figure
and come off u x total (V0 v0.6.5-v0.7.3 create them after the profiler: outside the budget,
memory.VLLM_LORA_UNCOUNTED);
SGLang's LoRAManager allocates its pool after the weights load and before init_memory_pool (model_runner.py), so
they come off the KV pool. Not counted: the embeddings' and LM head's buffers where vLLM wraps them (L r (H + V)
elements more each), the extra LoRA vocabulary of older releases, the Punica kernels' metadata and the profile
run's LoRA activations. Experts (MoE), MLA projections and linear-attention layers are refused.

Defaults: vLLM --max-loras 1, --max-lora-rank 16 (vllm/config/lora.py), ranks from vLLM's possible_max_ranks;
SGLang --max-loras-per-batch 8 (server_args.py) and a rank SGLang infers from --lora-paths' adapters, which rooflab
does not read: give --max-lora-rank.
"""

from __future__ import annotations

from ..errors import InputError
from ..specs import ModelSpec
from ..units import DType
from .vocab import Engine

#: vLLM's --max-loras default and the ranks it accepts (vllm/config/lora.py, LoRAConfig: possible_max_ranks).
VLLM_MAX_LORAS = 1
VLLM_MAX_LORA_RANK = 16
VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: SGLang's --max-loras-per-batch default (python/sglang/srt/server_args.py).
SGLANG_MAX_LORAS = 8


def lora_defaults(engine: Engine, max_loras: int | None, max_lora_rank: int | None) -> tuple[int, int]:
    """(slots, rank) with the engine's defaults filled in; a rank vLLM refuses, or SGLang without a rank, is an
    InputError naming the option."""
    if engine is Engine.vllm:
        rank = VLLM_MAX_LORA_RANK if max_lora_rank is None else max_lora_rank
        if rank not in VLLM_RANKS:
            raise InputError(f"--max-lora-rank {rank}: vLLM takes one of {', '.join(map(str, VLLM_RANKS))}")
        return VLLM_MAX_LORAS if max_loras is None else max_loras, rank
    if max_lora_rank is None:
        raise InputError("--enable-lora with SGLang needs --max-lora-rank (SGLang infers it from --lora-paths' "
                         "adapters, which rooflab does not read)")
    return SGLANG_MAX_LORAS if max_loras is None else max_loras, max_lora_rank


def lora_buffer_bytes(model: ModelSpec, tensor_parallel: int, slots: int, rank: int, dtype: DType) -> int:
    """The A and B buffers of every wrapped linear layer on one of `tensor_parallel` GPUs (module docstring)."""
    if model.is_moe:
        raise InputError(f"{model.name}: LoRA buffers of routed experts (vLLM's FusedMoEWithLoRA, SGLang's MoE "
                         "LoRA pool) are not modelled; --enable-lora applies to dense models here")
    tp = tensor_parallel
    hidden = model.hidden_size
    elements = 0
    for name, t, count in model.layer_walk():
        if not t.is_attention or t.is_latent:
            raise InputError(f"{model.name}: LoRA buffers of {t.kind.value} layers ({name}) are not modelled; "
                             "--enable-lora applies to softmax-attention layers here")
        h = t.heads(model.heads)
        local = t.cached_heads(model.heads, tp)
        qkv = 3 * rank * hidden + rank * (h.num_qo_heads * h.head_dim // tp
                                           + local.num_kv_heads * (h.head_dim + h.value_dim))
        out = rank * h.num_qo_heads * h.value_dim // tp + rank * hidden
        elements += count * (qkv + out)
    ffn = model.dense_ffn_size or model.ffn_size
    mlp = 2 * rank * hidden + 2 * rank * ffn // tp + rank * ffn // tp + rank * hidden
    elements += model.num_layers * mlp
    return slots * elements * dtype.bytes


__all__ = ["SGLANG_MAX_LORAS", "VLLM_MAX_LORAS", "VLLM_MAX_LORA_RANK", "VLLM_RANKS", "lora_buffer_bytes",
           "lora_defaults"]
