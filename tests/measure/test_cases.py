"""Tests of rooflab/measure/cases.py: the benchmark's cases, without a GPU.

The campaign grid and the new kernels' cases (window, chunk, multi-token and MLA decode, fp8 KV), each priced
with finite figures, predicted, and within the sweep's GPU-time budget; the rows they make round-trip and need
their kernel's columns. FLOPs are checked against visible (query, key) pairs counted by hand from the masks'
definitions (rooflab.cost.common.Visibility): 2 FLOPs a multiply-add over d for Q K^T and over d_v for P V, per
visible pair and query head; MLA as FlashMLA counts it, 2 (576 + 512) per pair and head (kernels.mla.mla_flops).
"""

from __future__ import annotations

import math

import pytest

from rooflab.measure.cases import Case, mla_heads, new_kernel_cases, sweep
from rooflab.fit.costs import measurement_cost
from rooflab.fit.records import FIELDS, Measurement, V1_FIELDS, read_measurements, write_measurements
from rooflab.fit.validate import predict_measurement
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu
from rooflab.specs import AttentionHeads
from rooflab.units import DType
from rooflab.vocab import CeilingSource, Kernel
from support import META, REPEATS, _impl, _row


NEW = {Kernel.flash_window, Kernel.paged_window, Kernel.paged_multi, Kernel.mla_decode}


WARMUP = 3
#: A kernel is taken to reach this fraction of its floor when the sweep's GPU time is estimated.
FRACTION_OF_FLOOR = 0.7
#: The GPU seconds the sweep's timed calls may take (the campaign's new-kernel step has 180 s of wall time,
#: most of it input building, oracle checks and the L2 flush between repeats).
BUDGET_S = 150.0


# ---------------------------------------------------------------- the cases

def test_new_kernel_cases_cover_the_four_kernels_on_the_campaign_grid():
    cases = new_kernel_cases()
    assert {c.kernel for c in cases} == NEW
    by = {k: [c for c in cases if c.kernel is k] for k in NEW}
    prefill = by[Kernel.flash_window]
    assert {c.seq_len for c in prefill} == {8192, 16384, 32768} and {c.window for c in prefill} >= {1024, 4096}
    assert {c.sinks for c in prefill} == {False, True} and any(c.chunk == 8192 for c in prefill)
    assert all(c.causal and (c.window or c.chunk) for c in prefill)
    window = by[Kernel.paged_window]
    assert {c.window for c in window} >= {128, 4096} and {c.batch for c in window} == {16, 32, 64}
    assert {n for c in window for n in c.context_lens} <= set(range(8192, 32769))
    multi = by[Kernel.paged_multi]
    assert {c.q_len for c in multi} == {2, 4, 8} and {c.kv_dtype for c in multi} == {None, DType.fp8_e4m3}
    assert {c.batch for c in multi} == {32, 128} and {c.context_lens[0] for c in multi} == {4096, 8192}
    mla = by[Kernel.mla_decode]
    assert {c.heads.num_qo_heads for c in mla} == {16, 128} and {c.q_len for c in mla} == {1, 2}
    assert {c.kv_dtype for c in mla} == {None, DType.fp8_e4m3} and {c.dtype for c in mla} == {DType.bf16}
    assert all(c.page_size == 64 and c.heads == AttentionHeads(c.heads.num_qo_heads, 1, 576, 512) for c in mla)
    assert len({c.label() for c in cases}) == len(cases), "two cases print alike"
    quick = new_kernel_cases(quick=True)
    assert {c.kernel for c in quick} == NEW and set(quick) < set(cases)


def test_every_new_case_is_priced_with_finite_positive_figures():
    gpu = load_gpu("h200-sxm")
    for case in new_kernel_cases():
        m = _row(case)
        for source in (CeilingSource.datasheet, CeilingSource.calibrated):
            p = predict_measurement(m, gpu, source)
            for value in (p.t_floor_s, p.flops, p.hbm_bytes):
                assert math.isfinite(float(value)) and float(value) > 0, (case.label(), source)
        with_parallelism = predict_measurement(m, gpu, CeilingSource.calibrated, units_per_sm=1.5)
        assert float(with_parallelism.t_floor_s) >= float(p.t_floor_s) * (1 - 1e-12)


def test_the_sweep_fits_its_gpu_time_budget():
    """Estimated GPU time of the timed calls: floor / FRACTION_OF_FLOOR for each of warm-up + repeats calls."""
    gpu = load_gpu("h200-sxm")
    seconds = sum(float(predict_measurement(_row(c), gpu, CeilingSource.calibrated).t_floor_s)
                  / FRACTION_OF_FLOOR * (WARMUP + REPEATS) for c in new_kernel_cases())
    assert 0 < seconds < BUDGET_S


