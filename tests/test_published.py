"""measurements/published: the strict reader (rooflab/published.py), the FLOP conventions, and every bundled GPU's
floor held against every published kernel row on it."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from rooflab.errors import SpecError
from rooflab.load import load_gpu
from rooflab.published import (DEFECT_PREFIX, FOLDERS, Convention, Implementation, KernelMetric, KernelRow,
                               kernel_floor_s, load_published, published_dir, read_rows, read_sources)
from rooflab.units import DType
from rooflab.vocab import Phase
from support import refused

HEADER = ("source,gpu,implementation,phase,dtype,batch,num_qo_heads,num_kv_heads,seq_len_q,seq_len_kv,head_dim,"
          "head_dim_v,causal,window,page_size,metric,value,note")
# A row of the FA3 figure: H100, head dim 128, 16 heads, batch 1 x 16k, non-causal, 648 TFLOP/s (panel (c)).
GOOD_ROW = "demo,h100-sxm,fa3,prefill,fp16,1,16,16,16384,16384,128,,false,,,tflops,648,panel (c)"
SOURCES = """sources:
  demo:
    title: "A demo source"
    url: "https://example.org/demo"
    section: "Figure 1"
    date: "2024-07-11"
    gpus: [h100-sxm, rtx-4090]
    implementation: "FlashAttention-3"
    convention: fa
    timing: "forward only"
    read_by: "bar labels"
"""


def _folder(tmp_path: Path, rows: list[str], sources: str = SOURCES, header: str = HEADER) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "sources.yaml").write_text(sources)
    (tmp_path / "kernels" / "demo.csv").write_text("\n".join([header, *rows]) + "\n")
    return tmp_path


def _one_row(tmp_path: Path, row: str = GOOD_ROW, **kw) -> KernelRow:
    (only,) = load_published(_folder(tmp_path, [row], **kw)).kernels
    return only


def _with(column: str, value: str) -> str:
    """GOOD_ROW with one cell replaced."""
    cells = GOOD_ROW.split(",")
    cells[HEADER.split(",").index(column)] = value
    return ",".join(cells)


# --- the bundled files ------------------------------------------------------------------------------------------

def test_every_bundled_file_loads():
    published = load_published()
    for folder in FOLDERS:
        for path in (published_dir() / folder).glob("*.csv"):
            assert path.stem in published.sources, path
    assert published.kernels and all(r.source in published.sources for r in published.kernels)


def test_bundled_kernel_rows_cover_150_rows_on_three_gpus_besides_the_h200():
    """Issue 27's target for the kernel collection."""
    gpus = Counter(r.gpu for r in load_published().kernels if r.gpu != "h200-sxm")
    assert sum(gpus.values()) >= 150 and len(gpus) >= 3, gpus


def test_every_bundled_rate_has_a_flop_convention():
    published = load_published()
    for row in published.kernels:
        if row.metric is KernelMetric.tflops:
            assert published.sources[row.source].convention in (Convention.fa, Convention.fa_no_half), row.where
        assert math.isfinite(published.time_s(row)) and published.time_s(row) > 0


# --- conventions: a rate to seconds -----------------------------------------------------------------------------

def test_fa_convention_against_a_hand_computation(tmp_path):
    """FlashAttention-3 (arXiv 2407.08608) section 4.1: FLOP = 4 x seqlen^2 x head dim x heads (x batch), halved
    with the causal mask. Batch 1, 16 heads, T 16384, d 128: 4 x 16 x 16384^2 x 128 = 2,199,023,255,552 FLOP;
    at 648 TFLOP/s that is 3.3935 ms; causal at 616 TFLOP/s, half the FLOPs: 1.7849 ms."""
    row = _one_row(tmp_path)
    assert row.flops(Convention.fa) == 2_199_023_255_552
    assert row.time_s(Convention.fa) == pytest.approx(2_199_023_255_552 / 648e12, rel=1e-12)
    assert row.time_s(Convention.fa) == pytest.approx(3.3935e-3, rel=1e-4)
    causal = _one_row(tmp_path, _with("causal", "true").replace(",648,", ",616,"))
    assert causal.flops(Convention.fa) == 2_199_023_255_552 / 2
    assert causal.time_s(Convention.fa) == pytest.approx(1.7849e-3, rel=1e-4)


