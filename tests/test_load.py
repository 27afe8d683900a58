"""Tests of rooflab/load.py.

From the suites this file gathers:

Bundled specs load, and every kind of bad spec is an error naming the file, the field and the value.

Bad input at the Python API's doors: specs, the YAML schema, counts and sizes, writes, bounded work.

The CLI's share is in the fuzz suite (tests/test_fuzz_*.py); these pin each door's behaviour once.

Bad input to the Python API: each refused with rooflab's own error, naming the argument (and its limit), in a
short message; and the same answers as before for every form a valid value may take.

The fuzz suite (tests/test_fuzz_*.py) draws such values at random; these pin the cases it found, one by one.

Hugging Face config.json as a model spec: the configs' own rules, strict reading, and errors naming file,
field and value (exit 2 from the CLI).

Configs here are small dicts written for the rule under test (a real file's fields where one is at hand);
the real files are read in tests/hf/test_init.py (test_real_config_loads_to_the_bundled_spec).

Every bundled model: its parameter count against the published one, the round trip through a config.json,
the real config.json files in tests/data/hf_configs loading to the bundled specs, KV golden values, and the CLI.

Published counts and what each includes are in each YAML's comment and parameters_note; the config.json
files and where they were copied from are listed in tests/data/hf_configs/SOURCES.md.

The communication model (rooflab.comm), its YAML section and its fit: golden values by hand, invariants, round trips.

Bus bytes follow nccl-tests' bus-bandwidth convention (its PERFORMANCE notes): all-reduce 2 (N - 1) / N S,
all-gather and reduce-scatter (N - 1) S with S each rank's share, all-to-all (N - 1) / N S, send/recv S.

GPU YAMLs need only what a roofline needs, report every problem at once, and JSON Schemas ship.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from rooflab import available
from rooflab.errors import InputError, SpecError, UnknownNameError
from rooflab.load import data_dir, load_gpu, load_model, parse_yaml
from rooflab.specs import GpuSpec
from rooflab.units import DType, GiB
from support import HUGE, refused


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
    # an fp8 override converts the linear layers only: embeddings, LM head and norms stay in bf16 (issue 28)
    kept = m.parameters.embeddings + m.parameters.lm_head + m.parameters.norms
    scale = m.total_parameters / m.derived_parameters
    assert m.weight_bytes(DType.fp8_e4m3, 3) == pytest.approx((m.total_parameters + kept * scale) / 3, abs=2)


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


def test_specs_are_immutable_and_shared_safely():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(TypeError):
        gpu.dense_tensor_flop_per_s["fp16"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.num_sms = 1
    assert load_gpu("h100-sxm").dense_tensor_flop_per_s["fp16"] == 989.4e12


# --- the YAML schema -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["a: 0132", "a: 2:12", "a: 1_000", "a: 0x84", "a: yes", "a: off"])
def test_yaml_1_1_forms_are_refused_with_how_to_write_them(text):
    with pytest.raises(SpecError) as err:
        parse_yaml(text, "x.yaml")
    assert "ambiguous" in str(err.value) and "x.yaml" in str(err.value)


@pytest.mark.parametrize("text, value", [("a: 132", 132), ("a: 3.35e12", 3.35e12), ("a: 2026-11-30", "2026-11-30"),
                                         ("a: true", True), ("a: '0132'", "0132"), ("a: n", "n")])
def test_yaml_1_2_forms_read_as_written(text, value):
    assert parse_yaml(text, "x.yaml")["a"] == value


def test_yaml_reader_refuses_what_a_spec_never_needs(tmp_path):
    """Complex keys, aliases (billion laughs) and deep nesting: one-line errors naming the file, quickly."""
    from fuzz_support import bounded

    from rooflab.errors import SpecError
    from rooflab.load import load_gpu

    laughs = ["name: x", 'a: &a ["lol", "lol"]'] + [f"{c}: &{c} [" + ", ".join([f"*{p}"] * 10) + "]"
                                                   for p, c in zip("abcdefghi", "bcdefghij")]
    cases = {"complex.yaml": ("name: x\n? [a, b]\n: 1\n", "not a plain name"),
             "laughs.yaml": ("\n".join(laughs) + "\n", "an alias"),
             "deep.yaml": ("a: " + "[" * 3000 + "\n", "nested too deeply")}
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with bounded(), pytest.raises(SpecError) as info:    # a watchdog for an expanding load, not a speed bound
            load_gpu(path)
        assert needle in str(info.value) and name in str(info.value)


def test_a_rewritten_spec_is_read_again(tmp_path):
    import os

    from rooflab.load import load_gpu

    path = tmp_path / "g.yaml"
    text = ("name: g\nhbm_capacity_bytes: 80e9\nhbm_bandwidth_bytes_per_s: 3.0e12\n"
            "dense_tensor_flop_per_s: {fp16: 900e12}\nvector_fp32_flop_per_s: 60e12\n")
    path.write_text(text)
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 3.0e12
    path.write_text(text.replace("3.0e12", "4.0e12"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 4.0e12


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


# --- short, cheap messages (item 7, 10c) --------------------------------------------------------------------------

def test_an_unknown_name_is_not_printed_whole():
    with pytest.raises(UnknownNameError) as info:
        load_gpu("a" * 100_000)
    assert len(str(info.value)) < 600 and "GPU 'aaa" in str(info.value)


def test_a_20k_character_name_is_cut_in_the_error(llama):
    message = refused(lambda: dataclasses.replace(llama, name="x" * 20_001), "name", "10,000", error=SpecError)
    assert "..." in message


# --- spec fields (item 11) ----------------------------------------------------------------------------------------

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


def test_layer_counts_of_a_shared_spec_are_read_only(llama):
    expected = llama.kv_bytes_per_token(DType.fp16)
    with pytest.raises(TypeError):
        llama.layer_counts["full"] = 1
    assert dict(llama.layer_counts) == {"full": 32}
    assert load_model("llama-3-8b").kv_bytes_per_token(DType.fp16) == expected


LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"}


# --- finding a config.json ------------------------------------------------------------------------------

def test_a_folder_and_a_cached_id(tmp_path, monkeypatch):
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    assert load_model(str(folder)).name == "my-llama"
    snapshot = tmp_path / "hf" / "hub" / "models--org--tiny-llama" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 2}))
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    m = load_model("org/tiny-llama")
    assert m.num_layers == 2 and m.source == str(snapshot / "config.json")
    assert m.display_name.startswith("org/tiny-llama (config.json:") and "parameters derived" in m.display_name
    with pytest.raises(SpecError, match="not in the local Hugging Face cache"):
        load_model("org/absent")


def test_a_yaml_path_and_a_bundled_name_still_load_as_yaml():
    assert load_model("llama-3-8b").source.startswith("https://")
    assert load_model(str(data_dir("models") / "llama-3-8b.yaml")).name == "llama-3-8b"


def test_layer_stacks_of_the_hybrid_models():
    counts = {name: dict(load_model(name).layer_counts) for name in
              ("gemma-2-9b", "gemma-3-27b", "gpt-oss-120b", "llama-4-scout", "qwen3-next-80b-a3b", "mistral-7b-v0.1")}
    assert counts == {"gemma-2-9b": {"sliding": 21, "full": 21}, "gemma-3-27b": {"sliding": 52, "full": 10},
                      "gpt-oss-120b": {"sliding": 18, "full": 18}, "llama-4-scout": {"chunked": 36, "full": 12},
                      "qwen3-next-80b-a3b": {"linear": 36, "full": 12}, "mistral-7b-v0.1": {"sliding": 32}}
    gemma3 = load_model("gemma-3-27b").layer_type_names
    assert [i for i, t in enumerate(gemma3) if t == "full"] == list(range(5, 62, 6))
    assert load_model("gemma-2-9b").layer_type_names[0] == "sliding"
    assert all(t.sinks for t in load_model("gpt-oss-120b").layer_types.values())
    assert load_model("llama-4-scout").layer_types["chunked"].chunk == 8192


def test_weight_formats_as_shipped():
    v3, oss = load_model("deepseek-v3"), load_model("gpt-oss-120b")
    assert v3.weight_format("experts").value == v3.weight_format("attention").value == "fp8_block"
    assert v3.weight_format("embeddings").value == v3.weight_format("norms").value == "bf16"
    assert oss.weight_format("experts").value == "mxfp4" and oss.weight_format("experts").bits_per_weight == 4.25
    assert oss.weight_format("attention").value == oss.weight_format("lm_head").value == "bf16"


def test_h200_and_h100_datasheet_links():
    for name in ("h200-sxm", "h100-sxm"):
        link = load_gpu(name).interconnect
        assert link.link_bytes_per_s == 450e9 and link.gpus_per_node == 8       # NVLink 4: 18 x 25 GB/s a way
    # five collectives x eager / graph, fitted on 2 and on 4 GPUs
    assert len(load_gpu("h200-sxm").interconnect.collectives) == 20
    assert not load_gpu("h100-sxm").interconnect.collectives


def test_bundled_gpus_still_give_every_field():
    """Optional for a user's YAML, not for the bundled ones: each carries its source and on-chip sizes."""
    for path in sorted(data_dir("hardware").glob("*.yaml")):
        g = load_gpu(path)
        assert None not in (g.source, g.num_sms, g.smem_per_sm_bytes, g.l2_bytes, g.boost_clock_hz, g.vendor), path.name


