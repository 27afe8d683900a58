"""Compile the common kernel instantiations at once, in parallel threads (NVRTC releases the GIL).

Each instantiation takes NVRTC a second or two; a test session or benchmark needs dozens,
so compiling them together up front saves most of a minute of device time.
"""

from __future__ import annotations

from typing import Iterable

from ._runtime import CTYPES, compile_all
from .attention import FLASH_VARIANTS
from .decode import PAGED_STAGES, PAGED_WARPS

_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
          "float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


def instantiations(dtypes: Iterable[str] = ("fp16", "bf16"), head_dims: Iterable[int] = (64, 128),
                   flash_variants: Iterable[tuple[int, int, int]] = ()) -> list[tuple[str, str]]:
    """(file, name expression) pairs for the launchers' default configurations."""
    out: list[tuple[str, str]] = []
    half = [CTYPES[_NAMES[d]] for d in dtypes if _NAMES[d] != "float32"]
    for ct in half:
        for d in head_dims:
            for variant in [FLASH_VARIANTS[d], *flash_variants]:
                mt, nw, kn = variant
                for causal in ("false", "true"):
                    out.append(("flash_fwd.cu", f"flash_fwd<{ct}, {d}, {mt}, {nw}, {kn}, {causal}>"))
            for mt in (1, 2):
                for split in ("false", "true"):
                    out.append(("paged_decode.cu",
                                f"paged_decode<{ct}, {d}, {mt}, {PAGED_WARPS}, {PAGED_STAGES}, {split}>"))
        out.append(("merge_partials.cu", f"merge_partials<{ct}, 8>"))
        out.append(("merge_states.cu", f"merge_states<{ct}, 8, 1>"))
        out.append(("softmax_rows.cu", f"softmax_rows<{ct}, 8, 4, 0>"))
        out.append(("softmax_rows.cu", f"softmax_rows<{ct}, 8, 4, 4>"))
    out.append(("merge_partials.cu", "merge_partials<float, 8>"))
    out.append(("merge_states.cu", "merge_states<float, 4, 1>"))
    out.append(("softmax_rows.cu", "softmax_rows<float, 4, 4, 0>"))
    out.append(("softmax_rows.cu", "softmax_rows<float, 4, 4, 2>"))
    return out


def precompile(dtypes: Iterable[str] = ("fp16", "bf16"), head_dims: Iterable[int] = (64, 128),
               flash_variants: Iterable[tuple[int, int, int]] = (), workers: int = 16) -> int:
    """Compile the default instantiations for these dtypes and head dims; returns how many."""
    return compile_all(instantiations(dtypes, head_dims, flash_variants), workers)
