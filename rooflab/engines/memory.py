"""The terms an engine subtracts besides the activation peak: its weights, and the memory torch does not allocate.

Weights, as engines measure them (the memory `load_model` takes): every parameter in the format the
checkpoint ships (ModelSpec.weight_bytes, split tp ways), plus one rotary cos/sin cache of max_context_len x
rotary dim in the model's dtype, which every attention layer shares (vllm v0.6.x
vllm/model_executor/layers/rotary_embedding.py get_rope). vllm#10517 logged 14.9888 GiB for Llama-3.1-8B: 14.958
of parameters and 0.031 of its 131,072 x 128 bf16 cache. vLLM's mxfp4 experts (gpt-oss) take the bytes its MoE
backend lays them out in on the GPU (mxfp4.py: gpt-oss-120b's experts x1.0904 under Marlin on an A100, H 2880 ->
3072 and I 2880 -> 2944; x1.0819 under Triton's Hopper layouts on an H100 from v0.12.0); vLLM's block-fp8
linear layers under Marlin add its group scales (marlin_fp8.py: v0.9.0-v0.11.2 below compute capability 8.9,
v0.29 below 9.0); an unquantized checkpoint under a bitsandbytes 4-bit format is nf4_dq however the config asks
(vllm_in_flight); in engine mode an override naming the checkpoint's own format keeps it as shipped (capacity.shipped); the plain bound
(`rooflab capacity` without --engine) keeps the checkpoint's bytes. SGLang's weights add MLA's absorbed copies
(w_kc / w_vc, one rank's kv_b again: fp8 before v0.4.7 on block-fp8 checkpoints, bf16 after; sglang_absorbed_bytes)
and lay data-parallel attention's components out by release (capacity/weight_split.py: attention over TP / DP,
the embedding whole up to v0.5.7, the lm_head whole up to v0.4.4; v0.4.6.x's shared-expert copies on Hopper).

Non-torch memory (vLLM), the default per accounting and TP size; --non-torch-gib overrides it:

    vllm-v0.2     0.50 GiB   the CUDA context (v0.2.5 charges everything in use after the profile run; vLLM
                             v0.19.0's init snapshot on an H100 reads cuda_memory=0.51GiB before anything loads)
    vllm-v0.6.4   0.35 GiB   the CUDA context and allocations outside torch (vllm#10517's two RTX 3090 logs);
                             +1.0 GiB under TP for NCCL (v0.19.0: 1.53 GiB at TP 2 against 0.51 at TP 1)
    vllm-v0       0.20 GiB   allocations outside torch during the profile, the context excluded (vllm#12126:
                             0.16; vllm#14447: 0.20); 0.25 GiB under TP (vllm#13061, 2 x RTX 4090: 0.25)
    vllm-v0.8     0.75 GiB   all memory in use outside torch after the profile run: (total - free) - torch's
                             allocated bytes, after empty_cache (vllm/v1/worker/gpu_worker.py determine_available_
                             memory at 48cb2109b61676ebc0e7e76022a0be51a41a08b8, v0.8.5): what vllm-v1 measures
                             from its start-up snapshot (below) plus what that snapshot already held, vllm.py's
                             IN_USE_AT_SNAPSHOT (the CUDA context 0.5; with NCCL 1.5 under TP): 0.25 + 0.5, and
                             2.1 + 1.5 = 3.6 GiB under TP; not measured on a v0.8 log (none prints it)
    vllm-v1       0.25 GiB   the same (vLLM v0.19.0 H100 logs: 0.24 to 0.27 at TP 1); 2.1 GiB under TP: the
                             v0.19.0 H100-80GB logs (llm-d-planner, one NVSwitch node: 2.07 to 2.21 GiB at TP 2
                             and 4), applied to every V1 release and GPU. What it holds, by the sources: v0.11.2
                             and v0.19.0 take the snapshot after the distributed start (gpu_worker.py
                             init_device), so custom all-reduce's and symmetric memory's buffers lie before it, and
                             what NCCL allocates at its first collectives inside (NCCL >= 2.22 connects peers at
                             run time when cuMem is on: NCCL 2.26.2 init.cc runtimeConn); v0.10.1.1 snapshots
                             before the distributed start and sets NCCL_CUMEM_ENABLE=0 (env_override.py), so NCCL
                             connects at init and all of it is inside. NCCL's share is its channels x (LL 512 KiB
                             + LL128 4.69 MiB + NCCL_BUFFSIZE 4 MiB) a connected peer, on the GPU only with the
                             P2P transport (SHM and socket transports buffer in host memory: shm.cc, net_socket.cc
                             NCCL_PTR_HOST); the channel count is NCCL's topology search and the transport the
                             deployment's (one GPU a container, several nodes), neither in a GPU spec, so the
                             default is not split by GPU. NVLS (NVSwitch Hopper+ only, nvls.cc) needs more than
                             2 GPUs a communicator and holds 32 MiB a head on sm_90: small beside it

Under TP on GPUs without device links (GpuSpec.peer_transport pcie_p2p or host) the TP figures above, taken on
NVSwitch H100s (vllm-v0's on RTX 4090s), would count buffers that are not on the GPU. There the default is

    TP > 1 = min(the table's TP figure, TP-1 figure + NCCL_OFF_DEVICE_GIB + (pcie_p2p: PCIE_P2P_BUFFERS_GIB))

    NCCL_OFF_DEVICE_GIB 0.05   what NCCL's start adds on the GPU when its buffers are in host memory (the SHM
                               transport; NCCL user guide, NCCL_SHM_DISABLE): vLLM V0's non-torch figure, whose
                               baseline precedes NCCL's start, on GeForce parts under TP: 0.25 GiB at TP 2 on RTX
                               4090s (vllm#13061, the regular corpus's vllm-deepseek-r1-distill-qwen-14b-rtx4090-
                               tp2.log) and 0.20 at TP 4 on RTX 3090s (vllm#14447) against 0.16 to 0.20 at TP 1
                               (vllm#12126, vllm#14447): calibrated on the regular corpus, 0.25 - 0.20
    PCIE_P2P_BUFFERS_GIB 0.087 NCCL's P2P buffers over PCIe plus a custom all-reduce buffer: 2 communicators (the
                               framework's process group and the engine's own pynccl one) x 2 channels x 2 receiving
                               connections a channel (ring and tree) x 9.1875 MiB (LL 0.5 + LL128 4.6875 +
                               NCCL_BUFFSIZE 4) = 73.5 MiB, + 16 MiB (an 8 MiB custom all-reduce buffer and its
                               staging copy, enabled on two PCIe GPUs with peer access) = 89.5 MiB; a model, not a
                               measurement (no regular-corpus log on a PCIe-P2P part under TP); the channel count
                               (2: PCIe rings) is assumed

The min keeps every accounting whose TP figure holds no GPU-resident NCCL buffers as it was (vllm-v0.2's 0.50
charges no NCCL; vllm-v0's 0.25 is itself a GeForce figure). A GPU whose YAML gives no peer_transport keeps
the table's figure (device_link).

SGLang measures free memory after NCCL starts, so what is in use before then (the CUDA context, NCCL) lies
outside its fraction: 0.6 GiB at TP 1 (sglang#4760: an H100's 79.22 GiB less the 78.59 free before loading),
+1.0 GiB under TP (the NCCL figure above); --non-torch-gib overrides it.
"""