@pytest.mark.parametrize("kind", ["nope", None, "measurements", ""])
def test_available_names_an_unknown_kind(kind):
    """available('nope') listed nothing, available(None) raised TypeError from a path join."""
    with pytest.raises(InputError, match="kind"):
        available(kind)


def test_a_spec_that_is_a_named_pipe_does_not_block(tmp_path):
    """read_bounded: a FIFO with no writer reads as empty (a refused spec) instead of blocking forever."""
    import os

    fifo = tmp_path / "gpu.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="gpu.yaml"):
        load_gpu(fifo)


# --- local folders named like bundled models (a downloaded config kept as ./qwen2.5-7b/config.json) -------------

def _config_folder(where: Path, name: str) -> Path:
    from rooflab.hf import export_hf_config
    from rooflab.load import bundled_model

    folder = where / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(export_hf_config(bundled_model("qwen2.5-7b"))))
    return folder


def test_a_folder_named_like_a_bundled_model_never_recurses(tmp_path, monkeypatch):
    """Before the fix every config.json load here ended in RecursionError: the published-count lookup loaded each
    bundled name, and a local folder of that name won over it."""
    _config_folder(tmp_path, "qwen2.5-7b")
    _config_folder(tmp_path, "mine")
    monkeypatch.chdir(tmp_path)
    spec = load_model("./mine")
    assert "published 7.62 B as bundled 'qwen2.5-7b'" in spec.display_name
    assert load_model("./qwen2.5-7b").num_parameters == load_model(data_dir("models") / "qwen2.5-7b.yaml").num_parameters


