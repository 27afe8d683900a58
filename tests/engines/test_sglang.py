"""Tests of rooflab/engines/sglang.py: SGLang's default static memory fraction."""

from __future__ import annotations

import pytest

from rooflab import load_gpu
from rooflab.engines import Engine, parse_accounting
from rooflab.engines.sglang import default_fraction
from rooflab.units import MiB


H100 = load_gpu("h100-sxm")


@pytest.mark.parametrize("version, tp, gpu, expected", [
    ("v0.4", 1, H100, 0.88), ("v0.4", 2, H100, 0.87), ("v0.4", 4, H100, 0.85), ("v0.4", 8, H100, 0.81),
    ("v0.5", 1, H100, 0.835),     # reserve 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 MiB of 81,559
    ("v0.5", 1, load_gpu("rtx-4090"), round((24564 - (512 + 3072 + 48 + 128)) / 24564, 3))])
def test_sglang_default_fraction(version, tp, gpu, expected):
    assert default_fraction(parse_accounting(Engine.sglang, version), tp, gpu) == expected


L4 = load_gpu("l4")            # nvidia-smi 23,034 MiB
H200 = load_gpu("h200-sxm")    # nvidia-smi 143,771 MiB
B200 = load_gpu("b200")


@pytest.mark.parametrize("release, tp, gpu, expected", [
    # the TP tables of each release's server_args.py (sglang.py docstring), L4 at TP 1, 2, 4, 8, 16
    *[((0, 1, 17), tp, L4, f) for tp, f in ((1, 0.90), (2, 0.85), (4, 0.82), (8, 0.80), (16, 0.80))],
    *[((0, 2, 5), tp, L4, f) for tp, f in ((1, 0.89), (2, 0.88), (4, 0.86), (8, 0.84), (16, 0.80))],
    *[((0, 3, 0), tp, L4, f) for tp, f in ((1, 0.88), (2, 0.87), (4, 0.85), (8, 0.83), (16, 0.79))],
    ((0, 2, 7), 8, L4, 0.83), ((0, 3, 6), 8, L4, 0.82), ((0, 4, 0), 8, L4, 0.81), ((0, 4, 5), 8, L4, 0.81),
    ((0, 4), 8, L4, 0.81),       # '0.4' is v0.4.0
    (None, 8, L4, 0.81),         # no release: v0.4.0 - v0.4.5's table, as before
    # v0.4.6: above 96 GiB min(0.88 + 48 x 1024 x 0.12 / 143771, (143771 - 18432) / 143771) = min(0.92103, 0.87180)
    ((0, 4, 6), 1, H200, (143771 - 18432) / 143771),
    ((0, 4, 5), 1, H200, 0.88),
    # v0.4.7 on a B200 (183,358 MiB > 180,000): 0.79 (v0.4.6 there: (183358 - 18432) / 183358 = 0.89948)
    ((0, 4, 7), 8, B200, 0.79),
    # v0.4.8: round((M - R) / M, 3); L4 TP 1: R = (2.8 + 0.1) x 1024 = 2969.6 -> 20064.4 / 23034 = 0.8711
    ((0, 4, 8), 1, L4, 0.871),
    # H200 TP 8: R = (12 + 4) x 1024 = 16384 -> 127387 / 143771 = 0.88604
    ((0, 4, 10), 8, H200, 0.886),
])
def test_sglang_v0_4_fraction_by_release(release, tp, gpu, expected):
    got = default_fraction(parse_accounting(Engine.sglang, "v0.4"), tp, gpu, release)
    assert got == pytest.approx(expected, abs=1e-12)


def test_v0_4_6_indexes_by_tp_times_pp_and_v0_4_8_adds_dp_attention():
    """v0.4.6: TP 4 x PP 2 reads the TP 8 row (0.81); v0.4.5 reads TP 4's (0.85). v0.4.8 on an H100 (81,559 MiB) at
    TP 8: R = (9.5 + 4) GiB = 13,824 MiB -> 67,735 / 81,559 = 0.831; with DP attention + 4,096 -> 63,639 / 81,559 = 0.780."""
    v04 = parse_accounting(Engine.sglang, "v0.4")
    assert default_fraction(v04, 4, H100, (0, 4, 6), pipeline_parallel=2) == 0.81
    assert default_fraction(v04, 4, H100, (0, 4, 5), pipeline_parallel=2) == 0.85
    assert default_fraction(v04, 8, H100, (0, 4, 8)) == 0.831
    assert default_fraction(v04, 8, H100, (0, 4, 8), dp_attention=True) == 0.78


