"""Fitting the communication model (rooflab.comm) to measured collectives, and holding it against the rows it did not see.

For each (collective, GPU count, timing) the rows, sorted by message size, are split into bands; each band
is a line t = alpha + bus bytes / B_bus fitted by least squares on the relative error (alpha >= 0, B > 0,
as bench.fitting fits kernels). The number of bands (1 to MAX_BANDS) and where they break come from the
fitted rows alone: every split at a gap between fitted sizes is tried, each band needing MIN_BAND_ROWS
rows, and the split with the smallest leave-one-out error on the fitted rows wins (so a band earns its
two parameters only if it predicts rows it was not fitted on). Bands end halfway (geometrically) between
the sizes either side of a break.

Eager timings add the host: an eager call costs max(host floor, the GPU's time), the GPU's time being the
graph fit of the same collective (with_host_floor); written as bands like the graph fit.

    validate  alternate sizes fitted (every other row of the sorted sweep), the others held out
    calibrate every row fitted; the held-out errors recorded are those of the alternate-row fit
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from ..comm import bus_bytes
from ..specs.interconnect import Band, CollectiveFit
from ..vocab import Kernel
from .records import Measurement

if TYPE_CHECKING:
    from ..specs import GpuSpec
    from ..specs.interconnect import InterconnectSpec

MAX_BANDS = 3
MIN_BAND_ROWS = 2


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(alpha, 1 / B) minimising sum((alpha + x / B) / y - 1)^2 with alpha >= 0 and B > 0."""
    design = np.column_stack([1 / y, x / y])
    (alpha, inv), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    if alpha < 0 or inv <= 0:
        if np.all(x == 0) or inv <= 0 and alpha > 0:
            return float(np.sum(1 / y) / np.sum(1 / y ** 2)), 1e-18
        alpha, inv = 0.0, float(np.sum(x / y) / np.sum((x / y) ** 2))
    return float(alpha), float(max(inv, 1e-18))


def _bands(x: np.ndarray, y: np.ndarray, sizes: np.ndarray, cuts: tuple[int, ...]) -> list[tuple[float, float, float]]:
    """(up_to_bytes, alpha, 1/B) per band for breaks after the given row indices (rows sorted by size).

    A band ends where its line meets the next band's, when that lies between the sizes either side of the
    break (the time is then the larger of the two lines there: a launch floor meeting a bandwidth line);
    else halfway between them (geometrically).
    """
    lines, start = [], 0
    for end in list(cuts) + [len(x)]:
        lines.append((start, end) + _line(x[start:end], y[start:end]))
        start = end
    out = []
    for i, (start, end, alpha, inv) in enumerate(lines):
        if end == len(x):
            out.append((float(1 << 50), alpha, inv))
            continue
        lo, hi = sizes[end - 1], sizes[end]
        up_to = math.sqrt(lo * hi)
        alpha2, inv2 = lines[i + 1][2], lines[i + 1][3]
        per_byte = x[end] / sizes[end]                      # bus bytes per message byte (fixed for a group)
        if inv != inv2 and per_byte > 0:
            meet = (alpha2 - alpha) / (inv - inv2) / per_byte
            if lo < meet < hi:
                up_to = meet
        out.append((up_to, alpha, inv))
    return out


