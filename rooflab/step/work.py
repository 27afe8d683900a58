"""What one data rank computes in a step (StepWork), whether the engine replays its CUDA graph for it (step_graphed),
the rows that live in its layers, and the rows a step's logit rows cost after them (the lm_head and the sampler:
sequence_rows)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..vocab import StepKind
from .attention import decode_attention, prefill_attention
from .communication import communication
from .gemms import logits, mlp, projections
from .pricing import StepContext, priced_row
from .rows import StepRow
from .sampler import (SAMPLING_VARIANT, SEQUENCE_OPS, Sampler, SamplerSequence, graph_replayed,
                      outside_graph_words, sampler_impl, sampler_kernels, sampler_sequences, sampler_time,
                      sampler_words)
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


def step_graphed(sampler: Sampler, deployment, work: StepWork) -> bool:
    """Whether the engine (known by its `sampler`) replays its CUDA graph for `work` on `deployment`
    (rooflab.step.sampler.graph_replayed over the step's decode rows, prefill tokens and longest sequence: a decode's
    context and its query tokens): the StepContext's `graphs`, which times every launch and collective of the step."""
    longest = work.context_len + work.q_len if work.decodes else 0
    return bool(graph_replayed(sampler, deployment.cuda_graphs, work.decodes * work.q_len, work.prefill_tokens,
                               longest))


def sequence_rows(ctx: StepContext, logit_rows: int) -> list[StepRow]:
    """The rows that scale with the step's logit rows: the logits (gemms.logits: lm_head, all-gather) and the token
    pick after the model's graph (sampler_row); the one function step_rows and rooflab.step_table price them by
    (graph or eager as the context's step: StepContext.graphs)."""
    return logits(ctx, logit_rows) + sampler_row(ctx, logit_rows)


def sampler_row(ctx: StepContext, logit_rows: int) -> list[StepRow]:
    """The sampler's row (rooflab.step.sampler: its launches' floors over [logit_rows, vocab] and its measured time);
    none where the context's sampler is unpriced or there are no logit rows, nor under speculative decoding (drafts
    are verified by a rejection sampler, not read: noted). Eager (no graph-input copies, `wall` times) without CUDA
    graphs, and where the engine runs the step's model eagerly (StepContext.graphs, step_graphed: vLLM V0 outside a
    decode-only batch of at most 256 sequences of at most 8,192 tokens)."""
    sampler, pricer = ctx.sampler, ctx.pricer
    if sampler is Sampler.unpriced or logit_rows <= 0:
        return []
    if ctx.dep.speculative is not None:
        pricer.note("sampling not priced: drafts are verified by a rejection sampler not read here")
        return []
    graphs = ctx.graphs
    vocab, eager = ctx.model.vocab_size, not graphs
    launches = pricer.launches.times
    t = sampler_time(sampler, ctx.gpu, logit_rows, vocab, eager, launches.eager_host_s if launches else None)
    if t.t_s is None:
        pricer.miss("sampling after the graph", t.note)
    else:
        pricer.note(t.note)
    kernels = sampler_kernels(sampler, logit_rows, vocab, graphs)
    copies = sum(1 for seq, _ in sampler_sequences(sampler, graphs) if seq is SamplerSequence.v0_graph_inputs)
    inputs = f"; {len(SEQUENCE_OPS[SamplerSequence.v0_graph_inputs])} copies into the graph's inputs" if copies else ""
    why = f"; the model eager: {outside_graph_words()}" if ctx.dep.cuda_graphs and not graphs else ""
    source = (f"measured sampler sequences ({'wall, issued eagerly' if eager else 'queued behind the graph'}; "
              f"measurements/launch/h200-sampler.csv)")
    return [priced_row(pricer, SAMPLING_VARIANT, f"sampling after the graph ({sampler_words(sampler, graphs)}"
                       f"{inputs}{why}; {logit_rows:,} x {vocab:,} logits)", kernels, 1.0, t.t_s,
                       sampler_impl(sampler, graphs), calls=len(kernels), part="sequences",
                       source=source, predicted_from=t.provenance)]


__all__ = ["STEPS", "StepWork", "layer_rows", "sampler_row", "sequence_rows", "step_graphed"]