def test_release_reaches_the_pool_and_is_held_to_the_range():
    """EngineSettings.release picks the table: Mixtral on 8 L4s, v0.3.0's 0.83 against v0.4's 0.81."""
    from rooflab import load_model
    from rooflab.engines import engine_capacity
    from rooflab.errors import InputError
    from support import sglang

    model = load_model("mixtral-8x7b")
    new = engine_capacity(model, L4, sglang("v0.4", tensor_parallel=8, max_model_len=8192))
    old = engine_capacity(model, L4, sglang("v0.4", tensor_parallel=8, max_model_len=8192, release="0.3.0"))
    assert (new.utilization, old.utilization) == (0.81, 0.83)
    assert old.kv_cache_bytes > new.kv_cache_bytes
    with pytest.raises(InputError, match="outside sglang-v0.4's releases"):
        sglang("v0.4", release="0.5.3")
    with pytest.raises(InputError, match="outside sglang-v0.4's releases"):
        sglang("v0.4", release="0.1.16")


def test_memory_in_use_takes_f_of_itself_off_the_pool():
    """pool = f x (T - before - M) - weights: other processes' M GiB cost f M of the pool (sglang.py docstring)."""
    from rooflab import load_model
    from rooflab.engines import engine_capacity
    from rooflab.units import GiB
    from support import sglang

    model = load_model("llama-3-8b")
    alone = engine_capacity(model, H100, sglang("v0.5", max_model_len=8192))
    shared = engine_capacity(model, H100, sglang("v0.5", max_model_len=8192, memory_in_use_bytes=10 * GiB))
    f = alone.utilization
    assert alone.kv_cache_bytes - shared.kv_cache_bytes == pytest.approx(f * 10 * GiB, abs=2)
    total = shared.term("cuda_visible_total").bytes
    assert sum(t.bytes for t in shared.terms if t.name != "cuda_visible_total") == total


@pytest.mark.parametrize("version", ["v0.4", "v0.5"])
def test_pool_never_holds_more_than_the_total_with_other_processes(version):
    """SGLang sizes its pool from the free memory it measures (T - before - M), so a pool rooflab reports fits beside
    other processes' memory whatever M is; with nothing left it says SGLang would refuse to start."""
    from rooflab import load_model
    from rooflab.engines import engine_capacity
    from rooflab.units import GiB
    from support import sglang

    model = load_model("llama-3-8b")
    for gib in (1, 8, 20, 40, 60, 70):
        c = engine_capacity(model, H100, sglang(version, max_model_len=8192, memory_in_use_bytes=gib * GiB))
        if c.kv_cache_bytes == 0:
            assert any("would refuse to start" in n for n in c.notes)
            continue
        held = sum(t.bytes for t in c.terms if t.name not in ("cuda_visible_total", "margin"))
        assert held + c.term("margin").bytes == H100.cuda_visible_bytes and c.term("margin").bytes >= 0


def test_v0_5_reserve_grows_with_dp_attention_by_hand():
    """sglang-v0.5 (v0.5.3 server_args.py:650-658, v0.5.10 :1294-1302): with DP attention the reserve adds
    cuda_graph_max_bs x dp x 3 MiB, and x 1.5 more where cuda_graph_max_bs > 300. An H100 (80 GiB, under 160) at
    TP 8 takes chunk 8192 and graph batch 512: R = 512 + 8192 x 1.5 + 512 x 2 + 1024 = 14,848 MiB, and with --dp 8
    + 512 x 8 x 3 + 512 x 8 x 1.5 = 33,280 MiB."""
    v05 = parse_accounting("sglang", "v0.5")
    total = H100.hbm_capacity_bytes / MiB
    assert default_fraction(v05, 8, H100) == round((total - 14_848) / total, 3)
    assert default_fraction(v05, 8, H100, dp_attention=True, attention_data_parallel=8) == round(
        (total - 33_280) / total, 3)
    assert default_fraction(v05, 8, H100, dp_attention=True, attention_data_parallel=2) == round(
        (total - 14_848 - 512 * 2 * 4.5) / total, 3)