from __future__ import annotations

from fractions import Fraction

from ..errors import InputError
from ..specs import GpuSpec, ModelSpec
from ..capacity.shipped import as_shipped
from ..capacity.weight_split import dp_attention_splits, fuses_shared_expert_copies
from ..specs.weights import WeightComponent, mla_kv_b_parameters, weight_bytes
from ..units import GiB, MiB, WeightFormat
from .lora import lora_buffer_bytes, lora_defaults
from .marlin_fp8 import marlin_scale_bytes
from .mxfp4 import expert_padding
from .result import Role, Term
from .settings import model_dtype
from .vocab import RELEASE_RANGE, Accounting, Engine, in_span, label_release, span_newest
from ..vocab import PeerTransport

_NON_TORCH_GIB = {  # accounting: (TP 1, TP > 1)
    Accounting.vllm_v0_2: (0.50, 0.50),
    Accounting.vllm_v0_6_4: (0.35, 1.35),
    Accounting.vllm_v0: (0.20, 0.25),
    Accounting.vllm_v0_8: (0.75, 3.60),
    Accounting.vllm_v1: (0.25, 2.10),
    Accounting.sglang_v0_4: (0.60, 1.60),
    Accounting.sglang_v0_5: (0.60, 1.60),
}

#: The term names of memory other processes hold when the engine starts (--memory-in-use) and of the LoRA buffers.
OTHER_PROCESSES = "other_processes"
LORA = "lora_buffers"

