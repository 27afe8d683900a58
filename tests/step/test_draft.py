"""Tests of rooflab/step/draft.py: an MTP / EAGLE head's share of the target (the one notion of the head's layer, for
its cost and its memory) and the draft rows."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rooflab.deployment import Deployment, SpecMethod, Speculative
from rooflab.load import load_gpu, load_model
from rooflab.step.draft import HEAD_FC_INPUTS, OWN_LM_HEAD, head_share


def test_a_head_is_one_of_the_targets_decoder_layers():
    assert head_share(load_model("llama-3-8b")) == Fraction(1, 32)
    assert head_share(load_model("deepseek-v3")) == Fraction(1, 61)


def test_every_head_method_has_its_input_projection_and_only_mtp_its_own_lm_head():
    """EAGLE 2H, EAGLE-3 3H, MTP 2H (vLLM v0.11.0 llama_eagle.py:74-76, llama_eagle3.py:131-138, deepseek_mtp.py:
    53-55); DeepSeek's MTP alone keeps an lm_head of its own (deepseek_mtp.py:35-37; eagle.py:886-899)."""
    heads = {m for m in SpecMethod if m not in (SpecMethod.draft_model, SpecMethod.ngram)}
    assert set(HEAD_FC_INPUTS) == heads
    assert HEAD_FC_INPUTS == {SpecMethod.eagle: 2, SpecMethod.eagle3: 3, SpecMethod.mtp: 2}
    assert OWN_LM_HEAD == {SpecMethod.mtp}


def test_the_head_rows_scale_with_the_head_share():
    """The draft row of an EAGLE head at k = 1 reads one layer's weights (1/32 of llama-3-8b's attention
    1,342,177,280 and MLP 5,637,144,576 parameters) and the lm_head's 525,336,576, at 2 bytes: 1,486,880,768
    (norms aside); k = 3 three times that."""
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    one, three = (step_report(model, gpu, 4, 4096, deployment=Deployment(speculative=Speculative("eagle", k)))
                  for k in (1, 3))
    t1, t3 = (next(r for r in rep.rows if r.variant == "draft") for rep in (one, three))
    assert "one decoder layer + lm_head" in t1.label
    assert t1.weight_bytes == pytest.approx((1_342_177_280 + 5_637_144_576) * 2 / 32 + 525_336_576 * 2, rel=1e-4)
    assert t3.weight_bytes == pytest.approx(3 * t1.weight_bytes, rel=1e-12)
