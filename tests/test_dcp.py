"""Decode context parallelism (cost/dcp.py) and ring / Ulysses prefill (cost/ring.py): formulas by hand, invariants,
bad input, and capacity --dcp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflab.capacity import plan_capacity
from rooflab.cli import app
from rooflab.context_parallel import dcp_capacity, dcp_speedup, dcp_threshold, dcp_time, ring_time
from rooflab.cost.dcp import check_dcp, dcp_decode, shard_tokens
from rooflab.cost.paged import paged_decode_uniform
from rooflab.cost.ring import overlap_tokens, ring_prefill, ulysses_prefill
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.specs import AttentionHeads
from rooflab.units import DType

LLAMA = AttentionHeads(32, 8, 128)
H200 = load_gpu("h200-sxm")


def test_shard_is_whole_pages_dealt_out():
    assert shard_tokens(1000, 2, 16) == 512          # 63 pages -> 32 on the fullest rank
    assert shard_tokens(1000, 1, 16) == 1000
    assert shard_tokens(131072, 2, 16) == 65536
    assert shard_tokens(20, 2, 16) == 16


def test_pieces_by_hand():
    c = dcp_decode(LLAMA, 131072, 8, 2, 16, DType.fp16, num_splits=4)
    rows = 8 * 32
    assert c.gather_bytes_per_rank == rows * 129 * 4                  # B h (d + 1) fp32: 132,096 bytes
    assert float(c.unpack.hbm_bytes) == 2 * 2 * rows * 129 * 4         # read and write the N gathered states
    assert float(c.merge.hbm_bytes) == rows * 2 * 129 * 4 + rows * 128 * 2   # N (d + 1) 4 in, d b out
    assert float(c.local.kv_bytes) == 8 * 65536 * 8 * 256 * 2          # half the KV: B L/2 h_kv (d + d_v) b
    assert float(c.local.merge.hbm_bytes) == rows * 4 * 129 * 4 + rows * 129 * 4   # S splits in, fp32 o + lse out


def test_one_rank_is_single_gpu_decode():
    for batch, length, splits in ((1, 32768, 25), (8, 131072, 4), (32, 4096, 1)):
        one = dcp_decode(LLAMA, length, batch, 1, 16, DType.fp16, num_splits=splits, num_sms=132, units_per_sm=1.5)
        ref = paged_decode_uniform(LLAMA, length, batch, 16, DType.fp16, None, splits, 132, 1.5)
        assert one.unpack is None and one.gather_bytes_per_rank == 0
        assert one.hbm_bytes == pytest.approx(float(ref.hbm_bytes)) and one.flops == pytest.approx(float(ref.flops))
        t = dcp_time(H200, LLAMA, length, batch, 1)
        assert t.t_gather_s == 0 and t.t_merge_s == 0


def test_dcp_halves_the_kv_a_rank_reads():
    for n in (2, 4, 8):
        c = dcp_decode(LLAMA, 1 << 20, 1, n, 16)
        assert float(c.local.kv_bytes) == pytest.approx(float(paged_decode_uniform(LLAMA, 1 << 20, 1).kv_bytes) / n)


def test_speedup_model_on_the_h200():
    # the DCP figure: about 1.92x ideal at batch 8 x 128k on 2 GPUs; the model sits just under 2
    s = dcp_speedup(H200, LLAMA, 131072, 8, 2)
    assert 1.85 <= s < 2.0
    # short contexts do not pay: the gather and merge cost more than the half of the KV they save
    assert dcp_speedup(H200, LLAMA, 4096, 1, 2) < 1
    threshold = dcp_threshold(H200, LLAMA, 1, 2)
    assert 16384 < threshold < 65536
    assert dcp_speedup(H200, LLAMA, threshold, 1, 2) > 1 > dcp_speedup(H200, LLAMA, threshold - 16, 1, 2)
    assert dcp_threshold(H200, LLAMA, 32, 2) < dcp_threshold(H200, LLAMA, 8, 2) < threshold   # bigger batches pay sooner
    # no fits (the H100 has none): no prediction, the floor still
    t = dcp_time(load_gpu("h100-sxm"), LLAMA, 131072, 8, 2)
    assert t.t_predicted_s is None and t.t_floor_s > 0
    assert dcp_speedup(load_gpu("h100-sxm"), LLAMA, 131072, 8, 2) is None


def test_floor_never_above_the_prediction():
    for batch in (1, 8, 32):
        for length in (32768, 131072, 524288):
            for n in (1, 2, 4, 8):
                t = dcp_time(H200, LLAMA, length, batch, n)
                assert t.t_floor_s <= t.t_predicted_s


def test_dcp_past_the_pages_is_an_error():
    with pytest.raises(InputError, match="larger than the context in pages"):
        check_dcp(9, 128, 16)                              # 8 pages
    assert check_dcp(8, 128, 16) == 8
    with pytest.raises(InputError, match="--dcp"):
        check_dcp(0, 128, 16)


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


def test_ring_overlap_is_monotone_in_tokens_per_gpu():
    # once the KV pass hides under a step's attention it stays hidden for more tokens per GPU
    for n in (2, 4, 8, 16):
        flags = [ring_time(H200, ring_prefill(LLAMA, n * t, n, causal=c), impl="rooflab_hopper").overlapped
                 for c in (True, False) for t in (64, 128, 256, 512, 1024, 4096, 16384, 65536)]
        for causal in (flags[:8], flags[8:]):
            assert causal == sorted(causal)                  # False ... False True ... True
            assert causal[-1]


def test_ring_time_on_one_gpu_is_flash():
    t = ring_time(H200, ring_prefill(LLAMA, 32768, 1, causal=False), impl="rooflab_hopper")
    assert t.t_transfer_step_s == 0 and t.t_predicted_s == pytest.approx(t.t_attention_step_s)


def test_ulysses_needs_the_kv_heads_to_divide():
    u = ulysses_prefill(LLAMA, 131072, 8)
    assert u.a2a_in_bytes_per_rank == 131072 / 8 * (32 * 128 * 2 + 8 * 256 * 2)
    assert u.a2a_out_bytes_per_rank == 131072 / 8 * 32 * 128 * 2
    with pytest.raises(InputError, match="KV heads"):
        ulysses_prefill(LLAMA, 131072, 16)                   # 8 KV heads over 16 GPUs
    with pytest.raises(InputError, match="two chunks"):
        ring_prefill(LLAMA, 7, 4)


# ------------------------------------------------------------------ capacity --dcp

def test_capacity_dcp_shards_the_kv():
    model = load_model("llama-3-8b")
    plan = plan_capacity(model, H200, 1 << 20, max_model_len=1 << 20)
    assert plan.max_sequences_paged == 0                     # 1M tokens do not fit one H200 unsplit
    four = dcp_capacity(plan, model, 1 << 20, 4, 16, DType(plan.kv_dtype))
    assert four.max_sequences_paged >= 3 and four.reason is None
    assert four.kv_bytes_per_sequence == pytest.approx(plan.kv_bytes_per_sequence / 4, rel=1e-3)
    assert 3.9 * plan.max_context_len < four.max_context_len <= 4 * plan.max_context_len + 64
    assert dcp_capacity(plan, model, 1 << 20, 1, 16, DType(plan.kv_dtype)) is plan


def test_capacity_dcp_on_the_command_line(capsys):
    with pytest.raises(SystemExit) as done:
        app(["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "-L", "1048576", "--max-model-len", "1048576",
             "--dcp", "4"])
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    assert "DCP 4" in out and "decode context parallel" in out
    with pytest.raises(SystemExit) as done:
        app(["capacity", "-m", "llama-3-8b", "-L", "64", "--dcp", "8"])
    assert done.value.code == 2
    assert "larger than the context in pages" in capsys.readouterr().err
