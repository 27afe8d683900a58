"""The benchmark's parts that need no GPU: the sweep, the measurement rows it makes, and the
one-line error where CuPy or a device is missing."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from rooflab.bench.cases import sweep
from rooflab.vocab import Kernel
from rooflab.bench.validate import predict_measurement
from rooflab.cli import app
from rooflab.load import load_gpu
from rooflab.vocab import CeilingSource

NO_CUPY = importlib.util.find_spec("cupy") is None

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


@pytest.mark.skipif(not NO_CUPY, reason="CuPy is installed here: the missing-CuPy message cannot be seen")
@pytest.mark.parametrize("command", [["bench"], ["calibrate"], ["bench", "--quick", "-k", "merge"]])
def test_gpu_commands_say_what_is_missing(command):
    r = CliRunner().invoke(app, command)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "CuPy is not installed" in r.stderr and "rooflab[gpu]" in r.stderr


def test_fp8_decode_cases_pair_fp16_and_fp8_at_the_recommended_splits():
    from rooflab.bench.cases import LLAMA3_8B, fp8_decode_cases
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
    from rooflab.bench.cases import fp8_decode_cases

    gpu = load_gpu("h200-sxm")
    fp16, fp8 = fp8_decode_cases()[:2]                          # batch 128 x 8192
    bytes16, bytes8 = (float(predict_measurement(c.measurement("rooflab", 1e-3, 1e-3, 1e-3, 20, 0.0), gpu,
                                                 CeilingSource.datasheet).hbm_bytes) for c in (fp16, fp8))
    kv16 = 128 * 8192 * 2 * 8 * 128 * 2                          # K and V, [B, h_kv, T, d] fp16
    assert bytes16 - bytes8 == pytest.approx(kv16 / 2, rel=1e-12)