def test_flashmla_convention_never_halves(tmp_path):
    """FlashMLA's deep-dive (docs/20250422-new-kernel-deep-dive.md): FLOP = 2 h_q s_q s_k (d_k + d_v), never halved.
    h_q 128, s_q 2, s_k 4096, d_k 576, d_v 512, batch 4: 2 x 4 x 128 x 2 x 4096 x 1088 = 9,126,805,504 FLOP, causal
    or not; the fa count halves it under a causal mask."""
    row = _one_row(tmp_path, "demo,h100-sxm,flashmla,decode,bf16,4,128,1,2,4096,576,512,true,,64,tflops,500,")
    assert row.flops(Convention.fa_no_half) == 2 * 4 * 128 * 2 * 4096 * (576 + 512) == 9_126_805_504
    assert row.flops(Convention.fa) == 9_126_805_504 / 2
    assert row.time_s(Convention.fa_no_half) == pytest.approx(9_126_805_504 / 500e12)


def test_a_time_row_is_its_value(tmp_path):
    row = _one_row(tmp_path, _with("metric", "time_s").replace(",648,", ",0.0034,"))
    assert row.time_s(Convention.time) == 0.0034 and row.metric is KernelMetric.time_s


def test_rows_are_typed_and_frozen(tmp_path):
    row = _one_row(tmp_path)
    assert (row.implementation, row.phase, row.dtype, row.causal, row.head_dim_v, row.window) == \
        (Implementation.fa3, Phase.prefill, DType.fp16, False, 0, 0)
    assert row.heads.value_dim == 128 and row.defect is None
    with pytest.raises(AttributeError):
        row.value = 1.0          # type: ignore[misc]


def test_a_defect_is_a_note_with_the_prefix(tmp_path):
    row = _one_row(tmp_path, GOOD_ROW.replace("panel (c)", f"{DEFECT_PREFIX} counted causal FLOPs unhalved"))
    assert row.defect == "counted causal FLOPs unhalved"


# --- bad input: each names the file, the line, the column and the value ------------------------------------------

@pytest.mark.parametrize("column, value, says", [
    ("source", "nosuch", "names no entry of sources.yaml"),
    ("gpu", "h100-sxm5", "not a bundled GPU"),
    ("gpu", "b200", "not among source 'demo''s gpus"),
    ("implementation", "flash2", "must be one of fa2"),
    ("phase", "step", "must be one of prefill, decode"),
    ("dtype", "half", "must be one of fp64"),
    ("metric", "gbps", "must be one of tflops, time_s"),
    ("batch", "0", "whole number"),
    ("batch", "-1", "whole number"),
    ("batch", "1.5", "whole number"),
    ("num_kv_heads", "3", "must divide num_qo_heads"),
    ("head_dim", "", "empty; this column is required"),
    ("causal", "yes", "true or false"),
    ("value", "nan", "number in (0"),
    ("value", "inf", "number in (0"),
    ("value", "0", "number in (0"),
    ("value", "1e6", "above 100000 TFLOP/s"),
    ("window", "1024", "no source's FLOP convention counts a window"),
])
def test_a_bad_cell_is_refused_naming_file_line_column_and_value(tmp_path, column, value, says):
    folder = _folder(tmp_path, [GOOD_ROW, _with(column, value)])
    message = refused(lambda: load_published(folder), "demo.csv", "line 3", says, error=SpecError)
    if column != "source" or value:
        assert f"'{column}'" in message and (value in message or str(float(value)) in message or not value)


def test_a_causal_append_with_more_queries_than_keys_is_refused(tmp_path):
    row = _with("seq_len_q", "32768").replace("false", "true")
    refused(lambda: load_published(_folder(tmp_path, [row])), "line 2", "seq_len_q", "32768", error=SpecError)


