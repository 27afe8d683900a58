"""GPU YAMLs need only what a roofline needs, report every problem at once, and JSON Schemas ship."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.errors import SpecError
from rooflab.load import data_dir, load_gpu, read_yaml
from rooflab.schema import FORMATS, json_schema, schema_path, schema_text

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in rooflab[test]; install it to check the schemas")

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
MINIMAL = ("name: mygpu\nhbm_capacity_bytes: 80e9\nhbm_bandwidth_bytes_per_s: 3.0e12\n"
           "dense_tensor_flop_per_s: {fp16: 900e12}\nvector_fp32_flop_per_s: 60e12\n")


def _validator(name: str):
    return jsonschema.Draft202012Validator(json.loads(schema_path(name).read_text()))


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_shipped_schema_is_what_the_specs_derive(name):
    """The shipped file is regenerated with `rooflab schema NAME -o rooflab/schemas/NAME.schema.json`."""
    assert schema_path(name).read_text() == schema_text(name)
    jsonschema.Draft202012Validator.check_schema(json_schema(name))
    r = runner.invoke(app, ["schema", name])
    assert r.exit_code == 0 and json.loads(r.stdout) == json_schema(name)


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


def test_a_minimal_gpu_yaml_runs_every_command(tmp_path):
    path = tmp_path / "mygpu.yaml"
    path.write_text(MINIMAL)
    assert not list(_validator("gpu").iter_errors(read_yaml(path)))
    gpu = load_gpu(path)
    assert gpu.display_name == "mygpu" and gpu.num_sms is None and gpu.source is None
    for args in (["report"], ["report", "--phase", "decode", "-b", "16"], ["capacity"], ["explain"],
                 ["explain", "--variant", "split_kv"], ["explain", "-m", "deepseek-v3", "--variant", "paged"],
                 ["plot", "decode", "-o", str(tmp_path / "d.png")], ["plot", "roofline", "-o", str(tmp_path / "r.png")]):
        r = runner.invoke(app, [*args, "-g", str(path)])
        assert r.exit_code == 0, (args, r.output)
    decode = runner.invoke(app, ["report", "--phase", "decode", "-g", str(path)])
    assert "an unknown number of SMs" in decode.stdout


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


def test_bundled_gpus_still_give_every_field():
    """Optional for a user's YAML, not for the bundled ones: each carries its source and on-chip sizes."""
    for path in sorted(data_dir("hardware").glob("*.yaml")):
        g = load_gpu(path)
        assert None not in (g.source, g.num_sms, g.smem_per_sm_bytes, g.l2_bytes, g.boost_clock_hz, g.vendor), path.name
