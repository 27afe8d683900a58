"""Tests of rooflab/schema.py: every bundled YAML passes its JSON Schema, the required fields are those a
roofline needs, and every missing field is reported in one error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflab.errors import SpecError
from rooflab.load import data_dir, load_gpu, read_yaml
from rooflab.schema import json_schema, schema_path


jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in rooflab[test]; install it to check the schemas")


REPO = Path(__file__).resolve().parents[1]


def _validator(name: str):
    return jsonschema.Draft202012Validator(json.loads(schema_path(name).read_text()))


@pytest.mark.parametrize("name, folder", [("gpu", "hardware"), ("model", "models")])
def test_every_bundled_yaml_passes_its_schema(name, folder):
    files = sorted(data_dir(folder).glob("*.yaml")) + sorted((REPO / "tests/data/engine_logs" / folder).glob("*.yaml"))
    assert len(files) >= 5
    v = _validator(name)
    for path in files:
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in v.iter_errors(read_yaml(path))]
        assert not errors, (path.name, errors[:3])


def test_required_fields_are_the_roofline_ones():
    required = set(json_schema("gpu")["required"])
    assert required == {"name", "hbm_capacity_bytes", "hbm_bandwidth_bytes_per_s", "dense_tensor_flop_per_s",
                        "vector_fp32_flop_per_s"}
    props = json_schema("gpu")["properties"]
    assert props["decode_units_per_sm"]["deprecated"] is True        # the old spelling the loader still reads
    assert props["num_sms"]["anyOf"][0]["minimum"] == 1 and "SMs" in props["num_sms"]["anyOf"][0]["description"]


def test_every_missing_field_in_one_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: mygpu\nnum_sms: many\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(path)
    text = str(exc.value)
    for field in ("hbm_capacity_bytes", "hbm_bandwidth_bytes_per_s", "dense_tensor_flop_per_s",
                  "vector_fp32_flop_per_s", "num_sms"):
        assert field in text, field
    assert "smem_per_sm_bytes" not in text and "boost_clock_hz" not in text       # optional now
    schema_errors = {e.path[0] if e.path else e.validator for e in _validator("gpu").iter_errors(read_yaml(path))}
    assert "num_sms" in schema_errors and "required" in schema_errors
