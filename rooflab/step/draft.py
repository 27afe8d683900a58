"""Speculative decoding's draft steps, one row: k draft steps, tokens per step (1 - a^(k+1)) / (1 - a).

An MTP / EAGLE head is one decoder layer of the target (its rows at one query token, over the layer count) and the
lm_head, k times; a draft model is its own decode step (same deployment, bf16 unless it ships otherwise), k times;
n-gram drafting costs no GPU work here.
"""

from __future__ import annotations

import dataclasses

from ..deployment import SpecMethod
from ..load import load_model
from .gemms import logits
from .pricing import StepContext
from .rows import StepRow, scaled, summed
from .work import StepWork, layer_rows


def draft_rows(ctx: StepContext, decodes: int, context_len: int) -> list[StepRow]:
    """The k draft steps of the deployment's speculative decoding (the module docstring); none for n-gram."""
    spec = ctx.dep.speculative
    k = spec.num_speculative_tokens
    if spec.method is SpecMethod.ngram:
        return []
    if spec.method is SpecMethod.draft_model:
        draft = load_model(spec.draft_model)
        sub = dataclasses.replace(ctx, model=draft, weights_as=None)
        one = layer_rows(sub, StepWork(decodes, 1, context_len)) + logits(sub, decodes)
        what = f"draft model {draft.name}: {k} decode steps"
    else:
        sub = ctx
        per_layer = [scaled(r, 1 / ctx.model.num_layers) for r in layer_rows(ctx, StepWork(decodes, 1, context_len))]
        one = per_layer + logits(ctx, decodes)
        what = f"{spec.method.value} head (one decoder layer + lm_head): {k} draft steps"
    predicted_from = ", ".join(sorted({r.predicted_from for r in one if r.predicted_from})) or None
    row = summed(one, k, "draft", what, predicted_impl="rooflab", part="decode",
                 source=f"the step's own rows for the draft ({sub.model.name}), {k} times")
    return [dataclasses.replace(row, predicted_from=None if row.t_predicted_s is None else predicted_from)]


__all__ = ["draft_rows"]
