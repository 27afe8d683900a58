"""Tests of rooflab/cost/ring.py: ring and Ulysses prefill. The pieces and the overlap threshold by hand,
Ulysses needing the KV heads to divide, and bad rates or switches refused by name.
"""

from __future__ import annotations

import pytest

from rooflab.cost.ring import overlap_tokens, ring_prefill, ulysses_prefill
from rooflab.errors import InputError
from rooflab.specs import AttentionHeads
from rooflab.units import DType


LLAMA = AttentionHeads(32, 8, 128)


# ------------------------------------------------------------------ ring and Ulysses

def test_ring_pieces_by_hand():
    r = ring_prefill(LLAMA, 131072, 2, 1, DType.fp16, causal=True)
    assert r.tokens_per_gpu == 65536
    assert r.kv_bytes_per_step == 65536 * 8 * 256 * 2                  # T/N h_kv (d + d_v) b
    assert float(r.step.flops) == pytest.approx(4 * 32 * 128 * 65536 ** 2)   # a full block's pairs
    assert r.flops == pytest.approx(0.5 * 2 * 4 * 32 * 128 * 65536 ** 2)    # causal: half of N blocks
    assert ring_prefill(LLAMA, 131072, 2, causal=False).flops == pytest.approx(2 * 4 * 32 * 128 * 65536 ** 2)


def test_overlap_threshold_by_hand():
    # h_kv b R / (2 c h W) = 8 x 2 x 600e12 / (2 x 1 x 32 x 340e9) = 441.2 tokens; causal twice that
    assert overlap_tokens(LLAMA, DType.fp16, 600e12, 340e9, causal=False) == pytest.approx(441.18, rel=1e-4)
    assert overlap_tokens(LLAMA, DType.fp16, 600e12, 340e9, causal=True) == pytest.approx(882.35, rel=1e-4)


def test_ulysses_needs_the_kv_heads_to_divide():
    u = ulysses_prefill(LLAMA, 131072, 8)
    assert u.a2a_in_bytes_per_rank == 131072 / 8 * (32 * 128 * 2 + 8 * 256 * 2)
    assert u.a2a_out_bytes_per_rank == 131072 / 8 * 32 * 128 * 2
    with pytest.raises(InputError, match="KV heads"):
        ulysses_prefill(LLAMA, 131072, 16)                   # 8 KV heads over 16 GPUs
    with pytest.raises(InputError, match="two chunks"):
        ring_prefill(LLAMA, 7, 4)


@pytest.mark.parametrize("flops, link", [(0, 1e9), (1e15, 0), (float("nan"), 1e9), (-1e15, 1e9), (1e15, "fast")])
def test_overlap_tokens_refuses_rates_that_are_not_positive_numbers(flops, link):
    """A zero link rate divided by zero; NaN and negative rates gave NaN and negative token counts."""
    with pytest.raises(InputError, match="flop_per_s|bytes_per_s"):
        overlap_tokens(AttentionHeads(32, 8, 128), DType.fp16, flops, link)


@pytest.mark.parametrize("call", [
    lambda: ring_prefill(AttentionHeads(32, 8, 128), 8192, 2, causal="yes"),
    lambda: ulysses_prefill(AttentionHeads(32, 8, 128), 8192, 2, causal=None),
    lambda: overlap_tokens(AttentionHeads(32, 8, 128), DType.fp16, 1e15, 1e11, causal=1),
])
def test_causal_must_be_a_switch(call):
    with pytest.raises(InputError, match="causal"):
        call()