_NON_TORCH_WHAT = {
    Engine.vllm: "non-torch memory",
    Engine.sglang: "in use before SGLang measures (CUDA context, NCCL)",
}


#: What NCCL's start adds on the GPU where its buffers are in host memory (module docstring; regular corpus).
NCCL_OFF_DEVICE_GIB = 0.05
#: NCCL's P2P buffers over PCIe and a custom all-reduce buffer, GiB (module docstring: a model, 2 channels assumed).
PCIE_P2P_BUFFERS_GIB = (2 * 2 * 2 * (0.5 + 4.6875 + 4) + 2 * 8) * MiB / GiB


def non_torch_default(accounting: Accounting, tensor_parallel: int, gpu: GpuSpec | None = None) -> tuple[int, str]:
    """The default non-torch memory (vLLM) or memory in use before start (SGLang), and a line saying so; under TP
    on a `gpu` without device links only the buffers that are on the GPU count (module docstring)."""
    tp1, tp_linked = _NON_TORCH_GIB[accounting]
    if tensor_parallel == 1:
        return int(tp1 * GiB), f"default for {accounting.value} TP 1 ({tp1:.2f} GiB; --non-torch-gib overrides)"
    transport = gpu.peer_transport if gpu is not None else None
    if transport in (None, PeerTransport.device_link):
        return int(tp_linked * GiB), (f"default for {accounting.value} under TP ({tp_linked:.2f} GiB, the NVSwitch "
                                      f"figure; --non-torch-gib overrides)")
    gib = on_gpu_under_tp(tp1, tp_linked, gpu)
    return int(gib * GiB), (f"default for {accounting.value} under TP on {gpu.name} ({transport.value}: "
                            f"{gib:.2f} GiB = min({tp_linked:.2f}, {tp1:.2f} + NCCL's start off the GPU "
                            f"{NCCL_OFF_DEVICE_GIB:.2f}"
                            + (f" + PCIe P2P buffers {PCIE_P2P_BUFFERS_GIB:.3f}" if transport is PeerTransport.pcie_p2p
                               else "") + "); --non-torch-gib overrides)")


def on_gpu_under_tp(tp1_gib: float, linked_gib: float, gpu: GpuSpec | None) -> float:
    """A figure under TP taken on NVSwitch GPUs (`linked_gib`; `tp1_gib` its TP-1 figure) as it stands on `gpu`:
    itself where the GPU has device links or its YAML names no transport, else min(linked, TP-1 + NCCL's start off
    the GPU + (pcie_p2p) the PCIe P2P buffers) (module docstring): only the buffers that are on the GPU count."""
    transport = gpu.peer_transport if gpu is not None else None
    if transport in (None, PeerTransport.device_link):
        return linked_gib
    own = tp1_gib + NCCL_OFF_DEVICE_GIB + (PCIE_P2P_BUFFERS_GIB if transport is PeerTransport.pcie_p2p else 0.0)
    return min(linked_gib, own)


