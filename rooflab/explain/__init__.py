"""Show the working: every figure of a report as formula, numbers substituted, and result with units.

The derivation follows the chapter (../shared/seeds/naive-attention-and-online-softmax.txt):
S and P, the traffic of each kernel, the total, F, the intensity, the compulsory intensity,
the floors, the ridge and the distance from it, whole-model times, and whether it fits.

Each value shown is the one rooflab's cost functions and roofline compute. The formula beside
it is evaluated independently from the symbols, and the two must agree: a disagreement is a
bug in rooflab (ExplainMismatch), never something to round away.

derivation.py holds the machinery (steps, formula evaluation, the agreement check), prefill.py
and decode.py the variants' derivations, render.py the text and markdown layouts.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..cost.paged import DecodeBatch
from ..errors import InputError
from ..roofline import Ceilings
from ..vocab import EXPLAINED, CeilingSource, Variant
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from .decode import explain_decode_step, explain_merge
from .derivation import (AGREEMENT_RTOL, ExplainMismatch, Explanation, Section, Step, Unit, _Derivation, evaluate,
                         format_result, heads_and_roofs, number, substitute)
from .prefill import explain_flash, explain_naive
from .render import render_explanation

__all__ = ["AGREEMENT_RTOL", "EXPLAINED", "ExplainMismatch", "Explanation", "Section", "Step", "Unit", "evaluate",
           "explain", "format_result", "number", "render_explanation", "substitute"]



def explain(variant: Variant, model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
            dtype: DType = DType.fp16, causal: bool = False, context_lens: Sequence[int] | DecodeBatch = (),
            page_size: int = 16, kv_dtype: Optional[DType] = None, splits: Optional[int] = None,
            ceilings: CeilingSource = CeilingSource.datasheet) -> Explanation:
    """The derivation of every figure rooflab reports for `variant` on this workload."""
    if variant not in EXPLAINED:
        raise InputError(f"explain covers {', '.join(v.value for v in EXPLAINED)}; not {variant.value}")
    roofs = Ceilings.of(gpu, dtype, ceilings)
    kv_dtype = kv_dtype or dtype
    d = _Derivation({})
    vector = variant in (Variant.naive, Variant.merge)
    if variant in (Variant.naive, Variant.flash):
        d.given("B", batch, "sequences in the batch")
        d.given("T", seq_len, "tokens per sequence (prefill)")
    heads_and_roofs(d, model, gpu, roofs, dtype, vector)
    workload = f"T = {seq_len:,}, batch {batch}, {dtype.value}, {'causal' if causal else 'non-causal'}"
    if variant is Variant.naive:
        tail = explain_naive(d, model, gpu, roofs, seq_len, batch, dtype, causal)
    elif variant is Variant.flash:
        tail = explain_flash(d, model, gpu, roofs, seq_len, batch, dtype, causal)
    elif variant is Variant.merge:
        tail = explain_merge(d, model, roofs, seq_len * batch, dtype)
        workload = f"{seq_len * batch:,} tokens x {model.num_qo_heads} heads, {dtype.value}"
    else:
        tail, workload = explain_decode_step(d, variant, model, gpu, roofs, context_lens, batch, page_size, dtype,
                                             kv_dtype, splits)
    title = (f"{variant.value} attention, {model.display_name} on {gpu.display_name}: {workload}, "
             f"{roofs.source.value} ceilings")
    return Explanation(title, tuple(d.legend), d.finish(), tail)
