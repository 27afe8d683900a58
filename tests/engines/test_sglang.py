"""Tests of rooflab/engines/sglang.py: SGLang's default static memory fraction."""

from __future__ import annotations

import pytest

from rooflab import load_gpu
from rooflab.engines import Engine, parse_accounting
from rooflab.engines.sglang import default_fraction


H100 = load_gpu("h100-sxm")


@pytest.mark.parametrize("version, tp, gpu, expected", [
    ("v0.4", 1, H100, 0.88), ("v0.4", 2, H100, 0.87), ("v0.4", 4, H100, 0.85), ("v0.4", 8, H100, 0.81),
    ("v0.5", 1, H100, 0.835),     # reserve 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 MiB of 81,559
    ("v0.5", 1, load_gpu("rtx-4090"), round((24564 - (512 + 3072 + 48 + 128)) / 24564, 3))])
def test_sglang_default_fraction(version, tp, gpu, expected):
    assert default_fraction(parse_accounting(Engine.sglang, version), tp, gpu) == expected


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
