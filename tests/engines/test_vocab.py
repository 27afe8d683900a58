"""Tests of rooflab/engines/vocab.py: the engines' KV-cache dtype names (an unknown one lists them) and
their accountings by version (bad ones refused).
"""

from __future__ import annotations

import pytest

from rooflab.engines import Accounting, Engine, parse_accounting, parse_engine, parse_kv_cache_dtype
from rooflab.errors import InputError
from rooflab.units import DType


# --- vocabulary -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype, sparse", [
    ("auto", None, False), ("fp8", DType.fp8_e4m3, False), ("FP8_E4M3", DType.fp8_e4m3, False),
    ("fp8_e5m2", DType.fp8_e5m2, False), ("fp8_ds_mla", DType.fp8_e4m3, True), ("bfloat16", DType.bf16, False),
    ("half", DType.fp16, False), ("fp8_inc", DType.fp8_e4m3, False)])
def test_kv_cache_dtype_names(name, dtype, sparse):
    kv = parse_kv_cache_dtype(name)
    assert kv.dtype is dtype and kv.mla_sparse_fp8 is sparse


def test_unknown_kv_cache_dtype_lists_the_names():
    with pytest.raises(InputError, match="'int4' is not a KV-cache dtype; choose one of auto, fp8"):
        parse_kv_cache_dtype("int4")


@pytest.mark.parametrize("engine, text, expected", [
    (Engine.vllm, None, Accounting.vllm_v1), (Engine.vllm, "v0", Accounting.vllm_v0),
    (Engine.vllm, "0.6.4", Accounting.vllm_v0_6_4), (Engine.vllm, "vllm-v0.2", Accounting.vllm_v0_2),
    (Engine.vllm, "0.8", Accounting.vllm_v0_8),
    (Engine.sglang, None, Accounting.sglang_v0_5), (Engine.sglang, "V0.4", Accounting.sglang_v0_4)])
def test_accountings(engine, text, expected):
    assert parse_accounting(engine, text) is expected


@pytest.mark.parametrize("engine, text, needle", [
    (Engine.vllm, "sglang-v0.4", "is SGLang's, but --engine is vllm"),
    (Engine.vllm, "v2", "not a vLLM accounting rooflab models; choose one of v0.2, v0.6.4, v0, v0.8, v1"),
    (Engine.sglang, "v1", "not a SGLang accounting")])
def test_bad_accountings(engine, text, needle):
    with pytest.raises(InputError, match=needle):
        parse_accounting(engine, text)


@pytest.mark.parametrize("call", [lambda bad: parse_engine(bad), lambda bad: parse_accounting(bad, None),
                                  lambda bad: parse_accounting("vllm", bad or 3), lambda bad: parse_kv_cache_dtype(bad)])
@pytest.mark.parametrize("bad", [None, 3, ["vllm"], "x" * 10_000])
def test_parsers_refuse_what_is_no_name_in_a_short_message(call, bad):
    """Issue 24 round 2 D9's class: parse_accounting(None, ...) ended in KeyError, a GpuSpec was echoed whole (the
    version None is the engine's default, so 3 stands for it there)."""
    with pytest.raises(InputError, match="^--(engine|engine-version|kv-cache-dtype) ") as exc:
        call(bad)
    assert len(str(exc.value)) < 400


# --- the engines: one vocabulary, the accounting a subset ---------------------------------------------------------

def test_the_accountings_engine_is_the_one_engine_vocabulary():
    """Review (session 12): rooflab.engines.vocab kept a second Engine enum (vllm, sglang) beside rooflab.vocab's."""
    from rooflab import vocab

    assert Engine is vocab.Engine and parse_engine(" VLLM ") is vocab.Engine.vllm
    assert {a.engine for a in Accounting} == {vocab.Engine.vllm, vocab.Engine.sglang}


@pytest.mark.parametrize("text", ["tensorrt-llm", "TRT-LLM", "trtllm", "tensorrt_llm"])
def test_capacity_refuses_tensorrt_llm_by_name(text):
    """TensorRT-LLM is an engine rooflab models (step, serve) but not one whose KV-cache accounting it follows."""
    with pytest.raises(InputError, match=r"^--engine '.*': rooflab models TensorRT-LLM's scheduler and step kernels.*"
                                         r"not its KV-cache accounting; capacity follows vllm or sglang"):
        parse_engine(text)


def test_capacity_refuses_the_tensorrt_llm_member_in_a_short_message():
    from rooflab.vocab import Engine as OneEngine

    with pytest.raises(InputError, match="^--engine 'tensorrt-llm': ") as exc:
        parse_engine(OneEngine.trtllm)
    assert "Engine.trtllm" not in str(exc.value)
    with pytest.raises(InputError, match="^--engine 'tensorrt-llm': "):
        parse_accounting(OneEngine.trtllm, None)