#: vLLM V0 releases whose memory profile leaves the LoRA buffers out: load_model creates the LoRA manager (and its
#: buffers) after the DeviceMemoryProfiler block that measures the weights (vllm 0.7.3 wheel,
#: vllm/worker/model_runner.py:1109-1144), and worker.determine_num_available_blocks subtracts only those weights,
#: the profile's torch peak over its own start (allocated_bytes.all.peak, the buffers already allocated, cancel) and
#: the non-torch increase (torch's reserved memory, the buffers, excluded): vllm/utils.py memory_profiling and
#: MemorySnapshot at 0.7.3 (utils.py:1907-2010). vllm#14469 ("Make the deviceprofiler include LoRA memory", merged
#: 2025-03-08) moved create_lora_manager inside the profiler from v0.8.0 (vllm 0.8.0 wheel, worker/model_runner.py:
#: 1111-1145; the same at 0.9.2 and 0.10.0). From v0.6.5, where memory_profiling arrived (the vllm-v0 accounting's
#: first release).
VLLM_LORA_UNCOUNTED = ((0, 6, 5), (0, 7, 3))


def lora_counted(s) -> bool:
    """Whether vLLM's profile subtracts the LoRA buffers from its budget at `s`'s release (VLLM_LORA_UNCOUNTED; a
    label stands for its release, vocab.label_release); SGLang's always come off its pool."""
    return not (s.accounting.engine is Engine.vllm and not s.accounting.is_v1 and s.release is not None
                and in_span(s.release, VLLM_LORA_UNCOUNTED))


def lora_term(model: ModelSpec, s, engine: Engine):
    """The LoRA buffers (lora.py) as a term, or None without --enable-lora (`s`: settings.Resolved)."""
    if not s.enable_lora:
        return None
    slots, rank = lora_defaults(engine, s.max_loras, s.max_lora_rank)
    tp = s.tensor_parallel if engine is Engine.vllm else s.attention_tensor_parallel
    where = ("inside vLLM's weights figure (load_model)" if engine is Engine.vllm
             else "allocated after the weights, before SGLang sizes its pool")
    return Term(LORA, lora_buffer_bytes(model, tp, slots, rank, model_dtype(model)),
                f"LoRA buffers: {slots} slot(s) of rank {rank} for every linear layer, {where}", Role.used)


def check_in_use(s) -> None:
    """--memory-in-use must leave some of the CUDA-visible total (`s`: settings.Resolved)."""
    if s.memory_in_use_bytes >= s.cuda_visible_bytes:
        raise InputError(f"--memory-in-use {s.memory_in_use_bytes / GiB:.2f} GiB is the whole CUDA-visible total "
                         f"({s.cuda_visible_bytes / GiB:.2f} GiB, {s.cuda_visible_source}) or more: nothing is free")


def non_torch_name(engine: Engine) -> str:
    return _NON_TORCH_WHAT[engine]


def rotary_cache_bytes(model: ModelSpec) -> int:
    """One cos/sin cache: max_context_len x rotary dim (head_dim; MLA: the rope dims) in the model's dtype."""
    dims = [t.rotary_dim(model.heads) for t in model.layer_types.values()]
    return model.max_context_len * max(dims, default=0) * model_dtype(model).bytes


#: bitsandbytes' 4-bit formats (units.WeightFormat): what vLLM's bitsandbytes loader quantizes an unquantized
#: checkpoint to in flight whichever of them the quantization config asks for (vllm_in_flight).
BNB_4BIT = (WeightFormat.of("nf4"), WeightFormat.of("nf4_dq"), WeightFormat.of("fp4"), WeightFormat.of("fp4_dq"))
VLLM_IN_FLIGHT_BNB = WeightFormat.of("nf4_dq")