def test_a_rate_needs_a_flop_convention(tmp_path):
    sources = SOURCES.replace("convention: fa", "convention: time")
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW], sources)), "line 2", "'metric'",
            "needs a FLOP convention", error=SpecError)


@pytest.mark.parametrize("header, says", [
    (HEADER.replace(",note", ""), "the header must be exactly"),
    (HEADER.replace("causal,window", "window,causal"), "the header must be exactly"),
])
def test_a_wrong_header_is_refused(tmp_path, header, says):
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW], header=header)), "demo.csv", "line 1", says,
            error=SpecError)


def test_a_row_of_the_wrong_width_is_refused(tmp_path):
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW + ",extra"])), "line 2", "19", error=SpecError)


def test_comments_and_blank_lines_are_skipped_and_counted_in_line_numbers(tmp_path):
    folder = _folder(tmp_path, ["# a comment", "", _with("batch", "x")])
    refused(lambda: load_published(folder), "line 4", "'batch'", error=SpecError)


def test_a_file_named_after_no_source_or_holding_another_sources_rows(tmp_path):
    folder = _folder(tmp_path, [GOOD_ROW])
    (folder / "kernels" / "demo.csv").rename(folder / "kernels" / "other.csv")
    refused(lambda: load_published(folder), "other.csv", "named <source-id>.csv", error=SpecError)
    sources = SOURCES + SOURCES.split("\n", 1)[1].replace("demo:", "second:")
    folder = _folder(tmp_path, [GOOD_ROW.replace("demo,", "second,", 1)], sources)
    refused(lambda: load_published(folder), "demo.csv", "line 2", "names its source 'demo'", error=SpecError)


@pytest.mark.parametrize("edit, says", [
    (("convention: fa", "convention: flops"), "must be one of fa, fa_no_half, time"),
    (('date: "2024-07-11"', 'date: "11 July 2024"'), "YYYY-MM-DD"),
    (('date: "2024-07-11"', 'date: "2024-13-01"'), "YYYY-MM-DD"),
    (("gpus: [h100-sxm, rtx-4090]", "gpus: [h100]"), "not a bundled GPU"),
    (("gpus: [h100-sxm, rtx-4090]", "gpus: []"), "list of bundled GPU names"),
    (('    read_by: "bar labels"\n', ""), "sources.demo.read_by"),
    (('url: "https://example.org/demo"', 'ulr: "https://example.org/demo"'), "unknown field"),
    (("  demo:", "  Demo_1:"), "lower-case"),
    (('    section: "Figure 1"\n', '    section: "Figure 1"\n    section: "Figure 2"\n'), "duplicate key"),
])
def test_a_bad_source_is_refused_naming_the_field(tmp_path, edit, says):
    folder = _folder(tmp_path, [GOOD_ROW], SOURCES.replace(*edit))
    refused(lambda: read_sources(folder / "sources.yaml"), "sources.yaml", says, error=SpecError)


# --- steps and serving -----------------------------------------------------------------------------------------

STEP_HEADER = ("source,gpu,num_gpus,engine,engine_version,model,weight_format,kv_cache_dtype,tp,pp,dp,ep,"
               "dp_attention,speculative,batch,input_len,output_len")
SERVING_ROW = "demo,h100-sxm,4,vllm,0.6,llama-3-70b,bf16,bf16,4,1,1,1,false,,,1024,128,,inf,ttft_s,0.5,median,"


def _serving(tmp_path: Path, row: str) -> Path:
    path = tmp_path / "demo.csv"
    path.write_text(STEP_HEADER + ",concurrency,request_rate,metric,value,statistic,note\n" + row + "\n")
    return path


def test_a_serving_row_reads(tmp_path):
    sources = read_sources(_folder(tmp_path, [GOOD_ROW]) / "sources.yaml")
    (row,) = read_rows(_serving(tmp_path, SERVING_ROW), FOLDERS["serving"], sources)
    assert row.request_rate == math.inf and row.concurrency == 0 and row.statistic.value == "median"