# ---------------------------------------------------------------- FLOPs and bytes by hand

def _cost(case: Case):
    return measurement_cost(_row(case), load_gpu("h200-sxm"))


def test_window_and_chunk_prefill_flops_are_the_visible_pairs():
    heads = AttentionHeads(2, 1, 64)                       # h 2, d = d_v = 64
    # T 8, window 3: query i sees keys max(0, i - 2) .. i, min(i + 1, 3) of them: 1 + 2 + 3 x 6 = 21 pairs a head
    pairs = 1 + 2 + 3 * 6
    window = Case(Kernel.flash_window, DType.fp16, heads=heads, seq_len=8, causal=True, window=3)
    assert _cost(window).flops == 2 * pairs * (64 + 64) * 2            # 2 FLOP x pairs x (d + d_v) x h = 10752
    # T 10, chunk 4: chunks {0..3}, {4..7}, {8, 9}; query i sees its chunk up to i: (1+2+3+4) x 2 + (1+2) = 23
    pairs = 10 * 2 + 3
    chunk = Case(Kernel.flash_window, DType.fp16, heads=heads, seq_len=10, causal=True, chunk=4)
    assert _cost(chunk).flops == 2 * pairs * (64 + 64) * 2
    # sinks add one exp a (query, head) and no FLOPs
    sinks = Case(Kernel.flash_window, DType.fp16, heads=heads, seq_len=8, causal=True, window=3, sinks=True)
    assert _cost(sinks).flops == _cost(window).flops
    assert _cost(sinks).kernels[0].exp_ops == _cost(window).kernels[0].exp_ops + 8 * 2


