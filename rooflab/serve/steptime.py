"""Step times for a scheduler: floor and predicted seconds of a step holding D decodes (their contexts summing to C
tokens) and P prefill tokens, for arrays of (D, C, P).

`StepTimes` is the interface the closed form and the simulation call (millions of times: it must be vectorised).
`TableStepTimes` is the one implementation: rooflab's whole-model step (`rooflab.step`, what `rooflab report
--phase step` prints) tabulated once by `rooflab.step_table.StepTable`, so a serving figure and the step report
get the same step time for the same deployment and batch by construction (exact at the table's grid points,
within the table's interpolation elsewhere: tests/test_step_table.py, tests/serve/test_steptime.py).

What a scheduler's step is, in the table's words: D decodes of summed context C (mean C / D) and a prefill chunk
of P tokens priced as one prompt's chunk (StepTable's definition: several prompts chunked into one step are
priced as one P-token causal prefill, which overstates their attention by at most the quadratic term; a later
chunk of a long prompt is priced without the context before it, which understates it). Two conventions of the
closed form, stated: a fractional D between 0 and 1 (a mean over steps) is priced as one decode at the same mean
context; a step of no tokens (D = 0, P = 0) takes no time.

The floor of a step is the largest of its summed compute, memory and communication floors (everything
overlapped, as rooflab.step's t_floor_s); the prediction is the sum of the rows' predictions, None where the GPU
lacks a fit (then `predicted_s` returns None and `provenance` names what is missing).

`one(estimate)` and `run(estimate)` are the simulation's fast paths: the same numbers as `floor_s` /
`predicted_s` (tested), one step priced in plain Python (numpy's per-call overhead is some microseconds an
operation, and a simulation prices a step per event) and a run of decode-only steps at a fixed batch priced
along the context grid (plain Python for a short run, numpy past LONG_RUN steps).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Protocol

import numpy as np

from ..cost.common import check_spec, whole_number
from ..deployment import Deployment
from ..errors import InputError, shown
from ..limits import MAX_BATCH, MAX_TOKENS
from ..specs import GpuSpec, ModelSpec
from ..step import DEFAULT_MOE_KERNEL, DecodeAttention, MoeKernel, Routing, decode_attention_of, moe_kernel_of
from ..step.dense_block_fp8 import DenseBlockFp8Kernel
from ..step.sampler import SAMPLER_CSV, SAMPLER_GPU, Sampler
from ..step_table import StepTable

ESTIMATES = ("floor", "predicted")
#: Decode runs up to this many steps are priced step by step in plain Python (faster than numpy's calls).
SHORT_RUN = 4
#: Decode runs longer than this are priced in numpy (shorter ones in plain Python: numpy's calls cost more).
LONG_RUN = 64
_COLUMNS = {"floor": (0, 1, 2), "predicted": (3,)}


class StepTimes(Protocol):
    """Seconds of a step: `floor_s` and `predicted_s` of arrays of decodes, summed context and prefill tokens."""

    provenance: str

    def floor_s(self, decodes, context_tokens, prefill_tokens) -> np.ndarray: ...

    def predicted_s(self, decodes, context_tokens, prefill_tokens) -> Optional[np.ndarray]: ...


@dataclass(frozen=True)
class TableStepTimes:
    """The step model on one deployment through a StepTable (the module docstring)."""

    table: StepTable
    provenance: str                   # where the predictions come from, or why there are none

    @property
    def has_prediction(self) -> bool:
        return self.table.predicts

    def _times(self, decodes, context_tokens, prefill_tokens) -> tuple[np.ndarray, np.ndarray]:
        d = np.atleast_1d(np.asarray(decodes, dtype=np.float64))
        c = np.atleast_1d(np.asarray(context_tokens, dtype=np.float64))
        p = np.atleast_1d(np.asarray(prefill_tokens, dtype=np.float64))
        d, c, p = np.broadcast_arrays(d, c, p)
        part = (d > 0) & (d < 1)                                  # a mean below one decode: one decode
        c = np.where(part, c / np.where(part, d, 1.0), c)
        d = np.where(part, 1.0, d)
        empty = (d == 0) & (p == 0)
        floor, predicted = self.table.time_s(d, c, np.where(empty, 1.0, p))
        return np.where(empty, 0.0, floor), np.where(empty, 0.0, predicted)

    def floor_s(self, decodes, context_tokens, prefill_tokens) -> np.ndarray:
        return self._times(decodes, context_tokens, prefill_tokens)[0]

    def predicted_s(self, decodes, context_tokens, prefill_tokens) -> Optional[np.ndarray]:
        if not self.has_prediction:
            return None
        return self._times(decodes, context_tokens, prefill_tokens)[1]

    def _timings(self) -> tuple[bool, ...]:
        """The part sets a step may read (StepTable.parts' `eager`): the graph set, and the eager one where the
        engine runs some steps eagerly (StepTable.leaves_graph)."""
        return (False, True) if self.table.leaves_graph else (False,)

    def _at_decodes(self, cols, eager: bool = False) -> "callable":
        """decodes -> (the tokens and sequences parts of a decode-only step, the decode part blended to that
        many decodes over the context grid [len(L), cols]), from the graph parts or the `eager` ones
        (StepTable.parts); cached per decode count (a simulation asks the same few hundred counts again and
        again)."""
        t = self.table.complete()
        tokens_parts, sequences_parts, decode_parts, _ = t.parts(eager)
        dg = t.decodes_grid.astype(np.float64)
        tokens = _Line(t.tokens_grid, tokens_parts, cols)
        seqs = _Line(t.sequences_grid, sequences_parts, cols)
        cache: dict = {}

        def at(d: float):
            hit = cache.get(d)
            if hit is None:
                if d > dg[-1] or d < dg[0]:
                    raise InputError(f"decodes {d:,.0f} is outside the table's grid ({dg[0]:,.0f} .. "
                                     f"{dg[-1]:,.0f})")
                i = min(int(np.searchsorted(dg, d, side="right")) - 1, len(dg) - 2)
                u = (d - dg[i]) / (dg[i + 1] - dg[i])
                row = (1 - u) * decode_parts[i][:, cols] + u * decode_parts[i + 1][:, cols]
                const = [a + b for a, b in zip(tokens.at(d * t.q_len), seqs.at(d * t.q_len))]
                hit = cache[d] = (const, row, row.tolist(), row.T.tolist())
            return hit

        return at

    def one(self, estimate: str):
        """A plain-Python function (decodes, context_tokens, prefill_tokens) -> seconds of one step (whole decodes;
        None: no prediction); the table's interpolation done with bisect over lists, from the part set the step's
        timing picks (StepTable.replayed, where the table has an eager set)."""
        if estimate == "predicted" and not self.has_prediction:
            return None
        t, cols = self.table.complete(), list(_COLUMNS[estimate])
        sets = {}
        for eager in self._timings():
            tokens_parts, sequences_parts, _, prefill_parts = t.parts(eager)
            sets[eager] = (_Line(t.tokens_grid, tokens_parts, cols), _Line(t.sequences_grid, sequences_parts, cols),
                           _Line(t.prefill_grid, prefill_parts, cols), self._at_decodes(cols, eager))
        replayed = t.replayed if t.leaves_graph else None
        lg = t.context_grid.astype(float).tolist()
        top = len(lg) - 2
        q = t.q_len

        def time_s(d: float, c: float, p: float) -> float:
            if d == 0 and p == 0:
                return 0.0
            tokens, seqs, pre, decodes = sets[replayed is not None and not replayed(d, c, p)]
            if d > 0:                                              # tokens: D q + P rows; sequences D q (+1)
                mean = max(c / d, lg[0])
                if mean > lg[-1]:
                    raise InputError(f"mean context {mean:,.0f} is outside the table's grid (.. {lg[-1]:,})")
                j = min(bisect.bisect_right(lg, mean) - 1, top)
                v = (mean - lg[j]) / (lg[j + 1] - lg[j])
                lo, hi = decodes(d)[2][j:j + 2]
                total = [a + v * (b - a) for a, b in zip(lo, hi)]
                if p == 0:
                    const = decodes(d)[0]
                    return max(x + y for x, y in zip(total, const))
            else:
                total = [0.0] * len(cols)
            parts = zip(total, tokens.at(d * q + p), seqs.at(d * q + 1), pre.at(p))
            return max(a + b + e + f for a, b, e, f in parts)

        return time_s

    def run(self, estimate: str):
        """A function (decodes, first summed context, steps) -> [seconds of each of `steps` decode-only steps] whose
        summed context grows by `decodes` a step (None: no prediction). At a fixed batch the tokens and sequences
        parts are constant and the decode part is linear in the mean context between grid points; the mean grows
        by one a step, so the grid cell is walked, not searched. Plain Python: a simulation's runs are some ten
        steps, where numpy's per-call cost exceeds the work (the same arithmetic, in the same order, as
        `floor_s` / `predicted_s` take on these arrays). Where the table has an eager set, the run is cut where the
        steps' timing changes (StepTable.replayed: V0 leaves its graph as the sequences pass 8,192 tokens) and each
        stretch priced from its set."""
        if estimate == "predicted" and not self.has_prediction:
            return None
        t = self.table.complete()
        grid = t.context_grid.astype(np.float64)
        lg = grid.tolist()
        low, high, top = lg[0], lg[-1], len(lg) - 2
        span = [b - a for a, b in zip(lg, lg[1:])]
        sets = {eager: self._at_decodes(list(_COLUMNS[estimate]), eager) for eager in self._timings()}
        one = self.one(estimate)

        def stretch(decodes, d: float, c0: float, steps: int) -> list[float]:
            const, rows = decodes(d)[:2]
            if steps > LONG_RUN:                                   # long enough for numpy's calls to pay
                means = np.clip((c0 + d * np.arange(steps, dtype=np.float64)) / d, low, high)
                j = np.minimum(np.searchsorted(lg, means, side="right") - 1, top)
                v = ((means - grid[j]) / (grid[j + 1] - grid[j]))[:, None]
                return (rows[j] * (1 - v) + rows[j + 1] * v + np.array(const)).max(axis=1).tolist()
            columns = decodes(d)[3]
            out = []
            j = min(bisect.bisect_right(lg, min(max(c0 / d, low), high)) - 1, top)
            for k in range(steps):
                mean = (c0 + d * k) / d
                mean = low if mean < low else high if mean > high else mean
                while j < top and lg[j + 1] <= mean:
                    j += 1
                v = (mean - lg[j]) / span[j]
                w = 1 - v
                if len(const) == 1:
                    col = columns[0]
                    out.append(col[j] * w + col[j + 1] * v + const[0])
                else:
                    out.append(max([col[j] * w + col[j + 1] * v + e for col, e in zip(columns, const)]))
            return out

        def times_s(d: float, c0: float, steps: int) -> list[float]:
            if steps <= SHORT_RUN:
                return [one(d, c0 + d * k, 0.0) for k in range(steps)]
            if len(sets) == 1:
                return stretch(sets[False], d, c0, steps)
            graphed = np.broadcast_to(np.asarray(t.replayed(d, c0 + d * np.arange(steps, dtype=np.float64), 0.0),
                                                 dtype=bool), (steps,))
            cuts = [0, *(np.flatnonzero(graphed[1:] != graphed[:-1]) + 1).tolist(), steps]
            out = []
            for a, b in zip(cuts, cuts[1:]):
                out += stretch(sets[not graphed[a]], d, c0 + d * a, b - a)
            return out

        return times_s


class _Line:
    """One 1-D part of the table (grid, [len(grid), 4]) in plain Python: linear interpolation of `cols` at x."""

    def __init__(self, grid: np.ndarray, parts: np.ndarray, cols):
        self.x = grid.astype(float).tolist()
        self.y = [[float(parts[i, k]) for k in cols] for i in range(len(self.x))]
        self.top = len(self.x) - 2

    def at(self, x: float) -> list[float]:
        xs = self.x
        if x > xs[-1] or x < xs[0]:
            raise InputError(f"{x:,.0f} tokens is outside the table's grid ({xs[0]:,.0f} .. {xs[-1]:,.0f})")
        i = min(bisect.bisect_right(xs, x) - 1, self.top)
        w = (x - xs[i]) / (xs[i + 1] - xs[i])
        lo, hi = self.y[i], self.y[i + 1]
        return [a + w * (b - a) for a, b in zip(lo, hi)]


def _provenance(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, predicts: bool, moe_kernel: str,
                decode_attention: str, routing: Routing = Routing.unpriced, mla_layout: str = "separate",
                mla_decode_splits: Optional[int] = None, sampler: Sampler = Sampler.graphed_greedy,
                dense_block: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block) -> str:
    """Where the step's predictions come from (the step report's own notes at one decode: measured on this GPU, or
    transferred with the error band), or why there are none."""
    from ..step import step_report

    spec = deployment.speculative
    span = deployment.page_size * deployment.position_split          # a page on each position rank
    q = spec.query_tokens if spec is not None else 1
    report = step_report(model, gpu, batch=1, context_len=span * -(-(q + 1) // span), deployment=deployment,
                         check_memory=False, moe_kernel=moe_kernel, decode_attention=decode_attention, sampler=sampler)
    if not predicts:
        missing = [n for n in report.notes if n.startswith("no prediction")]
        return "; ".join(missing) if missing else "no prediction: the step has rows without a fit"
    kernels = [f"{what} {value}" for what, value, shown_ in (
        ("experts as", moe_kernel_of(moe_kernel).value, model.is_moe),
        ("decode attention", decode_attention_of(decode_attention).value,
         decode_attention_of(decode_attention) is not DecodeAttention.shared),
        ("routing", Routing.of(routing, "routing").value, Routing.of(routing, "routing") is not Routing.unpriced),
        ("MLA projections", str(mla_layout), str(mla_layout) != "separate"),
        ("MLA decode splits", str(mla_decode_splits), mla_decode_splits is not None),
        ("sampler", sampler.value, sampler is Sampler.unpriced),
        ("dense block-fp8 GEMMs as", dense_block.value, dense_block is not DenseBlockFp8Kernel.scaled_mm_block))
        if shown_]
    kernels = f" ({', '.join(kernels)})" if kernels else ""
    # the sampler's times are measured sequences, not a fit: said apart from the fitted rows
    sampling = (f"; sampler {sampler.value} measured on {SAMPLER_GPU} ({'/'.join(('measurements', *SAMPLER_CSV))})"
                if sampler not in (Sampler.graphed_greedy, Sampler.unpriced) else "")
    moved = [n.removeprefix("t_predicted ") for n in report.notes if "transferred" in n]
    if moved:
        return (f"rooflab's step model (rooflab report --phase step){kernels} on {gpu.name}: " + "; ".join(moved)
                + sampling)
    return f"rooflab's step model (rooflab report --phase step){kernels} fitted on {gpu.name}{sampling}"


@lru_cache(maxsize=32)
def _table(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, max_decodes: int, min_context: int,
           max_context: int, max_prefill: int, moe_kernel: MoeKernel,
           decode_attention: DecodeAttention, routing: Routing = Routing.unpriced,
           mla_decode_splits: Optional[int] = None, mla_layout: str = "separate",
           absorbed_bytes: Optional[float] = None, sampler: Sampler = Sampler.graphed_greedy,
           dense_block: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block) -> TableStepTimes:
    table = StepTable.build(model, gpu, deployment, max_decodes=max_decodes, max_context=max_context,
                            max_prefill=max_prefill, min_context=min_context, lazy=True, moe_kernel=moe_kernel,
                            decode_attention=decode_attention, routing=routing,
                            mla_decode_splits=mla_decode_splits, mla_layout=mla_layout,
                            absorbed_bytes=absorbed_bytes, sampler=sampler, dense_block=dense_block)
    return TableStepTimes(table, _provenance(model, gpu, deployment, table.predicts, moe_kernel, decode_attention,
                                             routing, mla_layout, mla_decode_splits, sampler, dense_block))


def step_times(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, max_decodes: int, min_context: int,
               max_context: int, max_prefill: int, moe_kernel: str = DEFAULT_MOE_KERNEL,
               decode_attention: str = "shared", routing: str = "unpriced",
               mla_decode_splits: Optional[int] = None, mla_layout: str = "separate",
               absorbed_bytes: Optional[float] = None, sampler: str = Sampler.graphed_greedy,
               dense_block: str = DenseBlockFp8Kernel.scaled_mm_block) -> TableStepTimes:
    """The step-time function for a deployment: rooflab's step tabulated for up to `max_decodes` decodes of mean
    context `min_context` .. `max_context` (a decode reading less is priced at min_context) and prefill chunks of
    up to `max_prefill` tokens, the experts priced as `moe_kernel` (rooflab.step.MoeKernel), the decode attention as
    `decode_attention` (rooflab.step.DecodeAttention), the MoE routing as `routing` (rooflab.step.Routing), the MLA
    decode at `mla_decode_splits` KV splits (None: rooflab's own split search; rooflab.step.engine_kernels picks the
    four for an engine, with `mla_layout` and `absorbed_bytes`, the MLA projections' GEMMs, and `sampler`
    (rooflab.step.Sampler), what picks the tokens after the graph, and `dense_block` (rooflab.step.
    dense_block_fp8.DenseBlockFp8Kernel), what prices the dense block-fp8 GEMMs). Tables
    are kept (up to 32) for the same model, GPU, deployment, limits and kernels. Each size is a whole number of at
    least 1 (a context at most max_context), else InputError naming it."""
    model, gpu = check_spec(model, ModelSpec, "model"), check_spec(gpu, GpuSpec, "gpu")
    if not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    max_decodes = whole_number(max_decodes, "max_decodes", 1, MAX_BATCH)
    min_context = whole_number(min_context, "min_context", 1, MAX_TOKENS)
    max_context = whole_number(max_context, "max_context", 1, MAX_TOKENS)
    max_prefill = whole_number(max_prefill, "max_prefill", 1, MAX_TOKENS)
    if min_context > max_context:
        raise InputError(f"min_context ({min_context:,}) must be at most max_context ({max_context:,})")
    return _table(model, gpu, deployment, max_decodes, min_context, max_context, max_prefill,
                  moe_kernel_of(moe_kernel), decode_attention_of(decode_attention), Routing.of(routing, "routing"),
                  mla_decode_splits, str(mla_layout), absorbed_bytes, Sampler.of(sampler, "sampler"),
                  DenseBlockFp8Kernel.of(dense_block, "dense_block"))
