"""Tests of rooflab/capacity/shipped.py: a weight-format override naming the checkpoint's own format keeps the
checkpoint as shipped, its exclusion list included (vLLM's BitsAndBytesConfig reads llm_int8_skip_modules and leaves
the layers it names unquantized: vllm 0.7.3 wheel, model_executor/layers/quantization/bitsandbytes.py:104-137).

Hand computation, Unsloth's dynamic 4-bit Qwen2.5-7B (H 3,584, 28 query and 4 KV heads of 128, F 18,944, biased
q/k/v), its llm_int8_skip_modules as Unsloth prints them (lm_head, model.layers.0-1.self_attn, model.layers.2-4 and
25-26.mlp): one layer's attention 3,584^2 + 3,584 (q) + 2 (3,584 x 512 + 512) (k, v) + 3,584^2 (o) = 29,364,736,
two layers 58,729,472; one MLP 3 x 3,584 x 18,944 = 203,685,888, five 1,018,429,440. Those 1,077,158,912
parameters stay in fp16 (2 bytes) instead of nf4_dq (4 + 8 / 64 + 32 / (64 x 256) bits).
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.capacity.plan import gpu_weight_bytes
from rooflab.capacity.shipped import as_shipped
from rooflab.engines import Engine, EngineSettings, engine_capacity, parse_accounting
from rooflab.hf import from_hf_config
from rooflab.hf.export import export_hf_config
from rooflab.units import WeightFormat

NF4_DQ = WeightFormat.of("nf4_dq", "the weight format")
SKIP = ["lm_head", "multi_modal_projector", "merger", "modality_projection", "model.layers.0.self_attn",
        "model.layers.1.self_attn", "model.layers.2.mlp", "model.layers.3.mlp", "model.layers.4.mlp",
        "model.layers.25.mlp", "model.layers.26.mlp"]


def _dynamic_qwen():
    config = export_hf_config(load_model("qwen2.5-7b"))
    config["torch_dtype"] = "float16"
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                                     "bnb_4bit_use_double_quant": True, "llm_int8_skip_modules": SKIP}
    return from_hf_config(config, "unsloth/qwen2.5-7b-instruct-unsloth-bnb-4bit (test)")


def test_the_exclusions_by_hand():
    model = _dynamic_qwen()
    assert model.quantization == {"linear": NF4_DQ}
    assert model.unquantized_parameters == {"attention": 58_729_472, "dense_mlp": 1_018_429_440}


def test_an_engine_override_of_the_shipped_format_keeps_the_exclusions():
    """In engine mode (an engine's --quantization names a method, and the method's config keeps the skip list) an
    override naming the checkpoint's own format is the checkpoint as shipped; rooflab's own --weight-dtype stays the
    what-if over every linear layer (gpu_weight_bytes: tests/cli/test_report.py holds that contract)."""
    model = _dynamic_qwen()
    assert as_shipped(model, NF4_DQ) is None
    assert as_shipped(model, WeightFormat.fp8) is WeightFormat.fp8          # another format re-quantizes
    assert as_shipped(load_model("qwen2.5-7b"), NF4_DQ) is NF4_DQ           # an unquantized checkpoint
    shipped, whatif = gpu_weight_bytes(model, None, 1), gpu_weight_bytes(model, NF4_DQ, 1)
    kept = 1_077_158_912
    assert shipped - whatif == pytest.approx(kept * (2 - NF4_DQ.bits_per_weight / 8), abs=64)


@pytest.mark.parametrize("engine, version", [(Engine.vllm, "v0"), (Engine.vllm, "v1"), (Engine.sglang, "v0.4")])
def test_engines_count_the_shipped_checkpoint(engine, version):
    model, t4 = _dynamic_qwen(), load_gpu("t4")
    settings = dict(max_model_len=512, utilization=0.6)
    plain = engine_capacity(model, t4, EngineSettings(parse_accounting(engine, version), **settings))
    given = engine_capacity(model, t4, EngineSettings(parse_accounting(engine, version), weight_format=NF4_DQ,
                                                      **settings))
    assert given.term("weights").bytes == plain.term("weights").bytes
