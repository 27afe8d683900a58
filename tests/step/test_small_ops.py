"""Tests of rooflab/step/small_ops.py: the small kernels at the GPU's measured launch times (measured.launch)."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.predict import MEASURED_HERE
from rooflab.step import step_report
from rooflab.step.small_ops import reference_launch, small_op_time

H200 = load_gpu("h200-sxm")
LLAMA = load_model("llama-3-8b")


def _elementwise(report):
    return next(row for row in report.rows if row.variant == "elementwise")


def test_small_ops_table():
    graph = reference_launch().graph_s
    assert small_op_time("rms_norm", 1, 4096, 14336, 4e12) == graph["rms_norm"][0]
    assert graph["rms_norm"][0] <= small_op_time("rms_norm", 8, 4096, 14336, 4e12) <= graph["rms_norm"][1]
    assert small_op_time("residual_add", 1064, 4096, 14336, 4e12) == pytest.approx(
        graph["residual_add"][2] + 1000 * 3 * 4096 * 2 / 4e12)


def test_the_old_tables_read_the_h200s_yaml():
    from rooflab.step import EAGER_HOST_S, EAGER_SMALL_OPS, SMALL_OPS

    launch = H200.measured.launch
    assert SMALL_OPS == dict(launch.graph_s) and EAGER_SMALL_OPS == dict(launch.eager_s)
    assert EAGER_HOST_S == launch.eager_host_s == 1.848e-5


@pytest.mark.parametrize("args, named", [(("nope", 1, 4096, 14336, 1e12), "op"),
                                         (("rms_norm", -1, 4096, 14336, 1e12), "tokens"),
                                         (("rms_norm", 1, 4096, 14336, 0), "bw"),
                                         (("rms_norm", 1, 4096, 14336, float("nan")), "bw"),
                                         (("rms_norm", 1, 4096, 14336, 1e12, False, {"rms_norm": 1}), "launch")])
def test_small_op_time_names_a_bad_argument(args, named):
    """An unknown op raised KeyError; a bandwidth of 0 divided by zero past the table, NaN gave NaN."""
    with pytest.raises(InputError, match=named):
        small_op_time(*args)


def test_a_gpu_prices_its_small_kernels_at_its_own_measured_times():
    """A GPU whose YAML holds measured.launch uses it, not the H200's: doubled times double the row's prediction."""
    h100 = load_gpu("h100-sxm")
    base = _elementwise(step_report(LLAMA, h100, 8, 8192))
    assert base.predicted_from == "transferred from h200-sxm"
    launch = H200.measured.launch
    doubled = dataclasses.replace(launch, graph_s={op: tuple(2 * t for t in ts) for op, ts in launch.graph_s.items()})
    measured = dataclasses.replace(H200.measured, launch=doubled, gemm_flop_per_s={"bf16": 7e14})
    own = dataclasses.replace(h100, measured=measured)
    r = step_report(LLAMA, own, 8, 8192)
    row = _elementwise(r)
    assert row.predicted_from == MEASURED_HERE
    assert row.t_predicted_s == pytest.approx(2 * base.t_predicted_s)
    assert any("measured on h100-sxm" in n for n in r.notes) and not any("transferred to" in n for n in r.notes)


def test_no_launch_times_transfer_to_another_vendor():
    """The H200's launch times were once applied to every GPU; an AMD part now gets no small-kernel prediction,
    and a note says why (as the other fits, which do not transfer to AMD either)."""
    r = step_report(LLAMA, load_gpu("mi300x"), 8, 8192)
    row = _elementwise(r)
    assert row.t_predicted_s is None and row.predicted_from is None and row.t_floor_s > 0
    assert any(n.startswith("no prediction for norms and elementwise") and "mi300x" in n for n in r.notes)