def test_a_bare_name_that_is_bundled_and_a_local_folder_is_an_error_naming_both(tmp_path, monkeypatch):
    _config_folder(tmp_path, "qwen2.5-7b")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"both the bundled model 'qwen2.5-7b' and a folder here.*'\./qwen2.5-7b'"):
        load_model("qwen2.5-7b")
    assert load_model("llama-3-8b").name == "llama-3-8b"      # other bundled names are untouched


def test_a_bare_name_of_a_local_folder_only_reads_the_folder(tmp_path, monkeypatch):
    _config_folder(tmp_path, "mymodel")
    monkeypatch.chdir(tmp_path)
    assert load_model("mymodel").num_layers == 28


# --- exact GPU names: nvidia-smi's for each part, and a PCIe name never resolves to an SXM part (issue 27) -------

from rooflab.load import resolve_gpu_name


@pytest.mark.parametrize("smi, name", [
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"), ("NVIDIA A100-PCIE-80GB", "a100-pcie-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H800", "h800"), ("NVIDIA H200", "h200-sxm"), ("NVIDIA L4", "l4"), ("NVIDIA A10", "a10"),
    ("Tesla T4", "t4"), ("NVIDIA L40", "l40"), ("NVIDIA L40S", "l40s"), ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("AMD Instinct MI300X", "mi300x"), ("AMD Instinct MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"), ("NVIDIA B200", "b200")])
