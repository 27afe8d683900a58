"""Tests of rooflab/sweeps/series.py: to_frame() on every result object (sweeps, roofline data, capacity plans,
validations), and sweeps on the user's own grid of lengths and batches (checked: a bad grid is an InputError naming
the argument).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab import load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.errors import InputError
from rooflab.sweeps import (capacity_sweep, capacity_sweeps, decode_sweep, decode_sweeps, memory_sweep, time_sweep,
                            time_sweeps)


pd = pytest.importorskip("pandas", reason="to_frame needs pandas (the notebook extra)")


LLAMA8 = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


# --- to_frame ----------------------------------------------------------------------------------

def test_time_sweep_frame_is_long_and_holds_the_arrays():
    sweep = time_sweep(LLAMA8, H100, causal=False)
    frame = sweep.to_frame()
    assert list(frame.columns) == ["model", "gpu", "series", "estimate", "seq_len", "time_s", "fits"]
    assert set(frame.estimate) == {"floor"}
    assert len(frame) == 2 * len(sweep.seq_lens)
    naive = frame[frame.series == "naive"]
    assert np.array_equal(naive.seq_len.to_numpy(), sweep.seq_lens.astype(np.int64))
    assert np.array_equal(naive.time_s.to_numpy(), sweep.naive_s)
    at = frame[(frame.series == "flash") & (frame.seq_len == 8192)]
    assert at.time_s.item() == pytest.approx(0.035561, rel=1e-4)                 # the chapter's 35.6 ms
    assert naive.fits.to_numpy().tolist() == (sweep.seq_lens <= sweep.naive_max_seq_len).tolist()
    assert not naive.fits.all() and frame[frame.series == "flash"].fits.all()


def test_sweep_frames_of_several_gpus_concatenate():
    frame = pd.concat([s.to_frame() for s in time_sweeps(LLAMA8, [H100, H200])], ignore_index=True)
    per_gpu = frame.groupby("gpu").size()
    assert set(per_gpu.index) == {H100.display_name, H200.display_name} and per_gpu.nunique() == 1


def test_decode_sweep_frame():
    sweep = decode_sweep(LLAMA8, H100, batches=(1, 64), context_lens=[1024, 32768])
    frame = sweep.to_frame()
    assert list(frame.columns) == ["model", "gpu", "batch", "series", "estimate", "context_len", "time_s"]
    assert len(frame) == 2 * 2 * 3           # floor, launched and predicted (the H100's fits transfer from the H200)
    row = frame[(frame.batch == 64) & (frame.series == "launched") & (frame.context_len == 32768)]
    assert row.time_s.item() == sweep.launched_s[1][1]
    floor = frame[frame.series == "floor"].time_s.to_numpy()
    launched = frame[frame.series == "launched"].time_s.to_numpy()
    assert np.all(launched >= floor)
    assert set(frame[frame.series == "floor"].estimate) == {"floor"} and set(frame[frame.series != "floor"].estimate) == \
        {"prediction"}
    assert sweep.ideal_s is sweep.floor_s            # the old name, readable for one release


def test_decode_sweep_on_a_fitted_gpu_draws_the_prediction():
    sweep = decode_sweep(LLAMA8, H200, batches=(8,), context_lens=[32768])
    frame = sweep.to_frame()
    assert set(frame.series) == {"floor", "launched", "predicted"}
    assert frame[frame.series == "predicted"].estimate.item() == "prediction"


def test_capacity_sweep_frame_counts_are_whole():
    sweep = capacity_sweep(LLAMA8, H100, context_lens=[2048, 8192])
    frame = sweep.to_frame()
    assert frame.sequences.dtype == np.int64
    paged = frame[frame.series == "paged"].sequences.tolist()
    assert paged == [plan_capacity(LLAMA8, H100, n).max_sequences_paged for n in (2048, 8192)]


def test_memory_sweep_frame_has_the_sp_bytes_and_each_gpus_room():
    sweep = memory_sweep(LLAMA8, [H100, H200], seq_lens=[8192])
    frame = sweep.to_frame()
    assert frame[frame.series == "sp_bytes"].bytes.item() == 8 * 2 ** 30       # S and P, 4 GiB each
    free = frame[frame.series == "free_bytes"].set_index("gpu").bytes
    assert free[H100.display_name] == pytest.approx(sweep.lines[0].free_bytes)
    assert len(free) == 2


# --- the user's grid ---------------------------------------------------------------------------

def test_user_grid_is_sorted_unique_and_matches_the_default_grid():
    mine = time_sweep(LLAMA8, H100, seq_lens=[16384, 1024, 1024, 8192])
    assert mine.seq_lens.tolist() == [1024, 8192, 16384]
    default = time_sweep(LLAMA8, H100)
    for i, n in enumerate(mine.seq_lens):
        j = int(np.flatnonzero(default.seq_lens == n)[0])
        assert (mine.naive_s[i], mine.flash_s[i]) == (default.naive_s[j], default.flash_s[j])
    assert mine.marked_seq_len == 8192
    assert time_sweep(LLAMA8, H100, seq_lens=[1000, 3000]).marked_seq_len is None     # the mark is not a point


def test_default_grid_holds_the_marked_length():
    sweep = time_sweep(LLAMA8, H100, marked_seq_len=5000)
    assert 5000 in sweep.seq_lens


def test_decode_and_capacity_take_the_users_grid():
    sweep = decode_sweep(LLAMA8, H100, batches=[32, 1, 32], context_lens=[4096])
    assert sweep.batches == (1, 32) and sweep.context_lens.tolist() == [4096]
    cap = capacity_sweep(LLAMA8, H100, context_lens=np.array([1024, 4096]))
    assert cap.context_lens.tolist() == [1024, 4096]
    assert memory_sweep(LLAMA8, [H100], seq_lens=(512,)).seq_lens.tolist() == [512]


@pytest.mark.parametrize("call, needle", [
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[0]), "seq_lens entry"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[1024.5]), "seq_lens entry"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[True]), "seq_lens entry"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[float("nan")]), "seq_lens entry"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[2 ** 40]), "seq_lens entry"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[]), "seq_lens is empty"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens="1024"), "seq_lens must be a sequence"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=1024), "seq_lens must be a sequence"),
    (lambda: time_sweep(LLAMA8, H100, seq_lens=[1024], max_seq_len=4096), "seq_lens or max_seq_len"),
    (lambda: memory_sweep(LLAMA8, [H100], seq_lens=[-1]), "seq_lens entry"),
    (lambda: decode_sweep(LLAMA8, H100, context_lens=["4k"]), "context_lens entry"),
    (lambda: decode_sweep(LLAMA8, H100, batches=[0]), "batches entry"),
    (lambda: decode_sweep(LLAMA8, H100, batches=[]), "batches is empty"),
    (lambda: decode_sweep(LLAMA8, H100, context_lens=[1024], max_context_len=4096), "context_lens or max_context_len"),
    (lambda: capacity_sweep(LLAMA8, H100, context_lens=[0]), "context_lens entry"),
    (lambda: capacity_sweep(LLAMA8, H100, context_lens={1024: 1}), "context_lens must be a sequence"),
    (lambda: time_sweeps(LLAMA8, []), "at least one GPU"),
])
def test_a_bad_grid_is_an_input_error_naming_the_argument(call, needle):
    with pytest.raises(InputError, match=needle):
        call()


def test_sweeps_of_several_gpus_share_one_grid():
    times = time_sweeps(LLAMA8, [H100, H200])
    assert np.array_equal(times[0].seq_lens, times[1].seq_lens)
    alone = [time_sweep(LLAMA8, g) for g in (H100, H200)]
    assert times[0].seq_lens[-1] == max(s.seq_lens[-1] for s in alone)
    caps = capacity_sweeps(LLAMA8, [H100, H200])
    assert np.array_equal(caps[0].context_lens, caps[1].context_lens)
    assert caps[0].context_lens[-1] == max(capacity_sweep(LLAMA8, g).context_lens[-1] for g in (H100, H200))
    decodes = decode_sweeps(LLAMA8, [H100, H200], context_lens=[2048])
    assert [d.gpu for d in decodes] == [H100.display_name, H200.display_name]
