"""The whole-model step time as a vectorised function, tabulated once: for a scheduler that asks millions of times.

    table = StepTable.build(model, gpu, deployment)          # a few seconds: the step model on a grid
    floor_s, predicted_s = table.time_s(decodes, context_tokens, prefill_tokens)   # arrays, microseconds per million

`decodes` D are the sequences decoding on one data rank (each scoring the deployment's query tokens: 1, or k + 1
verifying speculative drafts), `context_tokens` C their summed context, `prefill_tokens` P a fresh prefill chunk
in the same step (one prompt; P = 0 for none). Any shapes that broadcast.

How: a grid plus interpolation of the step model's own rows (rooflab.step.step_rows), not a fitted closed form,
so the table reproduces step_report at its grid points exactly and nothing is fitted to anything. The step splits
into four parts by what each row scales with (StepRow.part):

    tokens      GEMMs, elementwise, TP / EP collectives     m = D q + P rows    1-D grid in m, linear in m
    sequences   lm_head, its all-gather, the sampler        n = D q + [P > 0]   1-D grid in n, linear in n
    decode      decode attention (+ DCP gathers, drafts)    (D, C / D)          2-D grid, bilinear in (D, mean context)
    prefill     the chunk's attention                       P                   1-D grid in P, linear in P

Bilinear interpolation in (D, mean context) is exact for the a + b D + c L + e D L form paged decode's bytes take
(e D L the KV read); the grids are geometric (ratio GRID_RATIO, DECODE_GRID_RATIO for the decode grid; the tokens
grid with the small kernels' measured launch batches added, the sequences grid the sampler's: their times bend
there), so the GEMMs' piecewise-linear time between points errs by well under a percent except across a
split-count or tile change (tests/test_step_table.py pins 3% off the grid). Each part keeps its compute, memory
and communication floors apart, so the step's floor is the same max(sum compute, sum memory, sum communication)
step_report takes. Outside the grid: refused (InputError).

Where the engine runs some steps eagerly although the deployment has CUDA graphs (vLLM V0, known by its sampler:
rooflab.step.sampler.graph_replayed replays the graph only for a decode-only step of at most 256 sequences of at
most 8,192 tokens), the four parts are priced a second time eagerly (eager launches and collectives, as step_report
prices such a step) and each step reads the set its timing picks (StepTable.replayed; the longest sequence taken as
the mean, C / D + q: the table knows no other); other deployments price one set, as before.

Pipeline parallelism is refused (a stage's rows and the bubble depend on the micro-batching: use step_report); the
memory check is the scheduler's (rooflab.capacity).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .cost.common import real_number, whole_number
from .deployment import Deployment
from .errors import InputError, shown
from .limits import MAX_BATCH, MAX_TOKENS
from .specs import GpuSpec, ModelSpec
from .step import (DEFAULT_MOE_KERNEL, Routing, StepRow, StepWork, _decode_attention, _draft, _layer_rows,
                   _prefill_attention, decode_attention_of, moe_kernel_of, step_context)
from .step.gemms import projections
from .step.dense_block_fp8 import DenseBlockFp8Kernel
from .step.sampler import Sampler, graph_replayed, leaves_graph, load_sampler_times
from .step.work import sequence_rows

#: Ratio of neighbouring grid points of the 1-D grids (tokens, sequences, prefill tokens) and of the 2-D decode grid
#: (decodes and mean context: bilinear there is exact for the KV read, so a coarser grid suffices).
GRID_RATIO = 1.25
DECODE_GRID_RATIO = 1.5


def _grid(lo: int, hi: int, ratio: float = GRID_RATIO) -> np.ndarray:
    n = max(2, math.ceil(math.log(max(hi, lo + 1) / lo) / math.log(ratio)) + 1)
    points = np.round(np.geomspace(lo, hi, n)).astype(np.int64)        # ascending: unique without np.unique,
    return points[np.concatenate(([True], points[1:] != points[:-1]))]  # which imports numpy.ma (start-up)


def _with_points(grid: np.ndarray, points) -> np.ndarray:
    """`grid` with the `points` inside its range added (measured batches, where a time bends: the sampler's, which
    rooflab.step.sampler interpolates between, and the small kernels' launch times, rooflab.step.small_ops),
    ascending, each once."""
    inside = [int(p) for p in points if grid[0] <= p <= grid[-1]]
    return np.array(sorted(set(grid.tolist()) | set(inside)), dtype=np.int64)


def _sums(rows: list[StepRow]) -> np.ndarray:
    """[compute, memory, communication, predicted] of rows (predicted NaN where any row has none)."""
    comp = sum(max(r.t_compute_s, r.t_exp_s) for r in rows if not r.is_communication)
    mem = sum(r.t_memory_s for r in rows if not r.is_communication)
    comm = sum(r.t_floor_s for r in rows if r.is_communication)
    pred = math.nan if any(r.t_predicted_s is None for r in rows) else sum(r.t_predicted_s for r in rows)
    return np.array([comp, mem, comm, pred], dtype=float)


def _unabsorbed(ctx, prefill_tokens: int) -> np.ndarray:
    """What a P-token prefill's rows add to the tokens part's projections, which price every row as a decode: MLA's
    prefill rows go through the kv_b GEMM, not the absorbed W_UK / W_UV matmuls (step.gemms._mla_projections), so
    projections(P, none absorbed) - projections(P, all absorbed); exact for a prefill-only step, a model's rows
    without MLA layers add nothing."""
    if not any(layer.is_latent for _, layer, _ in ctx.model.layer_walk()):
        return np.zeros(4)
    return _sums(projections(ctx, prefill_tokens, 0)) - _sums(projections(ctx, prefill_tokens, prefill_tokens))


#: The table's parts (the module docstring), in the order time_s sums them.
PARTS = ("tokens", "sequences", "decode", "prefill")


class _Pending:
    """The grid points a lazily built table has not priced yet: each part's pricing function and which points are
    known, a part keyed by (name, eager) (StepTable.parts). `cover` prices the points an interpolation reads (both
    neighbours of each x), on first use."""

    def __init__(self, parts: dict, price: dict):
        self.parts = parts                                           # (part, eager) -> array [..., 4]
        self.price = price                                           # (part, eager) -> (index tuple) -> [4]
        self.known = {key: np.zeros(a.shape[:-1], bool) for key, a in parts.items()}

    def fill(self, key: tuple, points) -> None:
        known, parts, price = self.known[key], self.parts[key], self.price[key]
        for k in points:
            if not known[k]:
                parts[k] = price(*k) if isinstance(k, tuple) else price(k)
                known[k] = True

    def cover(self, key: tuple, grid: np.ndarray, x: np.ndarray) -> None:
        if x.size:
            i = np.clip(np.searchsorted(grid, x.ravel(), side="right") - 1, 0, max(len(grid) - 2, 0))
            lower = i.tolist()                   # sorted distinct points: np.unique would load numpy.ma at start
            self.fill(key, sorted(set(lower) | {min(k + 1, len(grid) - 1) for k in lower}))

    def cover_decode(self, key: tuple, i: np.ndarray, j: np.ndarray, rows: int, cols: int) -> None:
        if i.size:
            pairs = {(a + da, b + db) for a, b in zip(i.ravel().tolist(), j.ravel().tolist())
                     for da in (0, 1) for db in (0, 1) if a + da < rows and b + db < cols}
            self.fill(key, sorted(pairs))

    def complete(self) -> None:
        for key, known in self.known.items():
            self.fill(key, [tuple(k) if known.ndim > 1 else int(k[0]) for k in np.argwhere(~known)])


def _part_prices(ctx, grids: dict, q: int, page: int, spec) -> dict:
    """{part: its pricing function at a grid index} for one context (graph or eager: StepContext.graphs)."""
    tokens, seqs, decodes, context, prefill = (grids[k] for k in ("tokens", "sequences", "decodes", "context",
                                                                  "prefill"))

    def decode(i: int, j: int) -> np.ndarray:
        rows = _decode_attention(ctx, int(decodes[i]), q, int(context[j]))
        if spec is not None:
            rows += _draft(ctx, int(decodes[i]), int(context[j]))
        return _sums(rows)

    return {"tokens": lambda k: _sums([r for r in _layer_rows(ctx, StepWork(int(tokens[k]), 1, page))
                                       if r.part == "tokens"]),
            "sequences": lambda k: _sums(sequence_rows(ctx, int(seqs[k]))),
            "decode": decode,
            "prefill": lambda k: _sums(_prefill_attention(ctx, 1, int(prefill[k]))) + _unabsorbed(ctx, int(
                prefill[k]))}


@dataclass(frozen=True)
class StepTable:
    """The step on one deployment, tabulated (the module docstring). Build with StepTable.build."""

    model: str
    gpu: str
    deployment: Deployment
    q_len: int
    tokens_grid: np.ndarray           # m
    tokens_parts: np.ndarray          # [len(m), 4]: compute, memory, communication floors, predicted
    sequences_grid: np.ndarray
    sequences_parts: np.ndarray
    decodes_grid: np.ndarray          # D
    context_grid: np.ndarray          # mean context L
    decode_parts: np.ndarray          # [len(D), len(L), 4]
    prefill_grid: np.ndarray          # P
    prefill_parts: np.ndarray
    moe_kernel: str = DEFAULT_MOE_KERNEL.value    # the kernel the experts are priced as (rooflab.step.MoeKernel)
    sampler: Sampler = Sampler.graphed_greedy     # the engine's sampler: its rule times each step (replayed)
    eager_tokens_parts: Optional[np.ndarray] = None     # the four parts priced eagerly, on the same grids; None
    eager_sequences_parts: Optional[np.ndarray] = None  # unless the engine runs some steps eagerly under CUDA
    eager_decode_parts: Optional[np.ndarray] = None     # graphs (rooflab.step.sampler.leaves_graph: vLLM V0)
    eager_prefill_parts: Optional[np.ndarray] = None
    _pending: _Pending | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(cls, model: ModelSpec, gpu: GpuSpec, deployment: Deployment | None = None, max_decodes: int = 1024,
              max_context: int = 131072, max_prefill: int = 16384, expert_imbalance: float = 1.0,
              min_context: int | None = None, lazy: bool = False,
              moe_kernel: str = DEFAULT_MOE_KERNEL, decode_attention: str = "shared",
              routing: str = "unpriced", mla_decode_splits: int | None = None, mla_layout: str = "separate",
              absorbed_bytes: float | None = None, sampler: str = Sampler.graphed_greedy,
              dense_block: str = DenseBlockFp8Kernel.scaled_mm_block) -> "StepTable":
        """Price the step model on the grids: tokens 1 .. max_decodes q + max_prefill, decodes 1 .. max_decodes,
        mean context min_context (default page_size) .. max_context, prefill 1 .. max_prefill. A mean context
        below min_context is priced at min_context (a caller that knows no decode reads less, e.g. a serving
        workload's shortest prompt, tabulates fewer points). `lazy`: each grid point is priced when time_s first
        reads it (a sweep reads some half of them; the same numbers), the first point of each 1-D part at once;
        complete() prices the rest. `moe_kernel` (rooflab.step.MoeKernel or its name): the kernel the experts'
        GEMMs are priced as, `decode_attention` (rooflab.step.DecodeAttention or its name) how the decode kernel reads
        a GQA group's KV, `routing` (rooflab.step.Routing or its name) how a MoE layer picks its experts,
        `mla_decode_splits` the KV splits of the MLA decode (None: rooflab's own split search), `mla_layout`
        (rooflab.step.MlaLayout or its name) the GEMMs of MLA's projections and `absorbed_bytes` the bytes a W_UK /
        W_UV parameter (None: the activations'), `sampler` (rooflab.step.Sampler or its name) what picks the tokens
        after the graph (and, for v0_random with CUDA graphs, which steps run eagerly: the parts are priced eagerly
        too, the module docstring), `dense_block` (rooflab.step.dense_block_fp8.DenseBlockFp8Kernel or its name)
        what prices the dense block-fp8 GEMMs; rooflab.step.engine_kernels picks them for an engine and version."""
        deployment = Deployment() if deployment is None else deployment
        if not isinstance(deployment, Deployment):
            raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
        if not isinstance(model, ModelSpec) or not isinstance(gpu, GpuSpec):
            raise InputError(f"StepTable.build takes a ModelSpec and a GpuSpec, got {shown(model)}, {shown(gpu)}")
        deployment.check_model(model)
        if deployment.pipeline_parallel > 1:
            raise InputError("StepTable does not tabulate pipeline parallelism (a stage's rows depend on the "
                             "micro-batching): use rooflab.step.step_report")
        max_decodes = whole_number(max_decodes, "max_decodes", maximum=MAX_BATCH)
        max_context = whole_number(max_context, "max_context", maximum=MAX_TOKENS)
        max_prefill = whole_number(max_prefill, "max_prefill", maximum=MAX_TOKENS)
        imbalance = real_number(expert_imbalance, "expert_imbalance", 1, 1e3)
        page = deployment.page_size * deployment.position_split    # DCP: a page on each of the position ranks
        low = page if min_context is None else max(page, whole_number(min_context, "min_context",
                                                                         maximum=MAX_TOKENS))
        context_of = functools.partial(step_context, model, gpu, deployment, imbalance,
                                       decode_attention_of(decode_attention), moe_kernel_of(moe_kernel),
                                       routing=Routing.of(routing, "routing"), mla_decode_splits=mla_decode_splits,
                                       mla_layout=mla_layout, absorbed_bytes=absorbed_bytes,
                                       sampler=Sampler.of(sampler, "sampler"), dense_block=dense_block)
        ctx = context_of()
        contexts = {False: ctx}                  # eager -> the context its parts are priced in
        if leaves_graph(ctx.sampler, deployment.cuda_graphs):
            contexts[True] = context_of(graphs=False)
        spec = deployment.speculative
        q = spec.query_tokens if spec is not None else 1
        low = max(low, q + 1)                                  # a context holds the step's q new tokens
        launches = ctx.pricer.launches.times
        bends = launches.batches if launches is not None else ()
        grids = {"tokens": _with_points(_grid(1, max_decodes * q + max_prefill), bends),
                 "sequences": _with_points(_grid(1, max_decodes * q + 1), load_sampler_times().batches),
                 "decodes": _grid(1, max_decodes, DECODE_GRID_RATIO),
                 "context": _grid(low, max(max_context, 2 * low), DECODE_GRID_RATIO),
                 "prefill": _grid(1, max_prefill)}
        shapes = {"tokens": (len(grids["tokens"]), 4), "sequences": (len(grids["sequences"]), 4),
                  "decode": (len(grids["decodes"]), len(grids["context"]), 4), "prefill": (len(grids["prefill"]), 4)}
        parts = {(part, eager): np.full(shapes[part], math.nan) for eager in contexts for part in PARTS}
        price = {(part, eager): fn for eager, c in contexts.items()
                 for part, fn in _part_prices(c, grids, q, deployment.page_size, spec).items()}
        eager = {f"eager_{part}_parts": parts.get((part, True)) for part in PARTS}
        table = cls(model.name, gpu.name, deployment, q, grids["tokens"], parts[("tokens", False)],
                    grids["sequences"], parts[("sequences", False)], grids["decodes"], grids["context"],
                    parts[("decode", False)], grids["prefill"], parts[("prefill", False)], ctx.moe_kernel.value,
                    ctx.sampler, **eager)
        pending = _Pending(parts, price)
        for part in ("tokens", "sequences", "prefill"):
            pending.fill((part, False), [0])
        pending.fill(("decode", False), [(0, 0)])
        if not table.predicts:                   # every predicted sum is NaN: price the other points' floors alone
            for c in contexts.values():
                c.pricer.floors_only = True
        object.__setattr__(table, "_pending", pending)
        return table if lazy else table.complete()

    def complete(self) -> "StepTable":
        """This table with every grid point priced (a lazy table's remaining ones priced now)."""
        if self._pending is not None:
            self._pending.complete()
            object.__setattr__(self, "_pending", None)
        return self

    @property
    def predicts(self) -> bool:
        """Whether the step has a prediction (no row without a fit): read at the tokens part's first point, since a
        row's kernel, and so whether the GPU has a fit of it, does not depend on the rows' count (a test)."""
        return not math.isnan(self.tokens_parts[0, 3])

    @property
    def leaves_graph(self) -> bool:
        """Whether the table holds eager parts beside the deployment's (the engine runs some steps eagerly)."""
        return self.eager_tokens_parts is not None

    def parts(self, eager: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The tokens, sequences, decode and prefill parts as the deployment runs its steps (`eager` False) or as
        an engine runs the steps it does not replay a graph for (`eager` True: the eager set, where there is one)."""
        if eager and self.leaves_graph:
            return (self.eager_tokens_parts, self.eager_sequences_parts, self.eager_decode_parts,
                    self.eager_prefill_parts)
        return self.tokens_parts, self.sequences_parts, self.decode_parts, self.prefill_parts

    def replayed(self, decodes, context_tokens, prefill_tokens):
        """Whether the engine replays its CUDA graph for a step of D decodes of summed context C beside P prefill
        tokens (scalars or arrays): rooflab.step.sampler.graph_replayed at D q decode rows, P and the longest
        sequence taken as the mean one, C / D + q tokens. The table knows only the mean context, so a decode step
        is outside vLLM V0's graph when its mean sequence is past the 8,192 tokens of the captured graphs (at a
        grid point every sequence is the mean: step_report's rule there)."""
        d, q = decodes, self.q_len
        longest = (d > 0) * (context_tokens / (d + (d == 0)) + q)
        return graph_replayed(self.sampler, self.deployment.cuda_graphs, d * q, prefill_tokens, longest)

    def time_s(self, decodes, context_tokens, prefill_tokens=0) -> tuple[np.ndarray, np.ndarray]:
        """(floor, predicted) seconds of a step with D decodes of summed context C and a P-token prefill chunk.

        Broadcast arrays; D = 0 is a prefill-only step, P = 0 a decode-only one. The floor: the largest of the summed
        compute, memory and communication floors (everything overlapped); predicted NaN where the GPU lacks a fit.
        Each step is read from the graph parts where the engine replays its graph for it (replayed), else from the
        eager parts (the table's where it has them).
        """
        d = np.asarray(decodes, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        p = np.asarray(prefill_tokens, dtype=float)
        d, c, p = np.broadcast_arrays(d, c, p)
        if np.any(d < 0) or np.any(p < 0) or np.any(c < 0) or not np.all(np.isfinite(d + c + p)):
            raise InputError("decodes, context_tokens and prefill_tokens must be finite and >= 0")
        m = d * self.q_len + p
        n = d * self.q_len + (p > 0)
        if np.any(m < 1):
            raise InputError("a step needs at least one decode or one prefill token")
        mean = np.where(d > 0, c / np.maximum(d, 1), self.context_grid[0])
        self._inside("tokens", m, self.tokens_grid)
        self._inside("decodes", d[d > 0], self.decodes_grid)
        self._inside("mean context", mean[d > 0], self.context_grid, low_ok=True)
        self._inside("prefill tokens", p[p > 0], self.prefill_grid)
        graphed = np.broadcast_to(np.asarray(self.replayed(d, c, p), dtype=bool), d.shape) if self.leaves_graph \
            else None
        if self._pending is not None:
            self._cover(m, n, d, mean, p, graphed)
        total = self._total(self.parts(False), m, n, d, mean, p)
        if graphed is not None:
            total = np.where(graphed[..., None], total, self._total(self.parts(True), m, n, d, mean, p))
        floor = np.max(total[..., :3], axis=-1)
        return floor, total[..., 3]

    def _total(self, parts: tuple, m, n, d, mean, p) -> np.ndarray:
        """[..., 4] of the steps from one set of parts (StepTable.parts)."""
        tokens, sequences, decode, prefill = parts
        return (_lerp(self.tokens_grid, tokens, m) + _lerp(self.sequences_grid, sequences, n)
                + np.where((d > 0)[..., None], self._decode(d, mean, decode), 0.0)
                + np.where((p > 0)[..., None], _lerp(self.prefill_grid, prefill, np.maximum(p, 1)), 0.0))

    def _cover(self, m, n, d, mean, p, graphed) -> None:
        """A lazy table's grid points that this call's interpolation reads, priced now: the graph parts' at the
        steps the engine replays its graph for, the eager parts' at the others (`graphed` None: every step graph
        parts, the table's only set)."""
        pending = self._pending
        for eager in ((False,) if graphed is None else (False, True)):
            pick = np.ones(d.shape, bool) if graphed is None else graphed != eager
            pending.cover(("tokens", eager), self.tokens_grid, m[pick])
            pending.cover(("sequences", eager), self.sequences_grid, n[pick])
            pending.cover(("prefill", eager), self.prefill_grid, p[pick & (p > 0)])
            live = pick & (d > 0)
            i, j, _, _ = self._cells(d[live], mean[live])
            pending.cover_decode(("decode", eager), i, j, len(self.decodes_grid), len(self.context_grid))

    def _cells(self, d: np.ndarray, mean: np.ndarray):
        """(the decode grid's cell of each (D, mean context), clipped to the grid: i, j, D, L)."""
        gd, gl = self.decodes_grid.astype(float), self.context_grid.astype(float)
        dc = np.clip(d, gd[0], gd[-1])
        lc = np.clip(mean, gl[0], gl[-1])
        i = np.clip(np.searchsorted(gd, dc, side="right") - 1, 0, len(gd) - 2)
        j = np.clip(np.searchsorted(gl, lc, side="right") - 1, 0, len(gl) - 2)
        return i, j, dc, lc

    def _decode(self, d: np.ndarray, mean: np.ndarray, t: np.ndarray) -> np.ndarray:
        gd, gl = self.decodes_grid.astype(float), self.context_grid.astype(float)
        i, j, dc, lc = self._cells(d, mean)
        u = _fraction(dc, gd[i], gd[i + 1])[..., None]
        v = _fraction(lc, gl[j], gl[j + 1])[..., None]
        return ((1 - u) * (1 - v) * t[i, j] + u * (1 - v) * t[i + 1, j] + (1 - u) * v * t[i, j + 1]
                + u * v * t[i + 1, j + 1])

    @staticmethod
    def _inside(what: str, x: np.ndarray, grid: np.ndarray, low_ok: bool = False) -> None:
        if x.size and (np.max(x) > grid[-1] or (not low_ok and np.min(x) < grid[0])):
            raise InputError(f"{what} {np.max(x):,.0f} is outside the table's grid ({grid[0]:,} .. {grid[-1]:,}): "
                             f"build it with a larger max_decodes / max_context / max_prefill")


def _lerp(grid: np.ndarray, parts: np.ndarray, x: np.ndarray) -> np.ndarray:
    """parts [len(grid), 4] interpolated linearly at x (any shape) -> [..., 4]."""
    g = grid.astype(float)
    return np.stack([np.interp(x, g, parts[:, k]) for k in range(parts.shape[1])], axis=-1)


__all__ = ["DECODE_GRID_RATIO", "GRID_RATIO", "PARTS", "StepTable"]


def _fraction(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Where x lies between grid points lo and hi, 0..1; 0 where the grid has one point on that axis (lo == hi:
    --max-num-seqs 1 gives one decode count, and 0 / 0 was NaN, refused as a non-finite step time)."""
    span = hi - lo
    return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1.0), 0.0)
