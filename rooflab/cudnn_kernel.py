"""The launch cuDNN's fused attention makes on the H200, for the model that predicts SDPA's cuDNN back end (issue 27).

What the H200 showed, each from a run of our own (measurements/shapes/; the fit is rooflab/fit/cudnn_fit.py):

- the tile: the profiler names one kernel a call, `cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7
  _64x128x{64,128,192,256}_4x1x1_cga1x1x1` (h200-cudnn-kernels.csv): 64 query rows by 128 keys at every head dim
  (`CUDNN_TILE`), the head dim padded to the kernel's 64, 128, 192 or 256 (`cudnn_head_dim`: d 96 runs the 128
  kernel);
- two units an SM (`CUDNN_UNITS_PER_SM`): with batch 1 at T 4096 the non-causal time steps every 256 query tiles,
  the 264 slots of 132 SMs x 2 (h200-cudnn-schedule.csv);
- the order: a causal launch's query tiles are issued in row order, lightest first (`causal_fraction`), not
  heaviest first as cost/flash.py assumes.

`kernel_cost` is where rooflab.predict prices a fit of this kernel: the workload a FlashCost records (its heads,
batch, dtype, mask), priced as cuDNN's launch. `KERNEL_MODELS` names, for an implementation, the GPU YAML entry of the
model of the kernel it launches, which predicts it in place of the campaigns' fit of the implementation (kept in the
YAML: its back-to-back overhead is the model's c0).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .cost.common import Cost, check_cost, check_flag, check_heads, check_spec, whole_array, whole_number
from .cost.flash import FlashCost, FlashTile, flash_prefill
from .cost.parallel import MAX_REPEATS, schedule_fraction
from .errors import InputError, shown
from .limits import MAX_BATCH, MAX_TOKENS
from .specs import AttentionHeads, GpuSpec
from .specs.gpu import MAX_SMS
from .specs.heads import MAX_HEAD_DIM
from .units import DType
from .vocab import Kernel

#: The fitted entry of cuDNN's kernel model (rooflab.fit.cudnn_fit; PredictedTime.impl shows the implementation).
CUDNN_SHAPES_IMPL = "torch_cudnn_shapes"
#: (kernel, implementation) -> the GPU YAML entry (its impl) that models the kernel the implementation launches.
KERNEL_MODELS: dict[tuple[Kernel, str], str] = {(Kernel.flash, "torch_cudnn"): CUDNN_SHAPES_IMPL}
#: cuDNN's tile on the H200, query rows x keys (its kernel names' 64x128xD).
CUDNN_TILE = FlashTile(64, 128)
#: The head dims cuDNN's kernels are built for: a row's head dim runs on the next one up.
CUDNN_HEAD_DIMS = (64, 128, 192, 256)
#: Units per SM (the schedule run's steps).
CUDNN_UNITS_PER_SM = 2.0


def _impl_id(value: object, what: str) -> str:
    """`value` if it can be an implementation id as a fitted entry names it (rooflab, torch_cudnn_shapes, ...): a
    printable str, not empty, without surrounding spaces. The ids are an open set (a measurement file names its own;
    transfer.why_not answers for one it does not know), so that is all that is checked."""
    if not isinstance(value, str) or not value or value != value.strip() or not value.isprintable():
        raise InputError(f"{what} must be an implementation id (a fitted entry's impl: rooflab, torch_cudnn, ...), "
                         f"got {shown(value)}")
    return value


def modelled_impl(impl: str) -> str:
    """The implementation a kernel model's entry predicts (KERNEL_MODELS), else `impl` itself."""
    impl = _impl_id(impl, "impl")
    return next((i for (_, i), m in KERNEL_MODELS.items() if m == impl), impl)


def cudnn_head_dim(head_dim: int) -> int:
    """The head dim of the cuDNN kernel a row runs on (the next of CUDNN_HEAD_DIMS up); above 256, its own."""
    head_dim = whole_number(head_dim, "head_dim", 1, MAX_HEAD_DIM)
    return next((d for d in CUDNN_HEAD_DIMS if d >= head_dim), head_dim)