def _predict(bands: list[tuple[float, float, float]], sizes: np.ndarray, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i, (s, xb) in enumerate(zip(sizes, x)):
        up, alpha, inv = next((b for b in bands if s <= b[0]), bands[-1])
        out[i] = alpha + xb * inv
    return out


def _splits(n: int) -> list[tuple[int, ...]]:
    """Every way to cut n sorted rows into 1..MAX_BANDS bands of at least MIN_BAND_ROWS rows."""
    out: list[tuple[int, ...]] = [()]
    for k in range(1, MAX_BANDS):
        for cuts in itertools.combinations(range(MIN_BAND_ROWS, n - MIN_BAND_ROWS + 1), k):
            if all(b - a >= MIN_BAND_ROWS for a, b in zip(cuts, cuts[1:])):
                out.append(cuts)
    return out


def _loo_error(x: np.ndarray, y: np.ndarray, sizes: np.ndarray, cuts: tuple[int, ...]) -> float:
    """Mean relative error predicting each fitted row from the others (same breaks, as sizes)."""
    bounds = [sizes[c - 1] for c in cuts]
    errs = []
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        xs, ys, ss = x[keep], y[keep], sizes[keep]
        local = tuple(int(np.searchsorted(ss, b, side="right")) for b in bounds)
        if any(c < MIN_BAND_ROWS - 1 for c in np.diff((0,) + local + (len(xs),))) or \
                any(c < 1 for c in np.diff((0,) + local + (len(xs),))):
            return math.inf
        bands = _bands(xs, ys, ss, local)
        errs.append(abs(_predict(bands, sizes[i:i + 1], x[i:i + 1])[0] / y[i] - 1))
    return float(np.mean(errs))


@dataclass(frozen=True)
class BandFit:
    """A fitted collective: its bands and the rows it rests on."""

    bands: tuple[Band, ...]
    rows: int

    def predict(self, kernel: Kernel, sizes: Sequence[float], world_size: int) -> np.ndarray:
        out = []
        for s in sizes:
            band = next((b for b in self.bands if s <= b.up_to_bytes), self.bands[-1])
            out.append(band.alpha_s + bus_bytes(kernel, s, world_size) / band.bus_bytes_per_s)
        return np.array(out)


def fit_bands(rows: Sequence[Measurement]) -> Optional[BandFit]:
    """The bands of one (collective, GPU count, timing) group's rows; None with fewer than 2 * MIN_BAND_ROWS - 1 rows."""
    rows = sorted(rows, key=lambda m: m.bytes_per_rank)
    if len(rows) < MIN_BAND_ROWS:
        return None
    kernel, n = rows[0].kernel, rows[0].world_size
    sizes = np.array([float(m.bytes_per_rank) for m in rows])
    x = np.array([bus_bytes(kernel, s, n) for s in sizes])
    y = np.array([m.time_s for m in rows])
    best = min(_splits(len(rows)), key=lambda cuts: (_loo_error(x, y, sizes, cuts), len(cuts)))
    bands = _bands(x, y, sizes, best)
    return BandFit(tuple(Band(int(min(up, 1 << 50)), alpha, 1 / inv) for up, alpha, inv in bands), len(rows))


@dataclass(frozen=True)
class HeldOut:
    """One group's alternate-row fit and its errors on the rows it did not see."""

    kernel: Kernel
    world_size: int
    timing: str
    fit: Optional[BandFit]
    held_out: tuple[Measurement, ...]
    predicted_s: tuple[float, ...]

    @property
    def errors(self) -> np.ndarray:
        return np.array([abs(p / m.time_s - 1) for p, m in zip(self.predicted_s, self.held_out)])


#: The bus bandwidth of a flat band (a launch floor): large enough that its slope is nothing at any size.
FLAT_BUS_BYTES_PER_S = 1e14


def with_host_floor(graph: BandFit, kernel: Kernel, world_size: int, rows: Sequence[Measurement]) -> BandFit:
    """An eager fit as max(host floor, the graph fit): eager calls cost the host's launch interval until the
    GPU's own time (the graph fit) passes it. The floor c minimises the relative error on `rows`; the result
    is bands: flat c up to where the graph fit reaches c, then the graph's bands."""
    sizes = np.array([float(m.bytes_per_rank) for m in rows])
    y = np.array([m.time_s for m in rows])
    gpu = graph.predict(kernel, sizes, world_size)
    floor = min(y, key=lambda c: float(np.mean(np.abs(np.maximum(c, gpu) / y - 1))))
    # the size where the graph fit reaches the floor: bisection over sizes (the fit grows with the size)
    lo, hi = 1.0, float(1 << 50)
    if graph.predict(kernel, [lo], world_size)[0] >= floor:
        return graph
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if graph.predict(kernel, [mid], world_size)[0] < floor else (lo, mid)
    cross = int(hi)
    bands = [Band(cross, float(floor), FLAT_BUS_BYTES_PER_S)]
    bands += [b for b in graph.bands if b.up_to_bytes > cross]
    return BandFit(tuple(bands), graph.rows + len(rows))


def groups(rows: Sequence[Measurement]) -> dict[tuple[Kernel, int, str], list[Measurement]]:
    out: dict[tuple[Kernel, int, str], list[Measurement]] = {}
    for m in rows:
        if m.kernel.is_collective:
            out.setdefault((m.kernel, m.world_size, m.timing or "eager"), []).append(m)
    return out


def _fit(kernel: Kernel, n: int, timing: str, members: Sequence[Measurement],
         graph_members: Sequence[Measurement]) -> Optional[BandFit]:
    """Graph timings: bands. Eager timings: the host floor over the graph fit where graph rows exist, else bands."""
    if timing == "eager" and len(graph_members) >= MIN_BAND_ROWS:
        graph = fit_bands(graph_members)
        if graph is not None:
            return with_host_floor(graph, kernel, n, members)
    return fit_bands(members)


def held_out(rows: Sequence[Measurement]) -> list[HeldOut]:
    """Per group: fitted on alternate sizes (the smallest, the third, ...), tested on the others."""
    out = []
    everything = groups(rows)
    for (kernel, n, timing), members in everything.items():
        members = sorted(members, key=lambda m: m.bytes_per_rank)
        graph = sorted(everything.get((kernel, n, "graph"), []), key=lambda m: m.bytes_per_rank)
        train, test = members[0::2], members[1::2]
        test_sizes = {m.bytes_per_rank for m in test}
        fit = _fit(kernel, n, timing, train, [m for m in graph if m.bytes_per_rank not in test_sizes])
        predicted = tuple(fit.predict(kernel, [m.bytes_per_rank for m in test], n)) if fit and test else ()
        out.append(HeldOut(kernel, n, timing, fit, tuple(test) if fit else (), predicted))
    return out


def collective_fits(rows: Sequence[Measurement], campaign: str) -> tuple[CollectiveFit, ...]:
    """The YAML's `collectives:` entries: every row fitted, with the alternate-row fit's held-out errors."""
    errors = {(h.kernel, h.world_size, h.timing): h.errors for h in held_out(rows)}
    fits = []
    everything = groups(rows)
    for (kernel, n, timing), members in sorted(everything.items(), key=lambda kv: (kv[0][0].value, kv[0][1],
                                                                                   kv[0][2])):
        fit = _fit(kernel, n, timing, members, everything.get((kernel, n, "graph"), []))
        if fit is None:
            continue
        err = errors.get((kernel, n, timing), np.array([]))
        fits.append(CollectiveFit(kernel, n, timing, fit.bands, rows=fit.rows, held_out_rows=int(err.size),
                                  median_error=float(np.median(err)) if err.size else None,
                                  worst_error=float(np.max(err)) if err.size else None, campaign=campaign))
    return tuple(fits)




def interconnect_yaml(link: "InterconnectSpec") -> str:
    """The `interconnect:` section of a GPU YAML: the datasheet fields, then the fitted collectives (one flow
    mapping each) and where they were measured."""
    lines = ["interconnect:                            # links to peer GPUs (rooflab.comm); collectives: written by "
             "`rooflab calibrate --collectives`",
             f"  name: {_quote(link.name)}",
             f"  link_bytes_per_s: {link.link_bytes_per_s:.4g}",
             f"  gpus_per_node: {link.gpus_per_node}"]
    if link.inter_node_bytes_per_s is not None:
        lines.append(f"  inter_node_bytes_per_s: {link.inter_node_bytes_per_s:.4g}")
    lines.append(f"  source: {_quote(link.source)}")
    if link.measured:
        lines.append(f"  measured: {_quote(link.measured)}")
    if link.collectives:
        lines.append("  collectives:")
    for c in link.collectives:
        bands = ", ".join(f"{{up_to_bytes: {b.up_to_bytes}, alpha_s: {b.alpha_s:.4e}, "
                          f"bus_bytes_per_s: {b.bus_bytes_per_s:.4e}}}" for b in c.bands)
        bits = [f"collective: {c.collective.value}", f"world_size: {c.world_size}", f"timing: {c.timing}",
                f"bands: [{bands}]", f"rows: {c.rows}", f"held_out_rows: {c.held_out_rows}"]
        if c.median_error is not None:
            bits += [f"median_error: {c.median_error:.4f}", f"worst_error: {c.worst_error:.4f}"]
        if c.campaign:
            bits.append(f"campaign: {_quote(c.campaign)}")
        lines.append("    - {" + ", ".join(bits) + "}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_interconnect(spec_text: str, link: "InterconnectSpec") -> str:
    """A GPU YAML's text with its `interconnect:` section replaced (or put before `measured:` / `fitted:`, else at
    the end); everything else kept as written."""
    import re

    section = interconnect_yaml(link)
    pattern = re.compile(r"(?ms)^interconnect:.*?(?=^\S|\Z)")
    if pattern.search(spec_text):
        return pattern.sub(lambda _: section, spec_text, count=1)
    where = re.search(r"(?m)^(measured|fitted):", spec_text)
    if where:
        return spec_text[:where.start()] + section + spec_text[where.start():]
    return spec_text.rstrip("\n") + "\n" + section


def calibrated_interconnect(gpu: "GpuSpec", rows: Sequence[Measurement], campaign: str,
                            measured: str) -> "InterconnectSpec":
    """The GPU's interconnect with its collectives fitted on `rows` (those of other GPU counts or timings it had
    are kept); the datasheet fields stay as the YAML gives them."""
    import dataclasses

    from ..comm import interconnect_of

    link = interconnect_of(gpu)
    new = collective_fits(rows, campaign)
    keys = {c.key for c in new}
    kept = tuple(c for c in link.collectives if c.key not in keys)
    return dataclasses.replace(link, collectives=kept + new, measured=measured)


__all__ = ["BandFit", "HeldOut", "MAX_BANDS", "calibrated_interconnect", "collective_fits",
           "fit_bands", "groups", "held_out", "interconnect_yaml", "with_host_floor", "with_interconnect"]