def test_nvidia_smi_names_resolve_exactly(smi, name):
    assert resolve_gpu_name(smi) == name


@pytest.mark.parametrize("text", ["A100 PCIe", "A100 80GB PCIe", "NVIDIA A100 80GB PCIe", "H100 PCIe", "h100-pcie"])
def test_a_pcie_name_never_resolves_to_an_sxm_part(text):
    try:
        name = resolve_gpu_name(text)
    except UnknownNameError as err:                      # ambiguous between PCIe parts is fine; SXM ones never listed
        assert "sxm" not in str(err).split("Available")[0].lower()
        return
    assert "sxm" not in name and "sxm" not in load_gpu(name).display_name.lower()


def test_every_alias_agrees_with_its_gpus_board_form():
    """An alias naming PCIe on an SXM spec (the old 'NVIDIA A100 80GB PCIe' on a100-sxm-80gb) fails the name table."""
    from rooflab.load import _gpu_names

    names = _gpu_names()
    assert all(gpu.takes(gpu.forms) for gpu in names.values())
    assert names["a100-sxm-80gb"].forms == {"sxm"} and not names["a100-sxm-80gb"].takes(frozenset({"pcie"}))


def test_an_alias_contradicting_its_board_form_is_a_spec_error(tmp_path, monkeypatch):
    import shutil

    from rooflab import load as load_module

    folder = tmp_path / "hardware"
    folder.mkdir()
    text = (data_dir("hardware") / "a100-sxm-80gb.yaml").read_text()
    (folder / "a100-sxm-80gb.yaml").write_text(text.replace('"NVIDIA A100-SXM4-80GB"]', '"NVIDIA A100 80GB PCIe"]'))
    shutil.copy(data_dir("hardware") / "h100-sxm.yaml", folder / "h100-sxm.yaml")
    monkeypatch.setattr(load_module, "data_dir", lambda kind: tmp_path / kind)
    load_module._gpu_names.cache_clear()
    try:
        with pytest.raises(SpecError, match="aliases.*pcie part; this GPU is sxm"):
            load_module._gpu_names()
    finally:
        monkeypatch.undo()
        load_module._gpu_names.cache_clear()


def test_the_libyaml_fast_path_reads_every_bundled_file_as_the_strict_loader_does():
    """parse_yaml goes through libyaml where a document is plain (ten times as fast: the H200 spec with its fits is
    20 KB) and falls back to the Python loader for anything it must refuse; both give the same mappings."""
    from rooflab import load

    if load._CSpecLoader is None:
        pytest.skip("this PyYAML has no libyaml")
    files = [*sorted((ROOT_DIR / "hardware").glob("*.yaml")), *sorted((ROOT_DIR / "models").glob("*.yaml")),
             ROOT_DIR / "measurements" / "published" / "sources.yaml"]
    for path in files:
        text = path.read_text()
        assert load._fast_load(text) == yaml.load(text, Loader=load._SpecLoader), path.name
    for text, needle in (("a: &x [1]\nb: *x\n", "an alias"), ("a: 0132\n", "ambiguous"), ("a: 1\na: 2\n", "duplicate"),
                         ("a: " + "[" * 3000, "nested too deeply")):
        with pytest.raises(SpecError, match=needle):
            load.parse_yaml(text, "t.yaml")


ROOT_DIR = Path(__file__).resolve().parents[1]