@pytest.mark.parametrize("edit, column, says", [
    ((",128,,inf", ",128,8,inf"), "concurrency", "exactly one of concurrency and request_rate"),
    ((",median,", ",p50,"), "statistic", "must be one of mean, median, p90, p99"),
    ((",ttft_s,0.5,median,", ",output_tokens_per_s,900,median,"), "statistic", "a throughput has no statistic"),
    ((",ttft_s,0.5,median,", ",ttft_s,0.5,,"), "statistic", "a latency needs a statistic"),
    (("llama-3-70b", "no-such-model"), "model", "bundled model"),
    (("bf16,bf16,4", "bf16,fp8,4"), "kv_cache_dtype", "must be one of fp16"),
    (("h100-sxm,4,vllm", "h100-sxm,2,vllm"), "num_gpus", "fewer than tp x pp"),
])
def test_a_bad_serving_row_is_refused(tmp_path, edit, column, says):
    sources = read_sources(_folder(tmp_path, [GOOD_ROW]) / "sources.yaml")
    path = _serving(tmp_path, SERVING_ROW.replace(*edit))
    refused(lambda: read_rows(path, FOLDERS["serving"], sources), "demo.csv", "line 2", f"'{column}'", says,
            error=SpecError)


# --- floors: no published row beats one unless it is a recorded defect ------------------------------------------

_PUBLISHED = load_published()
_GPUS = sorted({r.gpu for r in _PUBLISHED.kernels})


@pytest.mark.parametrize("gpu_name", _GPUS)
def test_no_published_kernel_row_beats_its_gpus_floor(gpu_name):
    """Every row on the GPU against rooflab's floor for its shape (kernel_floor_s, the GPU's default floor roofs):
    a row faster than its floor is a spec defect to fix or a measurement defect to record (note 'defect: why')."""
    gpu = load_gpu(gpu_name)
    beaten = []
    for row in (r for r in _PUBLISHED.kernels if r.gpu == gpu_name):
        floor_s, measured_s = kernel_floor_s(row, gpu), _PUBLISHED.time_s(row)
        if measured_s < floor_s and row.defect is None:
            beaten.append(f"{row.where} ({row.implementation.value}, {row.value:g}): {floor_s / measured_s:.2f}x")
    assert not beaten, f"{len(beaten)} rows beat {gpu_name}'s floor: " + "; ".join(beaten[:5])


def test_the_floor_is_a_flash_prefill_roofline(tmp_path):
    """Non-causal H100 row of 2.2 PFLOP (rooflab's count equals the fa count there): its floor is that over the
    H100's floor-roof fp16 rate, or the bytes over the bandwidth, whichever is longer."""
    from rooflab.cost.flash import flash_prefill
    from rooflab.floors import Ceilings, floor

    row, gpu = _one_row(tmp_path), load_gpu("h100-sxm")
    expected = floor(flash_prefill(row.heads, 16384, 1, DType.fp16, False, gpu=gpu), Ceilings.of(gpu, DType.fp16))
    assert kernel_floor_s(row, gpu) == pytest.approx(float(expected.t_floor_s))
    assert kernel_floor_s(row, gpu) >= row.flops(Convention.fa) / Ceilings.of(gpu, DType.fp16).matmul_flop_per_s


def test_an_absorbed_mla_decode_is_floored_as_one_latent_read_once(tmp_path):
    """FlashMLA's shape (h_kv 1, d 576 = d_c 512 + d_R 64, d_v 512): K and V are one latent, read once, so the floor
    is at least B s_k 576 x 2 bytes over the bandwidth and below what separate K and V (576 + 512) would take.
    128 sequences of 4096 keys: 603,979,776 latent bytes."""
    row = _one_row(tmp_path, "demo,h100-sxm,flashmla,decode,bf16,128,16,1,1,4096,576,512,true,,64,time_s,0.000215,")
    gpu = load_gpu("h100-sxm")
    latent_bytes = 128 * 4096 * 576 * 2
    assert row.is_mla_latent and latent_bytes == 603_979_776
    floor_s = kernel_floor_s(row, gpu)
    assert latent_bytes / gpu.hbm_bandwidth_bytes_per_s <= floor_s < latent_bytes * 1088 / 576 / gpu.hbm_bandwidth_bytes_per_s
