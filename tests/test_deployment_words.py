"""rooflab.deployment_words: the weights' one vocabulary under --weight-dtype, --quantization and -q."""

import pytest

from rooflab.deployment_words import CHECKPOINT_QUANTIZATION, DeploymentWords, weights_name
from rooflab.errors import InputError
from rooflab.units import WeightFormat


@pytest.mark.parametrize("field", ["weight_dtype", "quantization"])
@pytest.mark.parametrize("name", ["nvfp4", "fp8_block", "int4_g128", "mxfp4", "fp8", "bf16", "int4_g128_zp"])
def test_a_format_prices_an_unquantised_checkpoint_under_either_name(field, name):
    """Issue 24 round 2 D1: report --phase step's help listed nvfp4, its resolver refused it as no method."""
    d, given, _ = DeploymentWords(**{field: name}).resolve(checkpoint_quantized=False)
    assert d.weight_format is WeightFormat.of(name) and "weight_format" in given


@pytest.mark.parametrize("field", ["weight_dtype", "quantization"])
def test_a_method_that_is_no_format_needs_a_quantised_checkpoint(field):
    with pytest.raises(InputError, match="awq reads a checkpoint quantised with awq"):
        DeploymentWords(**{field: "awq"}).resolve(checkpoint_quantized=False)
    d, given, _ = DeploymentWords(**{field: "awq"}).resolve(checkpoint_quantized=True)
    assert d.weight_format is None and "weight_format" in given


def test_the_engines_word_reads_a_quantised_checkpoint_as_shipped():
    """--quantization mxfp4 on gpt-oss (an mxfp4 checkpoint) is the checkpoint's method; --weight-dtype the format."""
    assert DeploymentWords(quantization="mxfp4").resolve(checkpoint_quantized=True)[0].weight_format is None
    assert DeploymentWords(weight_dtype="mxfp4").resolve(checkpoint_quantized=True)[0].weight_format \
        is WeightFormat.mxfp4


@pytest.mark.parametrize("option", ["--weight-dtype", "--quantization"])
def test_one_refusal_lists_every_name(option):
    with pytest.raises(InputError) as exc:
        weights_name("awq2", option)
    text = str(exc.value)
    assert text.startswith(f"{option} 'awq2'") and "\n" not in text
    listed = [*CHECKPOINT_QUANTIZATION.values(), "auto", "a dtype", "fp8_block", "mxfp4", "nvfp4", "int<b>_g", "nf4"]
    assert all(name in text for name in listed), text
