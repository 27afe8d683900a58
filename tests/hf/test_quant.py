"""quantization_config methods (rooflab/hf/quant.py): formats, and exclusions that keep exactly the modules named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflab.errors import SpecError
from rooflab.hf import from_hf_config
from rooflab.units import WeightFormat

# The shape of Gemma-2-2B (tests/data/hf_configs/gemma-2-2b.json) as a plain test model; the quantization_configs
# below exercise the readers' rules (their fields are the methods' own), not any one published checkpoint.
BASE = json.loads((Path(__file__).parent.parent / "data" / "hf_configs" / "gemma-2-2b.json").read_text())


def read(q: dict):
    return from_hf_config({**BASE, "quantization_config": q}, "q.json")


@pytest.mark.parametrize("q, fmt", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, "int4_g128_zp"),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "int8_ch_zp"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4_g128_zp"),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": False}, "int4_g64"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_use_double_quant": True}, "nf4_dq"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8_ch"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}}}, "int4_g128"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}}, "nvfp4"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 8, "type": "float", "strategy": "channel"}}}}, "fp8"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8_block"),
])
def test_formats(q, fmt):
    spec = read(q)
    assert spec.quantization == {"linear": WeightFormat(fmt)}
    assert spec.quant_method.value == q["quant_method"]      # the method the engines' --quantization must name


def test_an_exclusion_keeps_exactly_the_modules_it_names():
    m = read({"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp.down_proj", "model.layers.3.self_attn"]})
    h, f = 2304, 9216
    attention_3 = h * 8 * 256 + 2 * h * 4 * 256 + 8 * 256 * h
    assert dict(m.unquantized_parameters) == {"dense_mlp": h * f, "attention": attention_3}
    plain = read({"quant_method": "fp8"})
    assert m.weight_bytes() - plain.weight_bytes() == (h * f + attention_3) * (4 - 1)   # fp32 checkpoint, fp8


def test_a_whole_component_excluded_leaves_the_formats():
    m = read({"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"], "config_groups": {
        "g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}})
    assert m.quantization == {"mlp": WeightFormat("int8_ch"), "experts": WeightFormat("int8_ch"),
                              "shared_experts": WeightFormat("int8_ch")} and not m.unquantized_parameters


@pytest.mark.parametrize("q, field", [
    ({"quant_method": "gptq", "bits": 5}, "bits"), ({"quant_method": "gptq", "bits": 4, "group_size": 0}, "group_size"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 1e300}, "group_size"),
    ({"quant_method": "awq", "bits": 4, "zero_point": "yes"}, "zero_point"),
    ({"quant_method": "bitsandbytes"}, "load_in_4bit"), ({"quant_method": "nope"}, "quant_method"),
    ({"quant_method": "fp8", "ignored_layers": "lm_head"}, "ignored_layers"),
    ({"quant_method": "fp8", "ignored_layers": [""]}, "ignored_layers"),
    ({"quant_method": "compressed-tensors", "ignore": ["re:("], "config_groups": {"g": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}}, "ignore"),
    ({"quant_method": "compressed-tensors", "config_groups": {}}, "config_groups"),
])
def test_bad_configs_name_the_field(q, field):
    with pytest.raises(SpecError, match=field):
        read(q)
