"""rooflab.measure.run: a tiny case of each new kernel checked against its fp64 oracle, timed, written, read back
and priced (marker gpu; skipped without one)."""

from __future__ import annotations

import pytest

from rooflab.measure.cases import Case, mla_heads
from rooflab.fit.records import read_measurements
from rooflab.fit.validate import predict_measurement
from rooflab.load import load_gpu
from rooflab.specs import AttentionHeads
from rooflab.units import DType
from rooflab.vocab import CeilingSource, Kernel


META = {"gpu_spec": "h200-sxm", "device_name": "NVIDIA H200", "date": "fixture"}


# ---------------------------------------------------------------- on a GPU

TINY = [
    Case(Kernel.flash_window, DType.fp16, heads=AttentionHeads(4, 2, 128), seq_len=300, causal=True, window=64,
         sinks=True),
    Case(Kernel.paged_window, DType.fp16, heads=AttentionHeads(8, 2, 128), batch=3, context_lens=(100, 700, 1500),
         page_size=16, window=90, splits=2, sinks=True),
    Case(Kernel.paged_multi, DType.fp16, heads=AttentionHeads(8, 2, 128), batch=2, context_lens=(40, 300),
         page_size=16, q_len=4, kv_dtype=DType.fp8_e4m3),
    Case(Kernel.mla_decode, DType.bf16, heads=mla_heads(64), batch=2, context_lens=(65, 700), page_size=64),
]


@pytest.mark.gpu
def test_tiny_new_kernel_cases_end_to_end(tmp_path):
    """Each new kernel checked against its fp64 oracle and timed by bench.run, written, read back and priced."""
    from rooflab.measure.run import run, save, tolerance

    gpu = load_gpu("h200-sxm")
    result = run(TINY, gpu.l2_bytes, with_torch=False, repeats=3, progress=None)
    assert not result.failures, result.failures
    assert [r.kernel for r in result.rows] == [c.kernel for c in TINY]
    for case, row in zip(TINY, result.rows):
        assert 0 < row.time_s < 1.0 and row.max_rel_err <= tolerance(case), row.describe()
    path = tmp_path / "tiny.csv"
    save(result, path, META)
    _, back = read_measurements(path)
    assert back == result.rows
    for row in back:
        assert float(predict_measurement(row, gpu, CeilingSource.datasheet).t_floor_s) > 0
