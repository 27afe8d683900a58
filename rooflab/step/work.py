"""What one data rank computes in a step (StepWork) and the rows that live in its layers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..vocab import StepKind
from .attention import decode_attention, prefill_attention
from .communication import communication
from .gemms import mlp, projections
from .pricing import StepContext
from .rows import StepRow
from .small_ops import small_ops_row

STEPS = tuple(k.value for k in StepKind)


@dataclass(frozen=True)
class StepWork:
    """What one data rank of the deployment computes in a step (rooflab.step_table prices these directly).

    decodes       sequences decoding on the rank, each scoring `q_len` query tokens over `context_len` cached ones
    prefills      prompts (or prompt chunks) prefilled in the same step, `prefill_len` tokens each (fresh: the chunk
                  attends to itself, causal)
    """

    decodes: int = 0
    q_len: int = 1
    context_len: int = 0
    prefills: int = 0
    prefill_len: int = 0

    @property
    def prefill_tokens(self) -> int:
        return self.prefills * self.prefill_len

    @property
    def tokens(self) -> int:
        """Rows through the GEMMs: every decode's query tokens and the prefill tokens."""
        return self.decodes * self.q_len + self.prefill_tokens

    @property
    def logit_rows(self) -> int:
        """Rows the lm_head scores: every query token of a decode (drafts verified), a prompt's last."""
        return self.decodes * self.q_len + self.prefills


def layer_rows(ctx: StepContext, work: StepWork) -> list[StepRow]:
    """Every row that lives in the layers (not the logits): GEMMs, attention, elementwise, communication."""
    tokens = math.ceil(work.tokens / ctx.cp)
    rows = projections(ctx, tokens, min(tokens, work.decodes * work.q_len))
    if work.decodes:
        rows += decode_attention(ctx, work.decodes, work.q_len, work.context_len)
    if work.prefills:
        rows += prefill_attention(ctx, work.prefills, work.prefill_len)
    rows += mlp(ctx, tokens)
    rows.append(small_ops_row(ctx, tokens))
    rows += communication(ctx, tokens)
    return rows


__all__ = ["STEPS", "StepWork", "layer_rows"]
