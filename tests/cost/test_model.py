"""Decode, paging, split-KV, the merge and cascade: golden figures from the chapters, and invariants.

Citations: "chapter 1" is the chapter "Naive attention and the online softmax",
"chapter 2" is the chapter "FlashAttention and PagedAttention: what does each save?".
"""

from __future__ import annotations

import pytest

from rooflab import load_model
from rooflab.cost.model import DecodeStep, DecodeTotals, decode_step, decode_totals, experts_touched, weights_read


LLAMA = load_model("llama-3-8b")


def test_attention_share_of_decode_flops():
    # chapter 1, "Keep this in proportion": attention is "about 7% of decode FLOPs for Llama-3-8B at 2.5k context"
    step = decode_totals(LLAMA, 2500)
    assert step.attention_flop_share == pytest.approx(0.07, abs=0.01)
    assert step.linear_flops_per_token == pytest.approx(2 * 8.03e9, rel=1e-3)  # about 2 x parameters
    assert step.weight_bytes_per_step == LLAMA.total_parameters * 2


def test_mixture_of_experts_reads_more_experts_with_batch():
    mixtral = load_model("mixtral-8x7b")
    assert experts_touched(mixtral, 1) == pytest.approx(2)
    assert experts_touched(mixtral, 1000) == pytest.approx(8)
    one = decode_totals(mixtral, 1000, 1).weight_bytes_per_step
    many = decode_totals(mixtral, 1000, 64).weight_bytes_per_step
    assert one == pytest.approx(mixtral.active_parameters * 2, rel=1e-3)
    assert many == pytest.approx(mixtral.total_parameters * 2, rel=1e-3)


@pytest.mark.parametrize("call, named", [
    (lambda m: experts_touched(m, 0), "batch"), (lambda m: experts_touched(m, -1), "batch"),
    (lambda m: experts_touched(m, float("nan")), "batch"), (lambda m: weights_read(m, 10**30), "batch"),
    (lambda m: weights_read(m, 1, weight_dtype=5), "weight_dtype"),
    (lambda m: decode_totals(m, 8192, weight_dtype="nope"), "weight_dtype"),
])
def test_model_costs_name_a_bad_argument(call, named):
    """experts_touched(-1) gave a negative count and NaN a NaN; weight_dtype 'nope' raised the enum's ValueError."""
    from rooflab.errors import InputError
    from rooflab.load import load_model

    with pytest.raises(InputError, match=named):
        call(load_model("deepseek-v3"))


def test_the_old_decode_step_names_are_the_totals():
    """cost.model's DecodeStep / decode_step were a second "decode step" beside rooflab.step's timed one: they are
    DecodeTotals / decode_totals, the old names aliases for one release."""
    assert DecodeStep is DecodeTotals and decode_step is decode_totals
    assert isinstance(decode_step(LLAMA, 2500), DecodeTotals)
