"""Bundled specs load, and every kind of bad spec is an error naming the file, the field and the value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rooflab import DType, SpecError, available, load_gpu, load_model
from rooflab.errors import UnknownNameError
from rooflab.load import data_dir
from rooflab.units import GiB

REQUIRED_GPUS = ["h100-sxm", "h100-pcie", "h200-sxm", "a100-sxm-80gb", "a100-40gb", "b200", "l40s",
                 "rtx-4090", "mi300x"]
REQUIRED_MODELS = ["llama-3-8b", "llama-3-70b", "llama-3.1-405b", "llama-2-7b", "llama-2-70b", "mistral-7b",
                   "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b", "gemma-2-9b"]


def test_required_specs_are_bundled():
    assert set(REQUIRED_GPUS) <= set(available("hardware"))
    assert set(REQUIRED_MODELS) <= set(available("models"))


@pytest.mark.parametrize("name", REQUIRED_GPUS)
def test_gpu_specs_are_complete(name):
    g = load_gpu(name)
    assert g.name == name  # the file name and the name field agree
    assert g.source and g.display_name
    assert g.dense_tensor_flop_per_s["fp16"] >= g.vector_fp32_flop_per_s  # dense tensor rate, above plain fp32
    assert 0.1e12 < g.hbm_bandwidth_bytes_per_s < 20e12
    assert 16 * GiB < g.hbm_capacity_bytes < 300 * GiB
    assert 50 < g.ridge_flop_per_byte(DType.fp16) < 1000


@pytest.mark.parametrize("name", REQUIRED_MODELS)
def test_model_parameter_counts_match_the_architecture(name):
    m = load_model(name)
    assert m.name == name
    # the published count and the count derived from the shapes agree within 0.5%
    assert m.derived_parameters == pytest.approx(m.total_parameters, rel=5e-3)
    assert m.num_qo_heads % m.num_kv_heads == 0


def test_mixtral_active_parameters():
    # Mixtral 8x7B: 46.7 B parameters, about 12.9 B active per token (2 of 8 experts)
    m = load_model("mixtral-8x7b")
    assert m.total_parameters / 1e9 == pytest.approx(46.7, abs=0.05)
    assert m.active_parameters / 1e9 == pytest.approx(12.9, abs=0.05)


def test_kv_bytes_per_token_llama3_8b():
    # flash-and-paged / capacity planning: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB
    assert load_model("llama-3-8b").kv_bytes_per_token(DType.fp16) == 128 * 1024


def test_bundled_files_ship_beside_the_package():
    assert (data_dir("hardware") / "h100-sxm.yaml").is_file()
    assert (data_dir("models") / "llama-3-8b.yaml").is_file()


# --- bad input ------------------------------------------------------------------------

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


@pytest.mark.parametrize("text, needle", [
    ("name: [unclosed\n", "malformed YAML"),
    ("- just\n- a list\n", "mapping"),
    ("name: a\nname: b\n", "duplicate key 'name'"),
    ("", "mapping"),
])
def test_malformed_file(tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    err = _error(load_model, str(path))
    assert str(path) in str(err) and needle in str(err)


def test_missing_file(tmp_path):
    err = _error(load_gpu, str(tmp_path / "nope.yaml"))
    assert "no such file" in str(err)


def test_unknown_name_suggests_closest():
    assert load_gpu("h100 sxm").name == "h100-sxm"          # the one GPU whose names start with it, word by word
    with pytest.raises(UnknownNameError) as info:
        load_gpu("h100-sx")                                  # stops inside a word: not a name, but a suggestion
    assert info.value.suggestion == "h100-sxm"
    with pytest.raises(UnknownNameError) as info:
        load_gpu("h100-sxn")
    msg = str(info.value)
    assert "Did you mean 'h100-sxm'" in msg and "a100-40gb" in msg and "mi300x" in msg
    with pytest.raises(UnknownNameError) as info:
        load_model("lama-3-8b")
    assert info.value.suggestion == "llama-3-8b"


def test_scientific_notation_without_sign_is_a_number(tmp_path):
    # YAML 1.1 reads 3.35e12 as a string; rooflab's loader reads it as the number people mean
    text = (data_dir("hardware") / "h100-sxm.yaml").read_text().replace("name: h100-sxm", "name: x")
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert load_gpu(str(path)).hbm_bandwidth_bytes_per_s == 3.35e12


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


def test_specs_load_from_a_path_object(tmp_path):
    from rooflab.errors import UnknownNameError
    from rooflab.load import spec_path
    path = tmp_path / "mine.yaml"
    path.write_text(spec_path("models", "model", "llama-3-8b").read_text())
    assert load_model(path).name == "llama-3-8b"
    with pytest.raises(UnknownNameError):
        load_gpu(8)


def test_weight_bytes_per_gpu():
    # every parameter in the weight dtype, split evenly and rounded up per GPU
    m = load_model("llama-3-70b")
    assert m.weight_bytes(DType.fp16) == 2 * m.total_parameters
    assert m.weight_bytes(DType.fp8_e4m3, 3) == -(-m.total_parameters // 3)


def test_every_dtype_has_a_stored_weight_format():
    """tf32 is a tensor-core mode over fp32 storage; fp64 weights take 8 bytes (plot decode --dtype tf32 crashed)."""
    from rooflab.units import DType, WeightFormat

    stored = {d: WeightFormat.of(d) for d in DType}
    assert stored[DType.tf32] is WeightFormat.fp32 and stored[DType.fp64].bits_per_weight == 64
    assert all(stored[d].bits_per_weight == d.bits for d in DType if d is not DType.tf32)
