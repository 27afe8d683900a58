"""A projection or MLP GEMM: y [m, n] = x [m, k] W^T, W [n, k] (torch.nn.functional.linear, cuBLAS).

Per launch, operands in one dtype of b bytes:

    FLOPs   2 m n k                      one multiply-add per (row, output, input)
    bytes   (n k + m k + m n) b          the weight once, the activations in and out once

At decode (m = batch, a few to a few hundred rows) the intensity is about m FLOP/byte, far left
of the ridge (206 on the H200 in fp16): the GEMM is GEMV-shaped and streams its weight; at
prefill (m = tokens) it is compute-bound. Llama-3-8B's MLP down projection at m = 1:
2 x 4096 x 14336 = 117 MFLOP over 117 MB, 1.0 FLOP/byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..units import DType
from .common import ArrayLike, KernelCost, SingleKernel, as_array, real_number


@dataclass(frozen=True)
class GemmCost(SingleKernel):
    """One GEMM launch; `weight_bytes` is the part of its bytes that is the weight (read once)."""

    kernel: KernelCost
    weight_bytes: np.ndarray
    variant: str = "gemm"                 # not an attention Variant: step.py's rows name it
    n: object = None                      # the weight's [n, k] (which kernels take the shape: step.dense_block_fp8)
    k: object = None


#: Largest GEMM dimension (2**53, where float64 stops holding every whole number): 2 m n k stays finite (10**300
#: each gave infinite FLOPs).
MAX_GEMM_DIM = float(1 << 53)


def gemm(m: ArrayLike, n: ArrayLike, k: ArrayLike, dtype: DType = DType.bf16, name: str = "gemm",
         weight_bits: float | None = None, groups: ArrayLike = 1) -> GemmCost:
    """y [m, n] = x [m, k] W^T: 2 m n k FLOPs, (G n k b_w + (m k + m n) b) bytes.

    b_w: the weight's bytes per element (`weight_bits` / 8, default the activations' b). `groups` G > 1 is a
    grouped GEMM (a MoE layer's experts): G weights of [n, k] each read once, the m rows spread over them.
    """
    m, n, k = (as_array(v, f"GEMM {what}", maximum=MAX_GEMM_DIM) for v, what in ((m, "m"), (n, "n"), (k, "k")))
    g = as_array(groups, "GEMM groups", minimum=0, maximum=MAX_GEMM_DIM, lo_open=True)   # G > 0: 0 was no weights
    dtype = DType.of(dtype)
    bits = dtype.bytes * 8 if weight_bits is None else real_number(weight_bits, "weight_bits", 0, 64, lo_open=True)
    weight = g * n * k * bits / 8                                # G x W [n, k], read once
    acts = (m * k + m * n) * dtype.bytes                         # x [m, k] in, y [m, n] out
    return GemmCost(KernelCost(name, 2 * m * n * k, weight + acts), weight, n=n, k=k)


__all__ = ["GemmCost", "gemm"]
