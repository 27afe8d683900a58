"""Engine-run rows (rooflab/published/engine_runs.py): a serving row reads, and each bad one is refused naming the
line, the column and what it must be; the bundled fixed-batch runs (steps/) all read, and none beats its floor."""

from __future__ import annotations

import functools
import importlib.util
import math
import sys
from pathlib import Path

import pytest

from rooflab.errors import SpecError
from rooflab.published import FOLDERS, load_published, read_rows, read_sources
from support import refused

from .rows_support import GOOD_ROW, _folder


STEP_HEADER = ("source,gpu,num_gpus,engine,engine_version,model,weight_format,kv_cache_dtype,tp,pp,dp,ep,"
               "dp_attention,speculative,enforce_eager,batch,input_len,output_len")


SERVING_ROW = "demo,h100-sxm,4,vllm,0.6,llama-3-70b,bf16,bf16,4,1,1,1,false,,,,1024,128,,inf,ttft_s,0.5,median,"


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


@functools.cache
def _step_bench():
    """benchmarks/step_vs_published.py as a module: it prices each steps/ row (floor and prediction of the whole run)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "step_vs_published.py"
    spec = importlib.util.spec_from_file_location("step_vs_published", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["step_vs_published"] = module
    spec.loader.exec_module(module)
    return module


def test_bundled_step_rows_cover_40_rows_with_their_sources():
    """Issue 29's target for the fixed-batch collection: 40 rows or more, each naming a registered source."""
    published = load_published()
    assert len(published.steps) >= 40, len(published.steps)
    assert all(row.source in published.sources and row.gpu in published.sources[row.source].gpus
               for row in published.steps)


def test_no_bundled_step_row_beats_its_floor():
    """Every steps/ row rooflab can price, its measured run against the run's floor (prefill and every decode step at
    t_floor, as benchmarks/step_vs_published.py adds them): a run faster than that is a transcription or spec defect."""
    out, _ = _step_bench().table()
    priced = [(row, t, floor) for row, t, floor, _, _ in out if floor is not None]
    beaten = [f"{row.where}: {t:.4g} s against a floor of {floor:.4g} s" for row, t, floor in priced if t < floor]
    assert priced and not beaten, "; ".join(beaten[:5])
