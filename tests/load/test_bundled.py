"""The bundled specs (rooflab/load/bundled.py): the required GPUs and models ship beside the package, complete, with
the layer stacks, weight formats and links their sources give; available() refuses an unknown kind."""

from __future__ import annotations

import pytest

from rooflab import available
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.units import DType, GiB


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
    """Optional for a user's YAML, not for the bundled ones: each carries its source and on-chip sizes. A clock or L2
    size no public source gives (the H20's: no datasheet, no published nvidia-smi -q) is left out, never guessed, and
    only where the source says so."""
    for path in sorted(data_dir("hardware").glob("*.yaml")):
        g = load_gpu(path)
        assert None not in (g.source, g.num_sms, g.smem_per_sm_bytes, g.vendor), path.name
        for field, named in (("l2_bytes", "the L2 size"), ("boost_clock_hz", "the clocks")):
            if getattr(g, field) is None:
                said = " ".join(g.source.split())
                assert "Not given, for want of a public figure" in said and named in said, (path.name, field)


@pytest.mark.parametrize("kind", ["nope", None, "measurements", ""])
def test_available_names_an_unknown_kind(kind):
    """available('nope') listed nothing, available(None) raised TypeError from a path join."""
    with pytest.raises(InputError, match="kind"):
        available(kind)
