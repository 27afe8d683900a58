"""Flash attention forward on Hopper's warpgroup MMA (wgmma, sm_90a), head dim 128.

Same contract as attention.flash_attention (which dispatches here with impl="hopper"); the
kernels are flash_fwd_hopper_ws.cu (warp-specialized, the default) and flash_fwd_hopper.cu (the
plain form), with their helpers in hopper.cuh; wgmma_probe.cu is a layout test aid. Needs compute capability 9.0 exactly: sm_90a code runs on the
H100 / H200 and nowhere else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._runtime import LOG2E, MASK_NONE, NULL, ceil_div, compute_capability, ctype, kernel, launch

#: Variant by causal: (NWG, BN, PIPE) for flash_fwd_hopper (warpgroups a CTA, 64 query rows each;
#: keys a shared-memory tile; whether tile j's softmax overlaps tile j - 1's P V), or
#: (2, BN, False, NST) for the warp-specialized flash_fwd_hopper_ws (producer warpgroup, NST-stage
#: mbarrier ring, pingpong consumers). Fastest on the H200 at T 8192, 32 / 8 heads, fp16
#: (KERNELS.md, run 2): (2, 128, False, 2) at 562 / 536 TFLOP/s non-causal / causal, against
#: 480 / 460 for the best of the others.
HOPPER_VARIANTS = {False: (2, 128, False, 2), True: (2, 128, False, 2)}
HOPPER_HEAD_DIMS = (128,)
HOPPER_COMPUTE_CAPABILITY = 90


def hopper_supported(cupy: Any, head_dim: int) -> bool:
    """True where the wgmma kernel runs: an sm_90 device and a head dim it was built for."""
    return compute_capability(cupy) == HOPPER_COMPUTE_CAPABILITY and head_dim in HOPPER_HEAD_DIMS


def hopper_smem_bytes(variant: tuple) -> int:
    """Q tile, K and V stages (all [rows x 128] 16-bit), 1 KiB to align to 1024 B, the ring's mbarriers.

    variant (NWG, BN, PIPE): two K stages, two V stages (three if PIPE); (NWG, BN, PIPE, NST),
    the warp-specialized kernel: NST stages of each and 2 NST mbarriers.
    """
    row_bytes = 128 * 2
    nwg, bn, pipe, nst = (*variant, 0) if len(variant) == 3 else variant
    if nst:
        return 64 * nwg * row_bytes + 2 * nst * bn * row_bytes + 1024 + 16 * nst
    v_stages = 3 if pipe else 2
    return 64 * nwg * row_bytes + (2 + v_stages) * bn * row_bytes + 1024


def hopper_name(ct: str, variant: tuple, mask: int, v_swap: int = 0) -> str:
    """Kernel name expression: flash_fwd_hopper for (NWG, BN, PIPE), flash_fwd_hopper_ws for
    (2, BN, PIPE, NST) (two consumer warpgroups, a producer warpgroup, an NST-stage ring; PIPE false).
    mask: _runtime.MASK_NONE / MASK_CAUSAL / MASK_LOCAL (a bool is read as causal or not)."""
    c = int(mask)
    if len(variant) == 4:
        nwg, bn, pipe, nst = variant
        if nwg != 2:
            raise ValueError("the warp-specialized kernel has two consumer warpgroups")
        return f"flash_fwd_hopper_ws<{ct}, {bn}, {nst}, {'true' if pipe else 'false'}, {c}>"
    nwg, bn, pipe = variant
    return f"flash_fwd_hopper<{ct}, {nwg}, {bn}, {'true' if pipe else 'false'}, {c}, {v_swap}>"


def hopper_file(variant: tuple) -> str:
    """The source file of a variant: the warp-specialized kernel for (2, BN, PIPE, NST), else the plain one."""
    return "flash_fwd_hopper_ws.cu" if len(variant) == 4 else "flash_fwd_hopper.cu"


def launch_flash_hopper(q: Any, k: Any, v: Any, o: Any, lse: Any, mask: int, scale: float,
                        variant: tuple | None = None, v_swap: int = 0, extra: tuple | None = None) -> None:
    """Launch on checked arrays (attention.flash_attention does the checking).

    mask: MASK_NONE / MASK_CAUSAL / MASK_LOCAL (True / False read as causal or not); extra: the
    kernel's (sinks pointer, window, chunk) arguments, default no sinks and no window or chunk.
    """
    batch, heads, q_len, _ = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    mask = int(mask)
    variant = tuple(variant) if variant is not None else HOPPER_VARIANTS[mask != MASK_NONE]
    if extra is None:
        extra = (NULL, np.int32(0), np.int32(0))
    nwg = variant[0]
    threads = 128 * nwg + (128 if len(variant) == 4 else 0)    # + the producer warpgroup
    kern = kernel(hopper_file(variant), hopper_name(ctype(q), variant, mask, v_swap))
    launch(kern, (ceil_div(q_len, 64 * nwg), heads, batch), (threads, 1, 1),
           (q, k, v, o, NULL if lse is None else lse, np.int32(q_len), np.int32(kv_len),
            np.int32(heads), np.int32(heads // kv_heads), np.float32(scale * LOG2E), *extra),
           hopper_smem_bytes(variant))


def wgmma_probe(cupy: Any, a: Any, bk: Any, bv: Any, v_swap: int = 0) -> tuple[Any, Any]:
    """Test aid for the shared-memory layouts: (a bk^T, a bv) in fp32 through the kernel's two wgmma paths.

    a [64, 128], bk [128, 128], bv [128, 128]: C-contiguous fp16 or bf16 CuPy arrays.
    """
    c1 = cupy.empty((64, 128), dtype=cupy.float32)
    c2 = cupy.empty((64, 128), dtype=cupy.float32)
    kern = kernel("wgmma_probe.cu", f"wgmma_probe<{ctype(a)}, {v_swap}>")
    launch(kern, (1, 1, 1), (128, 1, 1), (a, bk, bv, c1, c2), (64 + 2 * 128) * 256 + 1024)
    return c1, c2
