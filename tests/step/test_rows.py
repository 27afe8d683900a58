"""Tests of rooflab/step/rows.py: a step row is the report's row (rooflab.rows.Row), its bound the floor's."""

from __future__ import annotations

import numpy as np

from rooflab.floors import Floors
from rooflab.load import load_gpu, load_model
from rooflab.rows import Row
from rooflab.step import StepRow, step_report
from rooflab.step.rows import floor_row, overlapped_floor_s, scaled, summed

H200 = load_gpu("h200-sxm")


def _floors(compute, memory, exp=0.0):
    return Floors(np.float64(10.0), np.float64(5.0), compute, memory, max(compute, memory, exp), 1.0, exp)


def test_a_step_row_is_a_report_row_with_the_floors_bound():
    for compute, memory, exp in ((1.0, 2.0, 0.0), (3.0, 2.0, 0.0), (1.0, 2.0, 4.0), (2.0, 2.0, 1.0)):
        f = _floors(compute, memory, exp)
        row = floor_row("gemm", "x", f, None)
        assert isinstance(row, Row) and row.bound == str(f.bound) and row.intensity_flop_per_byte == 2.0


def test_the_json_keeps_every_step_key():
    r = step_report(load_model("llama-3-8b"), H200, 8, 8192, tp=2)
    for row in r.rows:
        d = row.to_dict()
        for key in ("variant", "label", "flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s",
                    "t_memory_s", "t_floor_s", "bound", "t_predicted_s", "predicted_impl", "layer_type",
                    "num_layers", "calls", "weight_bytes", "comm_bytes", "t_exp_s", "part", "source",
                    "predicted_from"):
            assert key in d, key


def test_scaled_and_summed_rows():
    rows = [floor_row("gemm", "a", _floors(1.0, 2.0), 3.0, calls=2), floor_row("gemm", "b", _floors(4.0, 1.0), 5.0,
                                                                              calls=1)]
    half = scaled(rows[0], 0.5)
    assert half.t_floor_s == 1.0 and half.t_predicted_s == 1.5 and half.calls == 1
    both = summed(rows, 2, "draft", "d")
    assert both.t_predicted_s == 16.0 and both.calls == 6 and both.t_compute_s == 10.0 and both.t_memory_s == 6.0
    assert both.bound == "compute" and isinstance(both, StepRow)
    assert overlapped_floor_s(rows) == max(1.0 + 4.0, 2.0 + 1.0)
