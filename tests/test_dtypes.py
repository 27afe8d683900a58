"""Tests of rooflab/dtypes.py: dtypes and weight formats (counts and sizes are test_units.py's).

One dtype vocabulary (the engines' spellings, auto, vLLM's --dtype auto as loaded_dtype: Gemma-2-2B's float32
config plans in bf16 on Ampere and newer), weight formats (fp8 keeps Qwen2.5-7B's embeddings and head in
bf16; parametric integer formats), SGLang's --kv-cache-dtype choices, and bad values refused naming the argument.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.capacity import plan_capacity
from rooflab.cli import app
from rooflab.dtypes import DType, WeightFormat, loaded_dtype
from rooflab.errors import InputError
from rooflab.hf import from_hf_config
from rooflab.load import load_gpu, load_model
from rooflab.units import GiB, KiB


def test_every_dtype_has_a_stored_weight_format():
    """tf32 is a tensor-core mode over fp32 storage; fp64 weights take 8 bytes (plot decode --dtype tf32 crashed)."""
    from rooflab.dtypes import DType, WeightFormat

    stored = {d: WeightFormat.of(d) for d in DType}
    assert stored[DType.tf32] is WeightFormat.fp32 and stored[DType.fp64].bits_per_weight == 64
    assert all(stored[d].bits_per_weight == d.bits for d in DType if d is not DType.tf32)


@pytest.mark.parametrize("value", ["nope", 5, None, DType])
def test_weight_format_of_names_what_it_was_given_as(value):
    """WeightFormat.of('nope') raised the enum's ValueError from deep in capacity and decode_step."""
    from rooflab.errors import InputError
    from rooflab.dtypes import WeightFormat

    with pytest.raises(InputError, match="weight_dtype"):
        WeightFormat.of(value)


def test_weight_format_of_takes_formats_and_dtypes_by_name():
    from rooflab.dtypes import WeightFormat

    assert WeightFormat.of("mxfp4") is WeightFormat.mxfp4 and WeightFormat.of("fp8_e5m2") is WeightFormat.fp8
    assert WeightFormat.of(DType.tf32) is WeightFormat.fp32


# --- One dtype vocabulary (dtypes.DType.of / or_auto, WeightFormat.of), vLLM's --dtype auto (dtypes.loaded_dtype) ---
# and weight formats that keep embeddings, LM head, norms and router in the checkpoint's dtype (issue 28).

DATA = Path(__file__).parent / "data" / "hf_configs"


@pytest.mark.parametrize("text, dtype", [
    ("bf16", DType.bf16), ("bfloat16", DType.bf16), ("BFloat16", DType.bf16), ("fp16", DType.fp16),
    ("float16", DType.fp16), ("half", DType.fp16), ("fp32", DType.fp32), ("float32", DType.fp32),
    ("float", DType.fp32), ("fp8", DType.fp8_e4m3), ("fp8_e4m3", DType.fp8_e4m3), ("fp8_e5m2", DType.fp8_e5m2),
    (" fp8 ", DType.fp8_e4m3)])
def test_one_vocabulary(text, dtype):
    assert DType.of(text) is dtype and DType.or_auto(text) is dtype


@pytest.mark.parametrize("value", ["", "auto", "0", "-1", "nan", "inf", "1e300", "fp9", "x" * 10_000, 10**30, None,
                                   3.5])
def test_bad_dtypes_are_refused_naming_the_argument(value):
    with pytest.raises(InputError, match="kv_dtype"):
        DType.of(value, "kv_dtype")


def test_auto_is_none():
    assert DType.or_auto("auto") is None and DType.or_auto(" AUTO ") is None and DType.or_auto(None) is None


@pytest.mark.parametrize("checkpoint, cc, fp16_ok, loaded", [
    (DType.fp32, (8, 0), True, DType.bf16), (DType.fp32, (9, 0), False, DType.bf16),
    (DType.fp32, (7, 5), True, DType.fp16), (DType.fp32, (7, 5), False, DType.fp32),
    (DType.bf16, (7, 5), True, DType.fp16), (DType.bf16, (7, 5), False, DType.fp32),
    (DType.bf16, (8, 9), True, DType.bf16), (DType.fp16, (8, 0), True, DType.fp16),
    (DType.fp32, (5, 2), True, DType.fp32), (None, None, True, DType.bf16), (DType.fp32, None, True, DType.bf16)])
def test_loaded_dtype_follows_vllm(checkpoint, cc, fp16_ok, loaded):
    assert loaded_dtype(checkpoint, cc, fp16_ok) is loaded


def gemma_2_2b():
    return from_hf_config(json.loads((DATA / "gemma-2-2b.json").read_text()), "gemma-2-2b.json")


