"""Flash attention forward on Hopper's warpgroup MMA (wgmma, sm_90a), head dim 128.

Same contract as attention.flash_attention (which dispatches here with impl="hopper"); the
kernel is flash_fwd_hopper.cu. Needs compute capability 9.0 exactly: sm_90a code runs on the
H100 / H200 and nowhere else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._runtime import LOG2E, NULL, ceil_div, compute_capability, ctype, kernel, launch

#: (NWG, BN, PIPE) by causal: warpgroups a CTA (64 query rows each), keys a shared-memory tile, and
#: whether tile j's softmax overlaps tile j - 1's P V on the tensor cores. Fastest on the H200 at
#: T 8192, 32 / 8 heads (KERNELS.md, run 1): (2, 128, no) 490 TFLOP/s non-causal, (3, 128, no)
#: 460 causal; PIPE was 1-2% slower.
HOPPER_VARIANTS = {False: (2, 128, False), True: (3, 128, False)}
HOPPER_HEAD_DIMS = (128,)
HOPPER_COMPUTE_CAPABILITY = 90


def hopper_supported(cupy: Any, head_dim: int) -> bool:
    """True where the wgmma kernel runs: an sm_90 device and a head dim it was built for."""
    return compute_capability(cupy) == HOPPER_COMPUTE_CAPABILITY and head_dim in HOPPER_HEAD_DIMS


def hopper_smem_bytes(nwg: int, bn: int, pipe: bool) -> int:
    """Q tile, two K stages, two or three V stages (all [rows x 128] 16-bit), and 1 KiB to align to 1024 B."""
    row_bytes = 128 * 2
    v_stages = 3 if pipe else 2
    return 64 * nwg * row_bytes + (2 + v_stages) * bn * row_bytes + 1024


def hopper_name(ct: str, variant: tuple[int, int, bool], causal: bool, v_swap: int = 0) -> str:
    nwg, bn, pipe = variant
    return (f"flash_fwd_hopper<{ct}, {nwg}, {bn}, {'true' if pipe else 'false'}, "
            f"{'true' if causal else 'false'}, {v_swap}>")


def launch_flash_hopper(q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool, scale: float,
                        variant: tuple[int, int, bool] | None = None, v_swap: int = 0) -> None:
    """Launch on checked arrays (attention.flash_attention does the checking)."""
    batch, heads, q_len, _ = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    nwg, bn, pipe = variant if variant is not None else HOPPER_VARIANTS[bool(causal)]
    kern = kernel("flash_fwd_hopper.cu", hopper_name(ctype(q), (nwg, bn, pipe), causal, v_swap))
    launch(kern, (ceil_div(q_len, 64 * nwg), heads, batch), (128 * nwg, 1, 1),
           (q, k, v, o, NULL if lse is None else lse, np.int32(q_len), np.int32(kv_len),
            np.int32(heads), np.int32(heads // kv_heads), np.float32(scale * LOG2E)),
           hopper_smem_bytes(nwg, bn, pipe))


def wgmma_probe(cupy: Any, a: Any, bk: Any, bv: Any, v_swap: int = 0) -> tuple[Any, Any]:
    """Test aid for the shared-memory layouts: (a bk^T, a bv) in fp32 through the kernel's two wgmma paths.

    a [64, 128], bk [128, 128], bv [128, 128]: C-contiguous fp16 or bf16 CuPy arrays.
    """
    c1 = cupy.empty((64, 128), dtype=cupy.float32)
    c2 = cupy.empty((64, 128), dtype=cupy.float32)
    kern = kernel("flash_fwd_hopper.cu", f"wgmma_probe<{ctype(a)}, {v_swap}>")
    launch(kern, (1, 1, 1), (128, 1, 1), (a, bk, bv, c1, c2), (64 + 2 * 128) * 256 + 1024)
    return c1, c2
