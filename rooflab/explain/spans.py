"""What a query sees, as formulas: the visible pairs of a prefill, the keys a tile or a decode step reads.

Full attention needs none of this (its pairs are T^2 or T (T + 1) / 2 inline); a sliding window W
or a chunk C bounds each query's keys, and these steps show by how much. The values they are
checked against come from Visibility (cost/common.py), the functions the cost functions call.
"""

from __future__ import annotations

import numpy as np

from ..cost.batch import DecodeBatch
from .derivation import Unit, _Derivation
from .layer import Layer


def prefill_pairs(d: _Derivation, layer: Layer, seq_len: int, causal: bool) -> str:
    """The visible (query, key) pairs of one head over T tokens: an expression, or the symbol of a step."""
    vis = layer.visibility
    if vis.is_full:
        return "T * (T + 1) / 2" if causal else "T^2"
    expected = vis.pairs(seq_len, seq_len)
    if vis.window is not None:
        if seq_len <= vis.window:
            d.step("pairs", "T * (T + 1) / 2", expected, Unit.count,
                   "visible pairs of one head: T <= W, so the window never cuts (causal pairs)", "pairs")
        else:
            d.step("pairs", "W * (W + 1) / 2 + (T - W) * W", expected, Unit.count,
                   "visible pairs of one head: the first W queries see 1..W keys, the other T - W see W each",
                   "pairs")
    else:
        d.given("r", seq_len % vis.chunk, "tokens in the last, partial chunk: T mod C")
        d.step("pairs", "floor(T / C) * C * (C + 1) / 2 + r * (r + 1) / 2", expected, Unit.count,
               "visible pairs of one head: each whole chunk is causal within itself, then the partial one", "pairs")
    return "pairs"


def pairs_note(layer: Layer, causal: bool) -> str:
    if layer.spec.window is not None:
        return ", visible pairs only (the window)"
    if layer.spec.chunk is not None:
        return ", visible pairs only (within each chunk)"
    return ", visible (causal) pairs only" if causal else ""


def tiled_rows(d: _Derivation, layer: Layer, seq_len: int, block_q: int, causal: bool) -> tuple[str, str]:
    """Key rows one query head's tiles read, summed over its tiles (cost/flash.py, _kv_rows_per_head), and a note."""
    if not causal:
        return "ceil(T / B_r) * T", "upper bound: K and V re-read for every query tile of every query head, no L2 reuse"
    if not layer.windowed:
        return ("B_r * ceil(T / B_r) * (ceil(T / B_r) + 1) / 2 - (ceil(T / B_r) * B_r - T)",
                "upper bound: K and V re-read for every query tile of every query head, no L2 reuse")
    span_symbol = "W" if layer.spec.window is not None else "C"
    span = layer.visibility.span
    cap = span + block_q - 1
    d.given("cap", cap, f"the most keys one query tile sees: {span_symbol} + B_r - 1 (its B_r rows' spans overlap)")
    full = seq_len // block_q
    d.given("k", min(full, cap // block_q), "whole query tiles that see fewer than cap keys: "
                                            "min(floor(T / B_r), floor(cap / B_r)); the others see cap")
    rows = "B_r * k * (k + 1) / 2 + (floor(T / B_r) - k) * cap"
    if seq_len % block_q:
        rows += " + min(T, cap)"
    return rows, (f"upper bound: each query tile reads at most cap keys of K and V ({span_symbol} + B_r - 1), "
                  "per query head, no L2 reuse")


def decode_reads(d: _Derivation, layer: Layer, lens: DecodeBatch, q_len: int, page_size: int) -> tuple[str, str, str]:
    """Keys read, visible pairs and the longest read of a decode step on a window or chunk layer.

    Returns the expressions (summed over the batch) for the keys read and the visible pairs, and the
    symbol of the most keys one sequence reads. A uniform batch shows the per-sequence formulas; a
    ragged one gives the sums, computed with the same Visibility functions paged_decode uses.
    """
    vis = layer.visibility
    read = vis.read_tokens(lens.lengths, q_len)                 # [U]
    pairs = vis.pairs(q_len, lens.lengths)                      # [U]
    pages = np.ceil(lens.lengths / page_size) - np.floor((lens.lengths - read) / page_size)
    if vis.window is not None:
        read_formula, read_note = "min(max_ctx, W + q - 1)", "the last W + q - 1 keys, or all of a shorter context"
        ragged_read = "sum of min(ctx, W + q - 1)"
    else:
        read_formula = "max_ctx - C * floor((max_ctx - q) / C)"
        read_note = "the keys since the chunk of the first new token began"
        ragged_read = "sum of ctx - C floor((ctx - q) / C)"
    d.given("n_pages", float((pages * lens.counts).sum()),
            "pages holding those keys: sum of ceil(ctx / page) - floor((ctx - read) / page)")
    if lens.is_uniform:
        d.step("read", read_formula, read[0], Unit.count, "keys each sequence reads: " + read_note, "tokens")
        d.step("pairs", _uniform_pairs(d, layer, int(lens.max_len), q_len), pairs[0], Unit.count,
               "visible (new token, key) pairs of one sequence and head", "pairs")
        return "B * read", "B * pairs", "read"
    d.given("sum_read", float((read * lens.counts).sum()), f"keys the batch reads: {ragged_read} over the sequences")
    d.given("sum_pairs", float((pairs * lens.counts).sum()),
            "visible (new token, key) pairs of one head, summed over the sequences")
    if vis.window is not None:
        d.step("read_max", read_formula, read.max(), Unit.count, "keys the longest sequence reads", "tokens")
    else:
        d.given("read_max", float(read.max()), "the most keys one sequence reads (chunk positions differ)")
    return "sum_read", "sum_pairs", "read_max"


def _uniform_pairs(d: _Derivation, layer: Layer, ctx: int, q_len: int) -> str:
    """Visible pairs of q new tokens at the end of a ctx-token sequence, one head."""
    window, chunk = layer.spec.window, layer.spec.chunk
    if window is not None:
        if ctx <= window:
            return "q * max_ctx - q * (q - 1) / 2"
        if ctx - q_len >= window:
            return "q * W"
        return "W * (W + 1) / 2 + (max_ctx - W) * W - (max_ctx - q) * (max_ctx - q + 1) / 2"
    if (ctx - q_len) // chunk == (ctx - 1) // chunk:
        return "q * (read - q) + q * (q + 1) / 2"          # the new tokens share one chunk: causal over `read`
    d.given("r_end", ctx % chunk, "max_ctx mod C: tokens of the last chunk")
    d.given("r_start", (ctx - q_len) % chunk, "(max_ctx - q) mod C: of them, the ones before the new tokens")
    return ("(max_ctx - r_end) * (C + 1) / 2 + r_end * (r_end + 1) / 2"
            " - (max_ctx - q - r_start) * (C + 1) / 2 - r_start * (r_start + 1) / 2")