def test_gemma_2_2b_plans_in_bf16_on_ampere_and_newer():
    """Issue 28: Gemma-2-2B's float32 config was planned in fp32 (9.739 GiB of weights, 208 KiB of KV a token);
    vLLM serves it in bf16 on compute capability 8.0 and newer: 4.869 GiB and 104 KiB."""
    m = gemma_2_2b()
    assert m.weight_dtype is DType.fp32 and not m.fp16_supported
    assert m.weight_bytes() / GiB == pytest.approx(9.7387, abs=1e-4)
    for gpu in ("a100-sxm-80gb", "h100-sxm", "l4", "mi300x"):
        plan = plan_capacity(m, load_gpu(gpu), 8192)
        assert (plan.weight_dtype, plan.kv_dtype) == ("bf16", "bf16")
        assert plan.weights_bytes / GiB == pytest.approx(4.8694, abs=1e-4)
        assert plan.kv_bytes_per_token / KiB == 104
    # a T4 (7.5) has no bf16 and Gemma 2 refuses fp16: vLLM keeps fp32
    assert plan_capacity(m, load_gpu("t4"), 8192).weight_dtype == "fp32"


def test_qwen2_5_7b_fp8_weights_keep_embeddings_and_head_in_bf16():
    """Issue 28: --weight-dtype fp8 halved Qwen2.5-7B exactly (7.09 GiB); its 1.09 B embedding and LM-head
    parameters (152,064 x 3,584 each, untied) stay bf16: 8.108 GiB."""
    m = load_model("qwen2.5-7b")
    assert m.parameters.embeddings + m.parameters.lm_head == 2 * 152_064 * 3_584
    assert m.weight_bytes(WeightFormat.fp8) / GiB == pytest.approx(8.108, abs=1e-3)
    assert m.weight_bytes(DType.fp8_e4m3) == m.weight_bytes("fp8") == m.weight_bytes(WeightFormat.of("fp8_e4m3"))


def test_plan_capacity_takes_fp8():
    plan = plan_capacity(load_model("qwen2.5-7b"), load_gpu("h100-sxm"), 8192, kv_dtype="fp8")
    assert plan.kv_dtype == "fp8_e4m3"


@pytest.mark.parametrize("name, bits", [("int4_g128_zp", 4 + 20 / 128), ("int4_g128", 4 + 16 / 128),
                                        ("int8_ch", 8), ("int4_g32_zp", 4 + 20 / 32), ("nf4", 4.5),
                                        ("nf4_dq", 4 + 8 / 64 + 32 / (64 * 256))])
def test_parametric_formats(name, bits):
    assert WeightFormat.of(name).bits_per_weight == pytest.approx(bits)
    assert WeightFormat.of(name) is WeightFormat(name)


@pytest.mark.parametrize("value", ["int4_g0", "int4_g7", "int5_g128", "int4_g128_zp_zp", "", "auto", "nan", 10**30])
def test_bad_formats_are_refused(value):
    with pytest.raises(InputError, match="weight_dtype"):
        WeightFormat.of(value)


runner = CliRunner()


@pytest.mark.parametrize("args", [
    ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--kv-dtype", "fp8"],
    ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--kv-cache-dtype", "fp8"],
    ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--weight-dtype", "fp8_e4m3"],
    ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--weight-dtype", "int4_g128_zp"],
    ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--kv-dtype", "auto", "--weight-dtype", "auto"],
    ["report", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--dtype", "bfloat16"],
    ["report", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--dtype", "half", "--phase", "decode", "--kv-dtype", "fp8"],
])
def test_every_dtype_option_takes_the_vocabulary(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("option", ["--kv-dtype", "--weight-dtype", "--dtype"])
@pytest.mark.parametrize("value", ["nope", "0", "-1", "nan", "inf", "1e300", "9" * 400])
def test_bad_dtype_options_name_the_option(option, value):
    cmd = "report" if option == "--dtype" else "capacity"
    result = runner.invoke(app, [cmd, "-m", "qwen2.5-7b", "-g", "h100-sxm", option, value])
    assert result.exit_code == 2 and option in result.output


def test_sglang_refuses_fp8_as_its_kv_cache_dtype():
    """SGLang's --kv-cache-dtype choices (server_args.py): auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1."""
    from rooflab.engines.vocab import Engine, parse_kv_cache_dtype

    assert parse_kv_cache_dtype("fp8").dtype is DType.fp8_e4m3                      # vLLM's fp8
    assert parse_kv_cache_dtype("fp8_e4m3", Engine.sglang).dtype is DType.fp8_e4m3
    for text in ("fp8", "float16", "fp16"):
        with pytest.raises(InputError, match="SGLang"):
            parse_kv_cache_dtype(text, Engine.sglang)