def test_windowed_decode_reads_from_the_first_visible_keys_page():
    from rooflab.kernels.testing import decode_key_range

    heads = AttentionHeads(4, 2, 64)
    # ctx 10, q_len 2 (positions 8 and 9), window 3: token 8 sees keys 6..8, token 9 keys 7..9: 3 + 3 = 6 pairs.
    # Together they need keys 6..9 (W + q_len - 1 = 4 keys), on pages 1 and 2 of 4-key pages (keys 4..7, 8..11).
    case = Case(Kernel.paged_window, DType.fp16, heads=heads, batch=2, context_lens=(10, 10), page_size=4, q_len=2,
                 window=3)
    cost = _cost(case)
    assert cost.flops == 2 * 4 * (64 + 64) * 6 * 2                        # 2 FLOP x h x (d + d_v) x pairs x B
    first, stop = decode_key_range(10, 2, 3)                                # what paged_decode.cu reads
    assert (first, stop) == (6, 10)
    assert cost.kv_bytes == 2 * (stop - first) * 2 * (64 + 64) * 2          # B x keys x h_kv x (d + d_v) x 2 bytes
    pages = -(-stop // 4) - first // 4                                     # block-table entries from first's page
    assert pages == 2 and cost.block_table_bytes == 4 * (2 * pages + 2)    # int32 entries and context lengths


def test_multi_token_decode_flops_count_the_causal_new_tokens():
    heads = AttentionHeads(4, 2, 64)
    # ctx 5, q_len 3: the new tokens sit at positions 2, 3, 4 and see 3, 4, 5 keys:
    # 12 pairs = q (ctx - q) + q (q + 1) / 2
    case = Case(Kernel.paged_multi, DType.fp16, heads=heads, batch=1, context_lens=(5,), page_size=16, q_len=3)
    assert _cost(case).flops == 2 * 4 * (64 + 64) * 12
    one = Case(Kernel.paged, DType.fp16, heads=heads, batch=1, context_lens=(5,), page_size=16)
    assert _cost(case).kv_bytes == _cost(one).kv_bytes                    # the new tokens share every page read


def test_mla_decode_flops_as_flashmla_counts_them():
    from rooflab.kernels.mla import mla_flops

    # h 16, ctx 100, q_len 2: the new tokens at 98 and 99 see 99 and 100 latents: 199 pairs a head
    case = Case(Kernel.mla_decode, DType.bf16, heads=mla_heads(16), batch=1, context_lens=(100,), page_size=64,
                q_len=2)
    cost = _cost(case)
    assert cost.flops == 2 * (576 + 512) * 16 * 199 == mla_flops(16, 199)
    assert cost.kv_bytes == 100 * 576 * 2                                 # the latent, read once for all heads
    fp8 = Case(Kernel.mla_decode, DType.bf16, heads=mla_heads(16), batch=1, context_lens=(100,), page_size=64,
               q_len=2, kv_dtype=DType.fp8_e4m3)
    assert _cost(fp8).kv_bytes == 100 * 576


# ---------------------------------------------------------------- rows and files

def test_new_rows_round_trip_with_their_columns(tmp_path):
    rows = [_row(c, _impl(c), 1e-4 * (i + 1)) for i, c in enumerate(new_kernel_cases())]
    assert {"q_len", "window", "chunk", "sinks", "v_head_dim"} <= set(FIELDS) - set(V1_FIELDS)
    path = tmp_path / "new.csv"
    write_measurements(path, rows, META)
    meta, back = read_measurements(path)
    assert back == rows and meta["gpu_spec"] == "h200-sxm"
    mla = next(r for r in back if r.kernel is Kernel.mla_decode and r.q_len == 2)
    assert (mla.head_dim, mla.v_head_dim, mla.num_kv_heads) == (576, 512, 1) and "576/512" in mla.shape()
    assert any(r.sinks and r.window == 4096 for r in back) and any(r.chunk == 8192 for r in back)


def _file(tmp_path, header: list[str], cells: list[str]):
    path = tmp_path / "m.csv"
    path.write_text("# rooflab measurements v1\n# gpu_spec: h200-sxm\n" + ",".join(header) + "\n"
                    + ",".join(cells) + "\n")
    return path


def _cells(m: Measurement, header: list[str]) -> list[str]:
    return ["" if isinstance(getattr(m, f), float) and math.isnan(getattr(m, f)) else
            str(int(getattr(m, f)) if isinstance(getattr(m, f), bool) else getattr(m, f)) for f in header]


def test_strict_reading_needs_each_new_kernels_columns(tmp_path):
    multi = _row(next(c for c in new_kernel_cases() if c.kernel is Kernel.paged_multi))
    no_q_len = [f for f in FIELDS if f != "q_len"]
    with pytest.raises(InputError, match="paged_multi row needs q_len"):
        read_measurements(_file(tmp_path, no_q_len, _cells(multi, no_q_len)))
    window = _row(Case(Kernel.paged_window, DType.fp16, batch=2, context_lens=(64, 64), page_size=16, window=16))
    unwindowed = Measurement(**{**window.__dict__, "window": 0})
    with pytest.raises(InputError, match="paged_window row needs window or chunk"):
        read_measurements(_file(tmp_path, FIELDS, _cells(unwindowed, FIELDS)))
    chunked = Measurement(**{**unwindowed.__dict__, "chunk": 32})
    assert read_measurements(_file(tmp_path, FIELDS, _cells(chunked, FIELDS)))[1] == [chunked]


#: The kernels of the first campaigns: the bundled sweep measures each of them (later kernels join as measured).
FIRST_ROUND = {Kernel.naive, Kernel.naive_softmax, Kernel.flash, Kernel.paged, Kernel.split_kv, Kernel.merge}


def test_sweep_covers_every_kernel_and_the_target_shapes():
    cases = sweep()
    assert {c.kernel for c in cases} >= FIRST_ROUND
    labels = {c.label() for c in cases}
    # the performance targets' shapes (RESULTS.md) are in the sweep
    assert "flash 32/8x128 fp16 T=8192 b=1" in labels and "flash 32/8x128 fp16 T=8192 b=1 causal" in labels
    assert any(c.kernel == "paged" and c.batch == 128 and c.context_lens[0] == 8192 for c in cases)
    assert any(c.kernel == "split_kv" and c.context_lens == (32768,) and c.splits == 17 for c in cases)
    assert any(c.kernel == "merge" and c.tokens == 16384 and c.dtype.value == "bf16" for c in cases)
    assert len(sweep(quick=True)) < len(cases)


def test_every_case_has_a_prediction():
    gpu = load_gpu("h200-sxm")
    for case in sweep():
        row = case.measurement("rooflab", 1e-3, 1e-3, 1e-3, 20, 0.0)
        p = predict_measurement(row, gpu, CeilingSource.datasheet)
        assert float(p.t_floor_s) > 0 and float(p.hbm_bytes) > 0


def test_fp8_decode_cases_pair_fp16_and_fp8_at_the_recommended_splits():
    from rooflab.measure.cases import LLAMA3_8B, fp8_decode_cases
    from rooflab.cost.paged import recommend_splits
    from rooflab.units import DType

    gpu = load_gpu("h200-sxm")
    cases = fp8_decode_cases()
    assert [c.kv_dtype for c in cases] == [None, DType.fp8_e4m3] * (len(cases) // 2)   # fp16 rows even: validate fits on them
    for fp16, fp8 in zip(cases[::2], cases[1::2]):
        assert (fp16.kernel, fp16.context_lens, fp16.splits) == (fp8.kernel, fp8.context_lens, fp8.splits)
        for kv in (None, DType.fp8_e4m3):
            assert recommend_splits(LLAMA3_8B, fp8.context_lens, gpu.num_sms, 16, DType.fp16, kv,
                                    gpu.units_per_sm) == fp8.splits
    assert {c.label() for c in cases if c.kv_dtype} <= {c.label() for c in sweep()}
    assert "kv fp8_e4m3" in cases[1].label() and "kv" not in cases[0].label()


def test_fp8_kv_rows_are_predicted_with_half_the_kv_bytes():
    from rooflab.measure.cases import fp8_decode_cases

    gpu = load_gpu("h200-sxm")
    fp16, fp8 = fp8_decode_cases()[:2]                          # batch 128 x 8192
    bytes16, bytes8 = (float(predict_measurement(c.measurement("rooflab", 1e-3, 1e-3, 1e-3, 20, 0.0), gpu,
                                                 CeilingSource.datasheet).hbm_bytes) for c in (fp16, fp8))
    kv16 = 128 * 8192 * 2 * 8 * 128 * 2                          # K and V, [B, h_kv, T, d] fp16
    assert bytes16 - bytes8 == pytest.approx(kv16 / 2, rel=1e-12)


# --- the fitted decode parallelism, and the split counts it recommends ----------------------------

SPLITS = data_dir("measurements") / "h200-splits.csv"


def test_recommended_splits_are_near_the_fastest_measured():
    # measurements/h200-splits.csv times split-KV over a grid of counts for seven decode workloads
    # (benchmarks/split_recommendation.py); with the fitted value the recommended count is within
    # 10% of the fastest measured one everywhere, with units_per_sm = 1 it is up to 49% slower
    from rooflab.measure.cases import LLAMA3_8B
    from rooflab.cost.paged import recommend_splits

    meta, rows = read_measurements(SPLITS)
    assert meta["device_name"] == "NVIDIA H200" and meta["git_commit"] and meta["command"]
    times: dict[tuple[int, int], dict[int, float]] = {}
    for m in rows:
        times.setdefault((m.lengths()[0], m.batch), {})[m.splits] = m.time_s
    assert len(times) == 7
    gpu = load_gpu("h200-sxm")
    fitted, plain = [], []
    for (ctx, batch), by_splits in times.items():
        best = min(by_splits.values())
        for k, out in ((gpu.units_per_sm, fitted), (1.0, plain)):
            s = recommend_splits(LLAMA3_8B, [ctx] * batch, gpu.num_sms, units_per_sm=k)
            out.append(by_splits[s] / best)
    assert max(fitted) < 1.10, fitted
    assert max(plain) > 1.25 and sum(fitted) < sum(plain)


# ---------------------------------------------------------------- session 7: the gap campaign and the MLA sweep

def test_gap_campaign_splits_reach_the_recommended_count():
    from rooflab.measure.cases import GAP_SPLIT_WORKLOADS, LLAMA3_8B, gap_campaign_cases
    from rooflab.cost.paged import recommend_splits

    gpu = load_gpu("h200-sxm")
    for batch, length, splits in GAP_SPLIT_WORKLOADS:
        assert max(splits) == recommend_splits(LLAMA3_8B, [length] * batch, gpu.num_sms, 16,
                                               units_per_sm=gpu.units_per_sm)
    cases = gap_campaign_cases()
    flash = [c for c in cases if c.kernel is Kernel.flash]
    assert {c.batch for c in flash} >= {1, 32} and min(c.seq_len for c in flash) == 256
    assert max(c.seq_len for c in flash) == 4096 and {c.heads.head_dim for c in flash} == {64, 128}
    assert {c.heads.group_size for c in flash} == {4, 8} and {c.causal for c in flash} == {False, True}
    paged = [c for c in cases if c.kernel is Kernel.paged]
    assert {c.batch for c in paged} >= {1, 64} and {c.context_lens[0] for c in paged} >= {1024, 131072}
    assert len({c.label() for c in cases}) == len(cases)


def test_mla_sweep_covers_heads_q_len_and_latent_dtypes():
    from rooflab.measure.cases import mla_sweep_cases

    cases = mla_sweep_cases()
    assert {c.heads.num_qo_heads for c in cases} == {16, 32, 64, 128} and {c.q_len for c in cases} == {1, 2, 3, 4}
    assert {c.kv_dtype for c in cases} == {None, DType.fp8_e4m3} and len({c.label() for c in cases}) == len(cases)
