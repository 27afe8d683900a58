"""The state caches of linear layers (Gated DeltaNet, Mamba-1, Mamba-2) as vLLM and SGLang allocate them.

A linear layer keeps, per sequence and per GPU, a short-convolution state and a recurrent (temporal) state, shaped
by its mixer (specs.layers.LayerType.state_elements, the one home of the shapes):

    gated_deltanet  conv (2 h_k d_k + h_v d_v) / tp x (K - 1)       temporal h_v / tp x d_v x d_k
    mamba1          conv d_inner / tp x (K - 1)                      temporal d_inner / tp x d_state
    mamba2          conv (d_inner + 2 G d_state) / tp x (K - 1)      temporal n_heads / tp x head_dim x d_state
                    (G = n_groups, or tp where tp does not divide n_groups: the groups are replicated)

conv in the conv dtype, temporal in the ssm dtype (vLLM: vllm/model_executor/layers/mamba/mamba_utils.py
MambaStateShapeCalculator.gated_delta_net_state_shape at commit 02d7108; mamba1_state_shape, mamba2_state_shape
and extra_groups_for_head_shards in the v0.11.2 wheel; SGLang v0.5.23: python/sglang/srt/configs/mamba_utils.py
Mamba2StateShape.create, and create_full_rank for Mamba-1 as n_heads = d_inner of head_dim 1, the same elements).
tp must divide both widths (both engines' divide() asserts). Qwen3-Next at TP 1: 8,192 x 3 conv elements and
32 x 128 x 128 temporal ones; Jamba (d_inner 8,192, d_state 16, K 4): 8,192 x 3 and 8,192 x 16.

The dtypes differ by engine:

    vLLM    conv in --mamba-cache-dtype (auto: the model's dtype), temporal in --mamba-ssm-cache-dtype
            (auto: the conv dtype) (MambaStateDtypeCalculator.gated_delta_net_state_dtype, same commit; the
            v0.11.2 wheel's mamba1_state_dtype and mamba2_state_dtype, _mamba_state_dtype, the same rule):
            Qwen3-Next in bf16, 1,097,728 bytes a layer
    SGLang  conv in bf16 always (CONV_DTYPE), temporal in --mamba-ssm-dtype, float32 by default
            (docs/basic_usage/qwen3.md, PR #15337; v0.5.23's mamba2_state_dtype for every Mamba-2 config):
            2,146,304 bytes a layer. SGLang v0.5.23 has no Jamba or Bamba model (its Mamba-2 hybrids are
            GraniteMoeHybrid, NemotronH and FalconH1), so its states for those are what its pool would hold.

What each engine then does with the state is in layout.py (vLLM: one padded page per sequence and group in the
shared block pool) and sglang.py (SGLang: a separate pool of max_mamba_cache_size slots).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..specs import ModelSpec
from ..units import DType
from .vocab import Engine, MambaCacheMode

#: The recurrent-state dtypes the engines take: vLLM's MambaDType (vllm/config/cache.py: auto, float32, float16,
#: bfloat16), SGLang's --mamba-ssm-dtype choices (bfloat16, float32).
STATE_DTYPES = {Engine.vllm: (DType.fp32, DType.fp16, DType.bf16), Engine.sglang: (DType.fp32, DType.bf16)}
#: SGLang's default --mamba-ssm-dtype and its fixed conv-state dtype.
SGLANG_SSM_DEFAULT = DType.fp32
SGLANG_CONV_DTYPE = DType.bf16
#: Pages a vLLM request holds in each mamba group, by --mamba-cache-mode (vllm/v1/kv_cache_interface.py,
#: MambaSpec.max_memory_usage_bytes, commit 001cabc: none 1, align 2, without speculative blocks).
VLLM_STATE_PAGES = {MambaCacheMode.none: 1, MambaCacheMode.align: 2}


@dataclass(frozen=True)
class StateLayers:
    """One linear layer type's state on one GPU: how many layers, and one sequence's conv and temporal bytes in
    one layer."""

    name: str
    num_layers: int
    conv_bytes: int
    temporal_bytes: int

    @property
    def bytes_per_layer(self) -> int:
        return self.conv_bytes + self.temporal_bytes

    @property
    def bytes_per_sequence(self) -> int:
        return self.num_layers * self.bytes_per_layer


def state_layers(model: ModelSpec, engine: Engine, tensor_parallel: int, model_dtype: DType,
                 ssm_dtype: DType | None = None) -> tuple[StateLayers, ...]:
    """Every linear layer type's state as `engine` allocates it on one of `tensor_parallel` GPUs (module
    docstring); `ssm_dtype` None is the engine's default. Raises InputError when tp does not divide the widths
    or the dtype is not one the engine takes."""
    if ssm_dtype is not None and ssm_dtype not in STATE_DTYPES[engine]:
        names = ", ".join(d.value for d in STATE_DTYPES[engine])
        raise InputError(f"--mamba-ssm-dtype {ssm_dtype.value}: {engine.title} takes {names} for the recurrent state")
    if engine is Engine.vllm:
        conv_dtype, temporal_dtype = model_dtype, ssm_dtype or model_dtype
    else:
        conv_dtype, temporal_dtype = SGLANG_CONV_DTYPE, ssm_dtype or SGLANG_SSM_DEFAULT
    out = []
    counts: dict[str, int] = {}
    for name, t, count in model.layer_walk():
        if not t.is_attention:
            counts[name] = counts.get(name, 0) + count
    for name, count in counts.items():
        t = model.layer_types[name]
        problem = t.state_split_error(tensor_parallel, model.name)
        if problem:
            raise InputError(problem)
        conv, temporal = t.state_elements(tensor_parallel)
        out.append(StateLayers(name, count, conv * conv_dtype.bytes, temporal * temporal_dtype.bytes))
    return tuple(out)


def vllm_hybrid_block_size(attention_bytes_per_token: int, state_page_bytes: int, block_size: int | None) -> int:
    """The attention block size vLLM V1 sets so an attention page holds at least one layer's state:

        block = 16 ceil(state page / (16 x attention bytes per token)), kept if the user's block is larger

    (vllm/model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config, commit 0144dd5:
    "Setting attention block size to N tokens"; the state page is then padded to the attention page. Qwen3-Next in
    bf16 at TP 1: 16 x ceil(1,097,728 / 32,768) = 544 tokens; at TP 4, 272). Later releases compute it in
    Platform.update_block_size_for_backend with the backend's kernel alignment (16 on the CUDA backends, or a larger
    --block-size) in place of 16 (vllm/platforms/interface.py, the 'none' and 'align' branch): the same block for
    the default --block-size."""
    needed = 16 * -(-state_page_bytes // (16 * attention_bytes_per_token))
    return needed if block_size is None or block_size < needed else block_size


__all__ = ["SGLANG_CONV_DTYPE", "SGLANG_SSM_DEFAULT", "STATE_DTYPES", "StateLayers", "VLLM_STATE_PAGES",
           "state_layers", "vllm_hybrid_block_size"]