def causal_fraction(seq_len: int, units: int, num_sms: int, tile: FlashTile = CUDNN_TILE,
                    units_per_sm: float = CUDNN_UNITS_PER_SM) -> float:
    """The busy share of a causal launch of `units` (sequence, head) pairs whose query tiles are issued in row order:
    tile i of B_r rows visits the key tiles up to its last row's, (i B_r + B_r - 1) // B_c + 1 of them."""
    seq_len = whole_number(seq_len, "seq_len", 1, MAX_TOKENS)
    units = whole_number(units, "units ((sequence, head) pairs)", 1, MAX_REPEATS)
    num_sms = whole_number(num_sms, "num_sms (SMs of the GPU)", 1, MAX_SMS)
    tile = check_spec(tile, FlashTile, "tile")
    q0 = np.arange(-(-seq_len // tile.block_q), dtype=np.int64) * tile.block_q
    per_head = (np.minimum(q0 + tile.block_q, seq_len) - 1) // tile.block_kv + 1
    return schedule_fraction(per_head * tile.block_kv, num_sms, units_per_sm, repeats=units)


def cudnn_cost(heads: AttentionHeads, seq_len, batch, dtype: DType, causal: bool, gpu: GpuSpec,
               write_lse: bool = True, sinks: bool = False) -> FlashCost:
    """The flash cost of one cuDNN launch on `gpu`: cuDNN's tile, its padded head dim, two units an SM, causal query
    tiles in row order (one sequence length and batch, or arrays of them element by element).

    A causal launch's schedule (causal_fraction) counts the query tiles of whole sequences, so its lengths and batch
    are whole numbers (InputError otherwise); a non-causal one is flash_prefill's cost alone, which takes a mean
    length as it does elsewhere (a ring's block of seq_len / world_size tokens, cost/ring.py)."""
    heads, gpu = check_heads(heads, "cudnn_cost"), check_spec(gpu, GpuSpec, "gpu")
    causal = check_flag(causal, "causal")
    if causal:
        whole_array(seq_len, "seq_len", MAX_TOKENS), whole_array(batch, "batch", MAX_BATCH)
    d = cudnn_head_dim(heads.head_dim)
    padded = AttentionHeads(heads.num_qo_heads, heads.num_kv_heads, d, None if heads.v_head_dim is None else d)
    cost = flash_prefill(padded, seq_len, batch, dtype, causal, tile=CUDNN_TILE, gpu=gpu, num_sms=gpu.num_sms,
                         units_per_sm=CUDNN_UNITS_PER_SM, write_lse=write_lse, sinks=sinks)
    if not causal or gpu.num_sms is None:
        return cost
    t, b = np.broadcast_arrays(np.asarray(seq_len), np.asarray(batch))
    f = np.vectorize(lambda ti, bi: causal_fraction(int(ti), int(bi) * heads.num_qo_heads, gpu.num_sms),
                     otypes=[np.float64])(t, b)     # otypes given: not computed once more to find the type
    return replace(cost, kernel=replace(cost.kernel, parallel_fraction=np.float64(f) if not f.shape else f))


def kernel_cost(model_impl: str, cost: Cost, gpu: GpuSpec) -> Cost:
    """`cost` as the kernel the fitted entry `model_impl` models launches it on `gpu`: a full-attention FlashCost's
    workload as cuDNN's launch for CUDNN_SHAPES_IMPL; any other entry's cost as it is."""
    model_impl, cost = _impl_id(model_impl, "model_impl"), check_cost(cost)
    gpu = check_spec(gpu, GpuSpec, "gpu")
    if model_impl != CUDNN_SHAPES_IMPL:
        return cost
    if not isinstance(cost, FlashCost) or cost.heads is None or not cost.visibility.is_full:
        raise InputError(f"{model_impl} prices a full-attention flash prefill with its workload recorded "
                         f"(cost.flash.flash_prefill), got {type(cost).__name__}")
    return cudnn_cost(cost.heads, cost.seq_len, cost.batch, cost.dtype, cost.causal, gpu, cost.write_lse, cost.sinks)


__all__ = ["CUDNN_HEAD_DIMS", "CUDNN_SHAPES_IMPL", "CUDNN_TILE", "CUDNN_UNITS_PER_SM", "KERNEL_MODELS",
           "causal_fraction", "cudnn_cost", "cudnn_head_dim", "kernel_cost", "modelled_impl"]
