"""Tests of rooflab/specs/launch.py: a GPU's measured launch times (measured.launch), checked when built."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu
from rooflab.errors import SpecError
from rooflab.load import parse_yaml, spec_from_mapping
from rooflab.specs import GpuSpec, LaunchTimes
from rooflab.specs.launch import SMALL_OP_NAMES

H200 = load_gpu("h200-sxm")


def test_the_h200_carries_its_measured_launch_times():
    """The times the step used to hard-code (measurements/h200x2-gemm.csv's small_op_* metadata; measurements/
    launch/h200-eager-launch.csv) now live in hardware/h200-sxm.yaml's measured.launch."""
    launch = H200.measured.launch
    assert launch.batches == (1, 8, 64)
    assert launch.graph_s["rms_norm"] == (4.42e-6, 4.49e-6, 4.57e-6)
    assert launch.eager_s["silu_mul"] == (2.846e-5, 2.878e-5, 3.046e-5)
    assert launch.eager_host_s == 1.848e-5
    assert set(launch.graph_s) == set(launch.eager_s) == set(SMALL_OP_NAMES)


def test_a_gpu_without_a_measurement_has_none():
    assert load_gpu("h100-sxm").measured is None or load_gpu("h100-sxm").measured.launch is None
    assert load_gpu("mi300x").measured is None or load_gpu("mi300x").measured.launch is None


@pytest.mark.parametrize("change, named", [
    (dict(batches=(8, 1, 64)), "batches"),
    (dict(batches=(1, 1, 64)), "batches"),
    (dict(graph_s={op: (1e-6, 2e-6) for op in SMALL_OP_NAMES}), "graph_s.rms_norm"),
    (dict(eager_s={op: (1e-5,) * 3 for op in SMALL_OP_NAMES if op != "q_copy"}), "eager_s.q_copy"),
    (dict(eager_host_s=-1.0), "eager_host_s"),
    (dict(graph_s={"rms_norm": (1e-6,) * 3, "rms_nrom": (1e-6,) * 3}), "graph_s.rms_nrom"),
    (dict(graph_s={op: (1e-6, 2e-6, 5.0) for op in SMALL_OP_NAMES}), "graph_s.rms_norm"),
])
def test_a_bad_table_is_refused_naming_the_field(change, named):
    with pytest.raises(SpecError, match=named.replace(".", r"\.")):
        dataclasses.replace(H200.measured.launch, **change)


def test_the_yaml_section_reads_through_the_loader_and_bad_keys_are_named():
    launch = H200.measured.launch
    text = (f"batches: [1, 8]\ngraph_s: {{{', '.join(f'{op}: [1.0e-6, 2.0e-6]' for op in SMALL_OP_NAMES)}}}\n"
            f"eager_s: {{{', '.join(f'{op}: [1.0e-5, 2.0e-5]' for op in SMALL_OP_NAMES)}}}\n"
            "eager_host_s: 1.8e-5\nsource: test\n")
    built = spec_from_mapping(LaunchTimes, parse_yaml(text, "t.yaml"), "t.yaml")
    assert built.graph_s["kv_append"] == (1e-6, 2e-6) and built.batches == (1, 8)
    with pytest.raises(SpecError, match="eager_hots_s"):
        spec_from_mapping(LaunchTimes, parse_yaml(text + "eager_hots_s: 1\n", "t.yaml"), "t.yaml")
    gpu = dataclasses.replace(H200, measured=dataclasses.replace(H200.measured, launch=launch))
    assert isinstance(gpu, GpuSpec) and gpu.measured.launch == launch


def test_a_section_with_only_the_layer_kernels_loads_and_prices_what_it_can():
    """A user's GPU YAML need not carry the routing or block-fp8 launches: it loads; Llama's step is predicted;
    DeepSeek-V3's block-fp8 step, which needs them, has no prediction and says which times are missing."""
    from rooflab.deployment import Deployment
    from rooflab.load import load_model
    from rooflab.step import step_report
    from rooflab.specs.launch import REQUIRED_OP_NAMES

    launch = H200.measured.launch
    slim = dataclasses.replace(launch, graph_s={op: launch.graph_s[op] for op in REQUIRED_OP_NAMES},
                               eager_s={op: launch.eager_s[op] for op in REQUIRED_OP_NAMES})
    gpu = dataclasses.replace(H200, measured=dataclasses.replace(H200.measured, launch=slim))
    assert step_report(load_model("llama-3-8b"), gpu, 8, 2048, check_memory=False).t_predicted_s is not None
    r = step_report(load_model("deepseek-v3"), gpu, 8, 2048, deployment=Deployment(tensor_parallel=8),
                    check_memory=False)
    assert r.t_predicted_s is None
    assert any("has no act_quant times" in note for note in r.notes)