def vllm_in_flight(model: ModelSpec, weight_format, accounting: Accounting | None):
    """The format vLLM loads an unquantized checkpoint in under a bitsandbytes 4-bit `weight_format`: nf4 with
    double quantization, whatever type the config names. Its loader's _unquantized_generator calls
    quantize_4bit(loaded_weight, compress_statistics=True, quant_type="nf4") (vllm 0.7.3 wheel model_executor/
    model_loader/loader.py:1016-1019, 0.8.0 :1045-1048; bitsandbytes_loader.py 0.9.2 :385-388, 0.10.0 :387-391,
    0.11.2 :439-443); bnb_4bit_quant_type and bnb_4bit_use_double_quant are read for pre-quantized checkpoints only.
    A quantized checkpoint, another format or another engine: `weight_format` unchanged."""
    if (accounting is None or accounting.engine is not Engine.vllm or model.quantization
            or weight_format is None or WeightFormat.of(weight_format) not in BNB_4BIT):
        return weight_format
    return VLLM_IN_FLIGHT_BNB


def engine_weight_bytes(model: ModelSpec, tensor_parallel: int, weight_format=None, expert_parallel: int = 1,
                        attention_data_parallel: int = 1, stage=None, accounting: Accounting | None = None,
                        gpu: GpuSpec | None = None, release: tuple[int, ...] | None = None) -> tuple[int, str]:
    """Weights as an engine measures them on one GPU, and how they were counted; `weight_format` is what
    --quantization fp8 quantises an unquantised checkpoint's linear layers to at load (None: as shipped).

    With expert parallelism each GPU holds 1/EP of the routed experts (whole); under SGLang's DP attention each
    component is split as capacity.weight_split.dp_attention_splits says at the `release` (None: the accounting's
    newest), the one rule capacity.gpu_weight_bytes counts with too. `stage` (a capacity.stages.Stage) counts one
    pipeline stage's share of each component; every stage keeps a rotary cache. With the `accounting` and `gpu`
    the routed experts take the bytes the engine's kernels lay them out in (mxfp4.expert_padding: vLLM's mxfp4 MoE
    backends pad H and I by compute capability and release); SGLang's accounting adds its MLA absorbed copies
    (sglang_absorbed_bytes) and v0.4.6.x's cloned shared experts (weight_split.fuses_shared_expert_copies)."""
    weight_format = vllm_in_flight(model, as_shipped(model, weight_format), accounting)
    sglang = accounting is not None and accounting.engine is Engine.sglang
    release = layout_release(accounting, release)
    splits = dp_attention_splits(tensor_parallel, attention_data_parallel, release)
    fused = sglang and fuses_shared_expert_copies(model, gpu.compute_capability_version if gpu else None, release)
    if fused:
        splits[WeightComponent.shared_experts] = 1
    expert_split = Fraction(expert_parallel, tensor_parallel) if expert_parallel > 1 else 1
    layout, layout_src = (expert_padding(model, accounting, gpu, tensor_parallel, expert_parallel, weight_format)
                          if accounting is not None else (Fraction(1), ""))
    params = weight_bytes(model, weight_format, tensor_parallel, expert_split, splits=splits,
                          shares=stage.shares(model) if stage is not None else None, expert_layout=layout)
    rope = rotary_cache_bytes(model)
    layers = stage.layers_model(model) if stage is not None else model
    if sglang:
        absorbed = sglang_absorbed_bytes(layers, tensor_parallel // attention_data_parallel, weight_format, release)
    else:
        absorbed = vllm_absorbed_bytes(layers, tensor_parallel, weight_format, accounting, release)
    split = f" / {tensor_parallel}" if tensor_parallel > 1 else ""
    split += f", experts / EP {expert_parallel}" if expert_parallel > 1 else ""
    if attention_data_parallel > 1:
        ways = ", ".join(f"{c} / {w}" for c, w in splits.items() if c is not WeightComponent.shared_experts)
        split += f", DP attention {attention_data_parallel}: {ways} (SGLang's layout)"
    split += ", the shared expert whole on every GPU (v0.4.6.x's fused copies)" if fused else ""
    split += f", pipeline {stage.describe()}" if stage is not None and stage.pipeline_parallel > 1 else ""
    split += f"; {layout_src}" if layout_src else ""
    names = "w_kc / w_vc" if sglang else "W_UK_T / W_UV"
    copies = f", plus MLA's absorbed {names} ({absorbed / GiB:.3f} GiB)" if absorbed else ""
    marlin = 0 if sglang else marlin_scale_bytes(layers, tensor_parallel, weight_format, gpu, accounting, release)
    copies += (f", plus Marlin's group scales of the block-fp8 layers ({marlin / GiB:.3f} GiB; marlin_fp8.py)"
               if marlin else "")
    return params + rope + absorbed + marlin, (
        f"modelled: {model.total_parameters / 1e9:.2f} B parameters "
        f"{'as shipped' if weight_format is None else 'linear layers in ' + str(weight_format)}{split}, "
        f"plus the rotary cache ({rope / GiB:.3f} GiB){copies}")


def layout_release(accounting: Accounting | None, release: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The SGLang release whose weight layout is counted: `release`, else the one an SGLang accounting's label stands
    for (vocab.label_release: sglang-v0.4's v0.4.5, sglang-v0.5's v0.5.10, as settings.resolve computes a label's
    every term); None (weight_split's newest read) for another engine or none. engine_weight_bytes and the step
    (rooflab.step.engine_kernels) take it from here."""
    if release is not None or accounting is None or accounting.engine is not Engine.sglang:
        return release
    return label_release(accounting)


def newest_release(accounting: Accounting) -> tuple[int, ...] | None:
    """The newest release `accounting` covers (vocab.RELEASE_RANGE; a last of fewer numbers covers its whole
    series, so it is padded high), None where the table gives none."""
    span = RELEASE_RANGE.get(accounting)
    return span_newest(span) if span is not None else None


def sglang_absorbed_bytes(model: ModelSpec, attention_tp: int, weight_format=None,
                          release: tuple[int, ...] | None = None) -> int:
    """SGLang's absorbed MLA weights on one GPU: post_load_weights splits each layer's kv_b_proj into contiguous
    copies w_kc [h, d_nope, d_c] and w_vc [h, d_c, d_v], kept beside kv_b_proj itself, one rank's heads (attention
    TP):

        bytes = sum over MLA layers of d_c (h / attention_tp) (d_nope + d_v) x b

    b = 1 where kv_b is fp8 and stays so: every release for per-tensor or per-channel fp8 (channel_quant_to_
    tensor_quant), and for 128 x 128 block fp8 (DeepSeek-V3, R1) before v0.4.7 (block_quant_to_tensor_quant;
    v0.4.6 on Hopper keeps the block layout for DeepGEMM's bmm, also fp8); from v0.4.7 block fp8 is dequantised
    to bf16 (block_quant_dequant, unless SGL_USE_DEEPGEMM_BMM=1: not modelled), b = 2. Any other format (bf16,
    AWQ and int8 dequantised) is kept in the model's dtype. Read from python/sglang/srt/models/deepseek_v2.py
    (v0.4.3.post2: load_weights; v0.4.4 - v0.5.9: post_load_weights; v0.5.10: models/deepseek_common/
    deepseek_weight_loader.py); the copies are made inside load_model, so SGLang's 'mem usage' counts them.
    DeepSeek-R1 at TP 16, v0.4.3.post2: 61 x 512 x 8 x 256 x 1 = 63,963,136 bytes (0.060 GiB). None: the newest
    read (v0.5.10)."""
    fmt = model.weight_format("attention", weight_format)
    newer = release is None or tuple(release) + (0,) * (3 - len(release)) >= (0, 4, 7)
    fp8 = fmt in (WeightFormat.fp8, WeightFormat.fp8_block)
    width = 1 if fp8 and not (fmt is WeightFormat.fp8_block and newer) else model_dtype(model).bytes
    return rank_kv_b_parameters(model, attention_tp) * width


#: The vLLM releases whose MLA backends keep a 16-bit copy of each rank's quantised kv_b_proj (first, last).
VLLM_ABSORBED_RELEASES = ((0, 8, 0), (0, 29))


def vllm_absorbed_bytes(model: ModelSpec, tensor_parallel: int, weight_format=None,
                        accounting: Accounting | None = None, release: tuple[int, ...] | None = None) -> int:
    """vLLM's absorbed MLA weights on one GPU: MLACommonImpl.process_weights_after_loading dequantises a quantised
    kv_b_proj (its quant method applied to an identity of d_c rows in the activations' dtype) and keeps the
    result, whose views W_UV [h, d_c, d_v] and W_UK_T [h, d_nope, d_c] the decode's bmm's read, beside kv_b_proj
    itself ("we just store fp16/bf16 copies", the source says); an unquantised kv_b_proj is viewed, not copied:

        bytes = sum over MLA layers of d_c (h / tp) (d_nope + d_v) x b,  b the activations' bytes

    where kv_b's format is quantised (model.weight_format('attention')), else 0. From v0.8.0 in V0 and V1 alike
    (vllm v0.8.0, v0.8.4 and v0.10.2 vllm/attention/backends/mla/common.py and vllm/v1/attention/backends/mla/
    common.py), to v0.29.x (VLLM_ABSORBED_RELEASES; v0.20.2, v0.24.0 and v0.29.0 (replace_parameter W_UV, W_UK_T)
    vllm/model_executor/layers/attention/mla_attention.py,
    whose get_and_maybe_dequant_weights in quantization/utils/quant_utils.py returns an unquantised weight .to()
    its own dtype, uncopied); made inside load_model, so 'Model loading took' counts them.
    Not modelled: v0.7.x's absorption into q_proj and o_proj (W_Q_UK, W_UV_O: vllm v0.7.2 / v0.7.3
    vllm/attention/backends/mla/utils.py), ROCm AITER's fp8 copies (is_rocm_aiter_fp8bmm_enabled, v0.10.2), and
    the transient identity product. DeepSeek-R1 at TP 16: 61 x 512 x 8 x 256 x 2 = 127,926,272 bytes (0.119 GiB).
    `release` None: the accounting's newest."""
    if accounting is None or accounting.engine is not Engine.vllm or not model.weight_format(
            "attention", weight_format).is_quantized:
        return 0
    at = tuple(release) if release is not None else newest_release(accounting)
    if at is None or not in_span(at, VLLM_ABSORBED_RELEASES):
        return 0
    return rank_kv_b_parameters(model, tensor_parallel) * model_dtype(model).bytes


def rank_kv_b_parameters(model: ModelSpec, attention_tp: int) -> int:
    """One GPU's share of every MLA layer's kv_b up-projection, its heads split `attention_tp` ways; 0 without MLA."""
    return sum(count * mla_kv_b_parameters(layer, model.heads) // attention_tp
               for _, layer, count in model.layer_walk())


__all__ = ["BNB_4BIT", "LORA", "VLLM_IN_FLIGHT_BNB", "VLLM_LORA_UNCOUNTED", "lora_counted", "NCCL_OFF_DEVICE_GIB", "PCIE_P2P_BUFFERS_GIB", "OTHER_PROCESSES", "check_in_use", "lora_term", "engine_weight_bytes", "layout_release", "newest_release", "non_torch_default", "non_torch_name", "on_gpu_under_tp", "rotary_cache_bytes",
           "rank_kv_b_parameters", "sglang_absorbed_bytes", "vllm_absorbed_bytes", "VLLM_ABSORBED_RELEASES"]