def test_v0_5_10_reserves_piecewise_cuda_graphs_where_they_are_on():
    """sglang v0.5.10 server_args.py: piecewise CUDA graphs on by default, captured at 4-32 by 4 (8), 48-256 by 16
    (14), 288-512 by 32 (8), 576-1024 by 64 (8), 1280-4096 by 256 (12), 4608-8192 by 512 (8) tokens up to the
    chunked prefill size 8,192 on an H100: 58 sizes x 8 MiB = 464 MiB more reserve (R 13,440 -> 13,904 MiB of
    81,559: f 0.835 -> 0.830); a Llama-2 path stops at 4,096 (50 sizes); MLA 1.5 GiB flat; off under DP attention,
    with LoRA, on AMD parts, and before v0.5.10."""
    from rooflab import load_model
    from rooflab.engines import EngineSettings, engine_capacity
    from rooflab.engines.sglang import piecewise_reserve_mib
    from rooflab.engines.settings import resolve
    v05 = parse_accounting("sglang", "v0.5")
    llama, llama2, v3 = load_model("llama-3-8b"), load_model("llama-2-7b"), load_model("deepseek-v3")

    def reserve(model, gpu=H100, **kw):
        settings = EngineSettings(v05, max_model_len=4096, **kw)
        return piecewise_reserve_mib(model, resolve(settings, model, gpu), gpu)

    assert reserve(llama) == 58 * 8 and reserve(llama, release=(0, 5, 10)) == 58 * 8
    assert reserve(llama2) == 50 * 8 and reserve(v3, tensor_parallel=8) == 1.5 * 1024
    assert reserve(llama, release=(0, 5, 9)) == 0 and reserve(llama, enable_lora=True) == 0
    assert reserve(v3, tensor_parallel=8, attention_data_parallel=8) == 0
    assert reserve(llama, gpu=load_gpu("mi300x")) == 0
    total = H100.hbm_capacity_bytes / MiB
    assert engine_capacity(llama, H100, EngineSettings(v05, max_model_len=4096)).utilization == round(
        (total - 13_904) / total, 3) == 0.830


def test_the_llama_2_cap_keys_on_the_checkpoints_path_not_rooflabs_spec_name():
    """sglang v0.5.10 server_args.py:1271 caps the piecewise tokens at 4,096 where '"llama-2" in
    self.model_path.lower()': the --model-path SGLang is given, which rooflab takes from the spec's source (the
    checkpoint's Hugging Face repo id, or a local config.json's directory), not the spec's name. The same Llama-2-7B
    named "my-chat-model" keeps the cap (50 sizes x 8 MiB on an H100, not 58); Llama-3-8B renamed "llama-2-ish" does
    not take it. The MLA reserve stays 1.5 GiB flat (:1305-1311: the 2,048-token MLA cap of :1257-1261 sets what is
    captured, not the reserve)."""
    import dataclasses

    from rooflab import load_model
    from rooflab.engines import EngineSettings
    from rooflab.engines.settings import resolve
    from rooflab.engines.sglang import piecewise_reserve_mib, sglang_model_path

    v05 = parse_accounting("sglang", "v0.5")
    llama2, llama3 = load_model("llama-2-7b"), load_model("llama-3-8b")

    def reserve(model, gpu=H100):
        return piecewise_reserve_mib(model, resolve(EngineSettings(v05, max_model_len=4096), model, gpu), gpu)

    assert sglang_model_path(llama2) == "meta-llama/Llama-2-7b-hf"
    assert sglang_model_path(dataclasses.replace(llama3, source="/ckpt/Llama-2-13b-chat/config.json")) == \
        "/ckpt/Llama-2-13b-chat"
    assert reserve(dataclasses.replace(llama2, name="my-chat-model")) == 50 * 8
    assert reserve(dataclasses.replace(llama3, name="llama-2-ish")) == 58 * 8
    assert reserve(dataclasses.replace(llama3, source="/ckpt/Llama-2-13b-chat/config.json")) == 50 * 8
    assert reserve(load_model("deepseek-v3"), gpu=H200) == 1.5 * 1024
