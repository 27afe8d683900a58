"""Tests of rooflab/context_parallel.py: context-parallel decode and prefill on a GPU. One rank is
single-GPU decode, the speedup model on the H200, the floor never above the prediction, ring overlap monotone
in tokens a GPU and equal to flash on one GPU, and the threshold's limit and the specs checked.
"""

from __future__ import annotations

import pytest

from rooflab.context_parallel import dcp_speedup, dcp_threshold, dcp_time, ring_time
from rooflab.cost.dcp import dcp_decode
from rooflab.cost.paged import paged_decode_uniform
from rooflab.cost.ring import ring_prefill
from rooflab.load import load_gpu
from rooflab.specs import AttentionHeads
from rooflab.units import DType


LLAMA = AttentionHeads(32, 8, 128)
H200 = load_gpu("h200-sxm")


def test_one_rank_is_single_gpu_decode():
    for batch, length, splits in ((1, 32768, 25), (8, 131072, 4), (32, 4096, 1)):
        one = dcp_decode(LLAMA, length, batch, 1, 16, DType.fp16, num_splits=splits, num_sms=132, units_per_sm=1.5)
        ref = paged_decode_uniform(LLAMA, length, batch, 16, DType.fp16, None, splits, 132, 1.5)
        assert one.unpack is None and one.gather_bytes_per_rank == 0
        assert one.hbm_bytes == pytest.approx(float(ref.hbm_bytes)) and one.flops == pytest.approx(float(ref.flops))
        t = dcp_time(H200, LLAMA, length, batch, 1)
        assert t.t_gather_s == 0 and t.t_merge_s == 0


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


@pytest.mark.parametrize("limit", [0, -5, 2.5, 10**30])
def test_dcp_threshold_checks_its_limit(limit):
    """limit 0, -5 and 10**30 were answered (None, or a search to 10**30 tokens)."""
    from rooflab.errors import InputError

    with pytest.raises(InputError, match="limit"):
        dcp_threshold(load_gpu("h200-sxm"), AttentionHeads(32, 8, 128), 1, 2, limit=limit)


def test_context_parallel_specs_are_checked():
    """None for the GPU or the heads raised AttributeError inside; a ModelSpec stands for its heads."""
    from rooflab.errors import InputError
    from rooflab.load import load_model

    gpu, heads = load_gpu("h200-sxm"), AttentionHeads(32, 8, 128)
    with pytest.raises(InputError, match="gpu"):
        dcp_time(None, heads, 8192, 1, 2)
    with pytest.raises(InputError, match="heads"):
        dcp_time(gpu, None, 8192, 1, 2)
    with pytest.raises(InputError, match="ring"):
        ring_time(gpu, None)
    assert dcp_time(gpu, load_model("llama-3-8b"), 8192, 1, 2) == dcp_time(gpu, heads, 8192, 1, 2)
