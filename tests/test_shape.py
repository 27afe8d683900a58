"""Tests of rooflab/shape.py: a bare attention shape (--shape B,H,H_kv,T,d[,d_v]) and the one-layer model it prices.

A shape is priced by the model path's own functions (rooflab.cost.layers' walk over a ModelSpec), so its rows are a
model layer's rows: Llama-3-8B's heads (32 query heads, 8 KV heads, d 128; meta-llama/Meta-Llama-3-8B config.json)
as a shape give one Llama-3-8B layer's figures.
"""

from __future__ import annotations

import pytest

from rooflab import AttentionHeads, ModelSpec, load_gpu, load_model
from rooflab.cost.layers import layer_walk
from rooflab.errors import InputError
from rooflab.shape import AttentionShape, BareAttention, parse_shape


def test_parse_five_and_six_fields():
    s = parse_shape("1,32,8,8192,128")
    assert s == AttentionShape(1, 8192, AttentionHeads(32, 8, 128))
    wide = parse_shape(" 2, 16, 16, 4k, 192, 128 ")              # d_v 128 beside q.k 192 (MLA's un-absorbed prefill)
    assert wide.batch == 2 and wide.seq_len == 4000 and wide.heads == AttentionHeads(16, 16, 192, 128)
    assert parse_shape("1,32,8,8K,128,128").heads.v_head_dim is None   # d_v = d: the plain heads
    assert "T 8,192" in parse_shape("1,32,8,8192,128").describe()


@pytest.mark.parametrize("text, says", [
    ("0,32,8,8192,128", "B"), ("1,0,8,8192,128", "H"), ("-1,32,8,8192,128", "B"), ("1,32,8,8192,-128", "d"),
    ("nan,32,8,8192,128", "B"), ("1,32,8,inf,128", "T"), ("1,32,8,8192,128.5", "d"),
    ("1,32,8,99999999999999999999999,128", "T"), ("1,32,8,8192,99999999", "d"), ("1,70000,1,8192,128", "H"),
    ("1,32,5,8192,128", "multiple of H_kv"), ("", "empty"), ("   ", "empty"), ("1,32,8", "3 fields"),
    ("1,32,8,8192", "4 fields"), ("1,32,8,8192,128,128,7", "7 fields"), ("1,,8,8192,128", "H (query heads) is empty"),
    ("1;32;8;8192;128", "1 field"), ("1,32,8,8192,128,0", "d_v"),
])
def test_bad_shapes_are_refused_naming_the_option_and_field(text, says):
    with pytest.raises(InputError) as err:
        parse_shape(text)
    assert "--shape" in str(err.value) and says in str(err.value)


@pytest.mark.parametrize("value", [None, 5, b"1,32,8,8192,128", ["1", "32"]])
def test_a_shape_must_be_text(value):
    with pytest.raises(InputError, match="--shape"):
        parse_shape(value)


def test_bare_attention_is_one_full_layer_and_no_weights():
    m = parse_shape("1,32,8,8192,128").layer
    assert isinstance(m, ModelSpec) and isinstance(m, BareAttention)     # every ModelSpec door takes it
    assert [(name, layer.kind.value, n) for name, layer, n in layer_walk(m)] == [("full", "full", 1)]
    assert m.heads == load_model("llama-3-8b").heads
    assert m.weight_bytes() == 0 and m.total_parameters == 0 and m.active_parameters == 0
    assert m.kv_bytes_per_token("fp16") == 8 * 2 * 128 * 2              # one layer's K and V: h_kv (d + d_v) b
    with pytest.raises(InputError):
        BareAttention.of("32,8,128")


def test_no_weights_leaves_all_of_hbm_to_the_naive_working_set():
    from rooflab.cost.naive import naive_ceiling

    h100 = load_gpu("h100-sxm")
    ceiling = naive_ceiling(parse_shape("1,32,8,8192,128").layer, h100)
    assert ceiling.weights_bytes == 0 and ceiling.free_bytes == h100.hbm_capacity_bytes
