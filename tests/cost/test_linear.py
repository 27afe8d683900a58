"""Tests of rooflab/cost/linear.py's refusal of the layers it does not price: a Mamba layer (mixer mamba1 or
mamba2) has a state rooflab sizes (specs/layers.py) but no modelled scan, so its prefill and decode are an
InputError naming the mixer, directly and through the one walk over a model's layers (cost/layers.py). The Gated
DeltaNet cost itself is tested in tests/cost/test_common.py and tests/test_one_path.py."""

from __future__ import annotations

import pytest

from rooflab.cost.layers import layer_decode, layer_prefill
from rooflab.cost.linear import linear_decode, linear_prefill
from rooflab.errors import InputError
from support import JAMBA_V01, read_config

JAMBA = read_config(JAMBA_V01)


@pytest.mark.parametrize("call", [lambda t: linear_decode(t, 4), lambda t: linear_prefill(t, 1024)])
def test_a_mamba_layer_is_refused_naming_its_mixer(call):
    with pytest.raises(InputError, match="mamba1"):
        call(JAMBA.layer_types["linear"])


def test_the_model_walk_refuses_it_too_and_prices_the_attention_layers():
    with pytest.raises(InputError, match="mamba1 .Mamba. layer"):
        layer_decode(JAMBA, "linear", [4096] * 4)
    with pytest.raises(InputError, match="not modelled"):
        layer_prefill(JAMBA, "linear", 1024)
    # the attention layers still price: 4 sequences x 4,096 tokens x K and V of 8 heads of 128 in fp16
    assert float(layer_decode(JAMBA, "full", [4096] * 4).kv_bytes) == 4 * 4096 * 2 * 8 * 128 * 2
