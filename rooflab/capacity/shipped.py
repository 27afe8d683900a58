"""A weight-format override that names the checkpoint's own format: the checkpoint as shipped, exclusions kept.

`--quantization` / `--weight-dtype` re-quantize every linear layer (ModelSpec.weight_format's override). Given on
a checkpoint already quantized in that format, an engine loads the checkpoint as its quantization_config says,
with the modules its exclusion list names left in the dtype: vLLM's BitsAndBytesConfig.from_config reads
llm_int8_skip_modules and get_quant_method gives each layer it names (a path part, or a dotted prefix of the
layer's path) UnquantizedLinearMethod (vllm 0.7.3 wheel, vllm/model_executor/layers/quantization/bitsandbytes.py:
104-137; Unsloth's dynamic 4-bit checkpoints keep e.g. Qwen2.5-7B's layers 0-1 attention and layers 2-4, 25-26 MLP
in 16 bits that way). So such an override is no override: the spec's own formats and
ModelSpec.unquantized_parameters stand. An override of another format re-quantizes every linear layer, as before.
"""

from __future__ import annotations

from ..specs import ModelSpec
from ..units import DType, WeightFormat


def as_shipped(model: ModelSpec, weight_format: DType | WeightFormat | None) -> DType | WeightFormat | None:
    """None (as shipped) where `weight_format` is the one format the checkpoint ships every quantized component
    in (model.quantization), else `weight_format` unchanged."""
    if weight_format is None or not model.quantization:
        return weight_format
    shipped = set(model.quantization.values())
    return None if shipped == {WeightFormat.of(weight_format)} else weight_format


__all__ = ["as_shipped"]
