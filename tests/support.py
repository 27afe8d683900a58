"""What several per-module test files share (not a test file: pytest collects nothing here).

- `refused`: an API call's bad-input error, its type, a short message naming what was wrong (the CLI's
  equivalent, exit 2 and one or two lines on stderr, lives with the CLI tests and the fuzz suites);
- model specs written for a layer type's rule (GEMMA3, DEEPSEEK), each citing its source;
- measurement rows of the bench's cases without a GPU (`_row`, `_impl`, META);
- the engine start-up logs and benchmarks/engine_capacity.py, loaded once.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

from rooflab.bench.cases import Case
from rooflab.bench.records import Measurement
from rooflab.errors import InputError
from rooflab.vocab import Kernel

#: A message fits one or two terminal lines; the fuzz suite allows 4,000 characters, this is the intent.
SHORT = 400
#: An integer past every limit rooflab sets (and past int64).
HUGE = 10**60


def refused(call, *names: str, error: type = InputError) -> str:
    """Run `call`; it must raise `error` whose short message names each of `names` (case-insensitive)."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert len(message) <= SHORT, f"a message of {len(message):,} characters"
    for name in names:
        assert name.lower() in message.lower(), f"{name!r} not in: {message}"
    return message


# Model specs written for a layer type's rule (the explain and report tests share them); each cites its source.
_COMMON = "ffn_size: 8192\nvocab_size: 32000\nmax_context_len: 131072\n"

# Gemma 3 technical report: five local layers (window 1024) per global one; 27B: 62 layers, 32/16 heads of 128
GEMMA3 = """
name: gemma3-like
display_name: Gemma-3-like 5:1
num_layers: 62
hidden_size: 5376
num_qo_heads: 32
num_kv_heads: 16
head_dim: 128
source: Gemma 3 technical report (local:global 5:1, window 1024)
layer_types:
  local: {kind: sliding, window: 1024}
  global: {kind: full}
layer_pattern: [local, local, local, local, local, global]
""" + _COMMON

# DeepSeek-V3 technical report section 2.1.1 and its config.json
DEEPSEEK = """
name: deepseek-v3-like
display_name: DeepSeek-V3-like
num_layers: 61
hidden_size: 7168
num_qo_heads: {heads}
num_kv_heads: {heads}
head_dim: 192
v_head_dim: 128
source: DeepSeek-V3 technical report, section 2.1.1 (MLA)
layer_types:
  mla: {{kind: mla, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, q_lora_rank: 1536}}
""" + _COMMON


# Measurement rows of the bench's cases without a GPU (the bench and fit tests share them).
META = {"gpu_spec": "h200-sxm", "device_name": "NVIDIA H200", "date": "fixture"}
#: Timed repeats a row records.
REPEATS = 20


def _row(case: Case, impl: str = "rooflab", time_s: float = 1e-3) -> Measurement:
    return case.measurement(impl, time_s, time_s, time_s, REPEATS, 1e-3)


def _impl(case: Case) -> str:
    """The implementation rooflab's bench records on an H200 (ours.impl_name without a GPU): the wgmma kernels for
    flash (d 128) and for MLA with a 16-bit latent and >= 64 query rows a sequence."""
    if case.kernel is Kernel.flash_window:
        return "rooflab_hopper"
    if case.kernel is Kernel.mla_decode and case.kv_dtype is None and case.q_len * case.heads.num_qo_heads >= 64:
        return "rooflab_hopper"
    return "rooflab"


#: The engines' public start-up logs and the cases built on them (tests/data/engine_logs/SOURCES.md).
ENGINE_LOGS = Path(__file__).resolve().parent / "data" / "engine_logs"


@functools.cache
def engine_capacity_bench():
    """benchmarks/engine_capacity.py as a module (its cases and how each is evaluated), loaded once for every test
    file that checks the engines against the logged runs."""
    spec = importlib.util.spec_from_file_location(
        "engine_capacity", Path(__file__).resolve().parents[1] / "benchmarks" / "engine_capacity.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_capacity"] = module        # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module
