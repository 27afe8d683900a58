"""The distributed sections' shape and split counts (rooflab.measure.distributed.ops): Llama-3-8B's attention from
its spec, and rooflab's recommended splits at the GPU spec's decode units per SM (the H200's 1.5,
hardware/h200-sxm.yaml), not a number of the bench's own."""

from __future__ import annotations

import time

from rooflab.cost.batch import DecodeBatch
from rooflab.cost.paged import recommend_splits
from rooflab.load import data_dir, load_gpu
from rooflab.measure.distributed.context import Ctx
from rooflab.measure.distributed.ops import HEAD_DIM, HEADS, KV_HEADS, PAGE, recommended_splits
from rooflab.specs import AttentionHeads


def _ctx(tmp_path, gpu_spec="h200-sxm") -> Ctx:
    return Ctx(0, 1, 0, False, tmp_path, time.time() + 60, True, gpu_spec=gpu_spec)


def test_the_attention_shape_is_llama_3_8b():
    assert (HEADS, KV_HEADS, HEAD_DIM, PAGE) == (32, 8, 128, 16)


def test_splits_are_recommended_at_the_spec_units_per_sm(tmp_path):
    heads = AttentionHeads(32, 8, 128)
    h200 = load_gpu("h200-sxm")
    assert h200.units_per_sm == 1.5 and h200.num_sms == 132
    for batch, context in ((1, 32768), (1, 131072), (8, 8192)):
        expected = recommend_splits(heads, DecodeBatch.uniform(context, batch), 132, 16, units_per_sm=1.5)
        assert recommended_splits(_ctx(tmp_path), batch, context) == expected
    # another spec's units change the answer: the units are read from the spec the context names
    text = (data_dir("hardware") / "h200-sxm.yaml").read_text()
    assert "\nunits_per_sm: 1.5 " in text
    other = tmp_path / "h200-units-4.yaml"
    other.write_text(text.replace("\nunits_per_sm: 1.5 ", "\nunits_per_sm: 4 "))
    got = [recommended_splits(_ctx(tmp_path, str(other)), 1, c) for c in (32768, 131072)]
    assert got == [recommend_splits(heads, DecodeBatch.uniform(c, 1), 132, 16, units_per_sm=4.0) for c in (32768, 131072)]
    assert got != [recommended_splits(_ctx(tmp_path), 1, c) for c in (32768, 131072)]
