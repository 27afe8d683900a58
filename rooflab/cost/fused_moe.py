"""The tiles of vLLM's and SGLang's Triton fused_moe kernel over block-fp8 experts: the programs one launch runs.

The kernel (vLLM 0.7.3 vllm/model_executor/layers/fused_moe/fused_moe.py fused_moe_kernel; SGLang 0.4.3.post2
sglang/srt/layers/moe/fused_moe_triton/fused_moe.py, the same algorithm) sorts the token-expert pairs by expert,
pads each expert's run to BLOCK_M (moe_align_block_size) and runs one program a (BLOCK_M pairs of one expert,
BLOCK_N output columns) tile; programs past the padded total return at once. A launch's live programs:

    tiles = sum over touched experts of ceil(P_e / BLOCK_M) x ceil(n / BLOCK_N)
          ~ G ceil(P / (G BLOCK_M)) ceil(n / BLOCK_N)       (P pairs spread evenly over the G touched experts)

BLOCK_M and BLOCK_N: the tuned config file both engines shipped for DeepSeek-V3's experts at TP 8 on the H200
(E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json, the same values in vLLM 0.7.3's
and SGLang 0.4.3.post2's wheels on PyPI), keyed by the step's tokens M; the engine takes the key nearest M
(try_get_optimal_moe_config). The same config serves the gate/up and the down GEMM.
"""

from __future__ import annotations

import math

#: The shipped H200 file's (BLOCK_SIZE_M, BLOCK_SIZE_N) at each key M (tokens a step).
SHIPPED_H200_TILES = {1: (16, 64), 2: (16, 128), 4: (64, 64), 8: (64, 128), 16: (16, 256), 24: (64, 128),
                      32: (64, 128), 48: (64, 128), 64: (64, 128), 96: (64, 128), 128: (64, 128), 256: (64, 128),
                      512: (64, 128), 1024: (64, 128), 1536: (64, 128), 2048: (64, 128), 3072: (128, 64),
                      4096: (64, 128)}


def shipped_tile(tokens: float) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N) the engine picks for a step of `tokens` tokens: the key nearest it (the smaller on a tie,
    as min() over the file's ascending keys gives)."""
    key = min(SHIPPED_H200_TILES, key=lambda m: abs(m - tokens))
    return SHIPPED_H200_TILES[key]


def fused_tiles(tokens: float, pairs: float, touched: float, n: int) -> float:
    """The live programs of one fused_moe launch: G ceil(P / (G BLOCK_M)) ceil(n / BLOCK_N) (module docstring)."""
    if pairs <= 0 or touched <= 0:
        return 0.0
    block_m, block_n = shipped_tile(tokens)
    return touched * math.ceil(pairs / (touched * block_m)) * math.ceil(n / block_n)


__all__ = ["SHIPPED_H200_TILES", "fused_tiles", "shipped_tile"]
