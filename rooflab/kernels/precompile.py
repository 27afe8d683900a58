"""Compile the common kernel instantiations at once, in parallel threads (NVRTC releases the GIL).

Each instantiation takes NVRTC a second or two; a test session or benchmark needs dozens,
so compiling them together up front saves most of a minute of device time.
"""

from __future__ import annotations

from typing import Iterable

from ._runtime import CTYPES, MASK_CAUSAL, MASK_LOCAL, MASK_NONE, compile_all, compute_capability, cupy_module
from .attention import FLASH_VARIANTS
from .flash_hopper import HOPPER_COMPUTE_CAPABILITY, HOPPER_VARIANTS, hopper_file, hopper_name
from .mla import mla_instantiations
from .decode import FP8_CTYPE, FP8_MIN_COMPUTE_CAPABILITY, PAGED_STAGES, PAGED_STAGES_FP8, PAGED_WARPS

_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
          "float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


def instantiations(dtypes: Iterable[str] = ("fp16", "bf16"), head_dims: Iterable[int] = (64, 128),
                   flash_variants: Iterable[tuple[int, int, int]] = (), fp8_kv: bool = True,
                   hopper_variants: Iterable[tuple[int, int, bool]] | None = None,
                   mla_dims: Iterable[int] = (576,)) -> list[tuple[str, str]]:
    """(file, name expression) pairs for the launchers' default configurations (fp8 KV caches too if fp8_kv;
    the wgmma flash kernel's variants if hopper_variants is given, for d 128; MLA decode for the 576 latent)."""
    out: list[tuple[str, str]] = []
    half = [CTYPES[_NAMES[d]] for d in dtypes if _NAMES[d] != "float32"]
    for ct in half:
        if hopper_variants is not None and 128 in head_dims:
            for causal in (False, True):
                for variant in dict.fromkeys([HOPPER_VARIANTS[causal], *hopper_variants]):
                    out.append((hopper_file(variant), hopper_name(ct, variant, int(causal))))
            out.append((hopper_file(HOPPER_VARIANTS[True]), hopper_name(ct, HOPPER_VARIANTS[True], MASK_LOCAL)))
        for d in head_dims:
            for variant in [FLASH_VARIANTS[d], *flash_variants]:
                mt, nw, kn = variant
                for mask in (MASK_NONE, MASK_CAUSAL):
                    out.append(("flash_fwd.cu", f"flash_fwd<{ct}, {d}, {mt}, {nw}, {kn}, {mask}>"))
            mt, nw, kn = FLASH_VARIANTS[d]
            out.append(("flash_fwd.cu", f"flash_fwd<{ct}, {d}, {mt}, {nw}, {kn}, {MASK_LOCAL}>"))
            kv_types = [(ct, PAGED_STAGES)] + ([(FP8_CTYPE, PAGED_STAGES_FP8)] if fp8_kv else [])
            for kv, stages in kv_types:
                for mt in (1, 2):
                    for split in ("false", "true"):
                        for mask in (MASK_NONE, MASK_CAUSAL, MASK_LOCAL):
                            out.append(("paged_decode.cu", f"paged_decode<{ct}, {kv}, {d}, {mt}, {PAGED_WARPS}, "
                                                           f"{stages}, {split}, {mask}>"))
        out.append(("merge_partials.cu", f"merge_partials<{ct}, 8>"))
        out.append(("merge_states.cu", f"merge_states<{ct}, 8, 1>"))
        out.append(("softmax_rows.cu", f"softmax_rows<{ct}, 8, 4, 0>"))
        out.append(("softmax_rows.cu", f"softmax_rows<{ct}, 8, 4, 4>"))
    if 576 in mla_dims:
        out += mla_instantiations(tuple(half), fp8_kv, hopper=hopper_variants is not None)
    out.append(("merge_partials.cu", "merge_partials<float, 8>"))
    out.append(("merge_states.cu", "merge_states<float, 4, 1>"))
    out.append(("softmax_rows.cu", "softmax_rows<float, 4, 4, 0>"))
    out.append(("softmax_rows.cu", "softmax_rows<float, 4, 4, 2>"))
    return out


def precompile(dtypes: Iterable[str] = ("fp16", "bf16"), head_dims: Iterable[int] = (64, 128),
               flash_variants: Iterable[tuple[int, int, int]] = (),
               hopper_variants: Iterable[tuple[int, int, bool]] = (), workers: int = 16) -> int:
    """Compile the default instantiations for these dtypes and head dims; returns how many.

    The fp8 KV cache's instantiations are included where the device runs them (sm_89 and newer),
    the wgmma flash kernel's (default and `hopper_variants`) on sm_90.
    """
    capability = compute_capability(cupy_module())
    fp8_kv = capability >= FP8_MIN_COMPUTE_CAPABILITY
    hopper = list(hopper_variants) if capability == HOPPER_COMPUTE_CAPABILITY else None
    return compile_all(instantiations(dtypes, head_dims, flash_variants, fp8_kv, hopper), workers)


#: Tuning variants the GPU tests and benchmarks run besides the defaults.
TEST_FLASH_VARIANTS = ((2, 4, 32), (1, 8, 64), (1, 4, 64))
TEST_HOPPER_VARIANTS = ((2, 128, True), (2, 128, False), (3, 128, False), (2, 64, True), (3, 64, True),
                        (2, 128, False, 3))


def all_instantiations() -> list[tuple[str, str]]:
    """Every instantiation the launchers, GPU tests and benchmarks use on an sm_90 GPU (for compile checks)."""
    return instantiations(flash_variants=TEST_FLASH_VARIANTS, fp8_kv=True, hopper_variants=TEST_HOPPER_VARIANTS)
