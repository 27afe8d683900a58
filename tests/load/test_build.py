"""Spec files built into specs (rooflab/load/build.py): every unknown, missing or bad field an error naming the file,
the field and the value, all of a file's problems at once; old spellings read as the new; bounds on every field."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from rooflab.errors import SpecError
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.specs import GpuSpec
from rooflab.units import DType
from support import HUGE, refused


def _gpu_dict() -> dict:
    return yaml.safe_load((data_dir("hardware") / "h100-sxm.yaml").read_text().replace("e12", "e+12")
                          .replace("e9", "e+9"))


def _model_dict() -> dict:
    return yaml.safe_load((data_dir("models") / "llama-3-8b.yaml").read_text())


def _write(tmp_path: Path, data: dict, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _error(loader, path) -> SpecError:
    with pytest.raises(SpecError) as info:
        loader(path)
    return info.value


def test_user_yaml_loads(tmp_path):
    data = _gpu_dict()
    data["name"] = "my-gpu"
    assert load_gpu(_write(tmp_path, data)).ridge_flop_per_byte(DType.fp16) == pytest.approx(295.3, abs=0.1)


def test_unknown_key(tmp_path):
    data = _gpu_dict()
    data["hbm_bandwith_bytes_per_s"] = 1e12
    path = _write(tmp_path, data)
    err = _error(load_gpu, path)
    assert path in str(err) and "hbm_bandwith_bytes_per_s" in str(err) and "unknown field" in str(err)
    assert "hbm_bandwidth_bytes_per_s" in str(err)  # did you mean


def test_missing_field(tmp_path):
    data = _model_dict()
    del data["num_kv_heads"]
    err = _error(load_model, _write(tmp_path, data))
    assert err.field == "num_kv_heads" and "missing" in str(err)


@pytest.mark.parametrize("field, value", [("num_layers", "thirty-two"), ("num_layers", 32.5),
                                          ("head_dim", True), ("tie_word_embeddings", "no"),
                                          ("name", ["a", "b"])])
def test_wrong_type(tmp_path, field, value):
    data = _model_dict()
    data[field] = value
    err = _error(load_model, _write(tmp_path, data))
    assert err.field == field and repr(value) in str(err)


@pytest.mark.parametrize("field, value", [("num_layers", 0), ("hidden_size", -4096), ("head_dim", 0)])
def test_zero_or_negative(tmp_path, field, value):
    data = _model_dict()
    data[field] = value
    err = _error(load_model, _write(tmp_path, data))
    assert err.field == field and str(value) in str(err) and "positive" in str(err)


def test_negative_rate_names_the_nested_field(tmp_path):
    data = _gpu_dict()
    data["dense_tensor_flop_per_s"]["fp16"] = -1.0
    err = _error(load_gpu, _write(tmp_path, data))
    assert err.field == "dense_tensor_flop_per_s.fp16"


def test_unknown_rate_key(tmp_path):
    data = _gpu_dict()
    data["dense_tensor_flop_per_s"]["fp61"] = 1e12
    err = _error(load_gpu, _write(tmp_path, data))
    assert "fp61" in str(err) and "fp16" in str(err)


def test_heads_not_divisible(tmp_path):
    data = _model_dict()
    data["num_kv_heads"] = 7
    path = _write(tmp_path, data)
    err = _error(load_model, path)
    assert path in str(err) and err.field == "num_kv_heads" and "7" in str(err) and "multiple" in str(err)


@pytest.mark.parametrize("value", [0, -1.5])
def test_units_per_sm_must_be_positive(tmp_path, value):
    from rooflab.load import spec_path
    for key in ("units_per_sm", "decode_units_per_sm"):      # the new spelling, and the old one still read
        text = spec_path("hardware", "GPU", "h100-sxm").read_text() + f"{key}: {value}\n"
        path = tmp_path / "gpu.yaml"
        path.write_text(text)
        err = _error(load_gpu, path)
        assert err.field == key and "positive" in str(err)


def test_units_per_sm_old_spelling_reads_as_the_new(tmp_path):
    from rooflab.load import spec_path
    base = spec_path("hardware", "GPU", "h100-sxm").read_text()
    (tmp_path / "old.yaml").write_text(base + "decode_units_per_sm: 2.5\n")
    assert load_gpu(tmp_path / "old.yaml").units_per_sm == 2.5
    (tmp_path / "both.yaml").write_text(base + "decode_units_per_sm: 2.5\nunits_per_sm: 2.5\n")
    err = _error(load_gpu, tmp_path / "both.yaml")
    assert err.field == "decode_units_per_sm" and "old spelling" in str(err)


@pytest.mark.parametrize("field, value, needle", [
    ("hbm_bandwidth_bytes_per_s", 1e-300, ">="),        # passes "positive and finite", but is no GPU
    ("hbm_capacity_bytes", 1e307, "<="),
    ("num_sms", 132.5, "whole number"),
    ("num_sms", True, "whole number"),
    ("display_name", "", "non-empty"),
    ("units_per_sm", float("nan"), "finite"),
])
def test_implausible_gpu_values_are_refused(field, value, needle):
    gpu = load_gpu("h100-sxm")
    with pytest.raises(SpecError) as err:
        dataclasses.replace(gpu, **{field: value})
    assert err.value.field == field and needle in str(err.value)


def test_every_problem_is_reported_at_once():
    kwargs = {f.name: getattr(load_gpu("h100-sxm"), f.name) for f in dataclasses.fields(GpuSpec)}
    kwargs.update(num_sms=0, l2_bytes=-1, boost_clock_hz=float("inf"))
    with pytest.raises(SpecError) as err:
        GpuSpec(**kwargs)
    assert [p[0] for p in err.value.problems] == ["num_sms", "l2_bytes", "boost_clock_hz"]
    assert "3 problems" in str(err.value)


def test_a_20k_character_name_is_cut_in_the_error(llama):
    message = refused(lambda: dataclasses.replace(llama, name="x" * 20_001), "name", "10,000", error=SpecError)
    assert "..." in message


@pytest.mark.parametrize("value", [HUGE, 10**400, -(10**400)])
def test_a_huge_number_where_text_belongs_is_refused(value):
    measured = load_gpu("h200-sxm").measured
    refused(lambda: dataclasses.replace(measured, date=value), "date", error=SpecError)


@pytest.mark.parametrize("value", [1e-300, 5e-324, 0.005, 0, -1.0, 65])
def test_units_per_sm_has_a_sensible_range(h100, value):
    refused(lambda: dataclasses.replace(h100, units_per_sm=value), "units_per_sm", error=SpecError)


@pytest.mark.parametrize("value", [0.01, 0.5, 1.5, 8, 64])
def test_units_per_sm_in_range_is_kept(h100, value):
    assert dataclasses.replace(h100, units_per_sm=value).units_per_sm == value
