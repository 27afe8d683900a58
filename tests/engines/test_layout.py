"""Tests of rooflab/engines/layout.py: the engines' block layouts. vLLM v1 reproduces v0.19's token lines, v0 counts
every layer at full length, and SGLang's 'K size' line (sglang#4760). Golden figures cite the public log they come
from (tests/data/engine_logs/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines.layout import sglang_cell, vllm_layout
from rooflab.engines.settings import resolve
from rooflab.units import GiB
from support import sglang, vllm


DATA = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
H100 = load_gpu("h100-sxm")


LLAMA31 = load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml")


# --- layouts ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, tp, kv_gib, tokens, concurrency", [
    ("gemma-3-27b", 1, 19.53, 36560, 4.46),             # 10 full + 52 sliding layers: 7 groups, 8 padding layers
    ("gpt-oss-20b", 2, 59.32, 2591776, 316.07),         # 12 + 12: 2 groups
    (DATA / "models" / "gemma-2-27b.yaml", 1, 20.59, 58672, 7.16),
    (DATA / "models" / "deepseek-v2-lite.yaml", 1, 43.61, 1505552, 183.78),   # MLA: 576 x 2 B a token a layer
])
def test_v1_layout_reproduces_v019_token_lines(model, tp, kv_gib, tokens, concurrency):
    """vLLM v0.19.0 logs: 'Available KV cache memory' -> 'GPU KV cache size' and 'Maximum concurrency' (8,192)."""
    spec = load_model(model)
    s = resolve(vllm(tensor_parallel=tp, max_model_len=8192), spec, H100)
    layout = vllm_layout(spec, s)
    blocks = layout.num_blocks(int(kv_gib * GiB))
    # two-decimal GiB leaves the block count uncertain by a few blocks; the logged figures fall in that range
    spread = [layout.tokens(layout.num_blocks(int((kv_gib + d) * GiB))) for d in (-0.005, 0.005)]
    assert spread[0] <= tokens <= spread[1]
    assert layout.concurrency(blocks, 8192) == pytest.approx(concurrency, abs=0.02)


def test_v0_counts_every_layer_full_length():
    gemma = load_model("gemma-3-27b")
    v0 = vllm_layout(gemma, resolve(vllm("v0", max_model_len=8192), gemma, H100))
    assert v0.num_groups == 1 and v0.block_bytes == 16 * 62 * 16 * 128 * 2 * 2


def test_sglang_k_size_line():
    """sglang#4760: 442,750 tokens of Llama-3.1-8B on one GPU: 'K size: 27.02 GB' (the pool keeps one page more)."""
    cell = sglang_cell(LLAMA31, resolve(sglang(), LLAMA31, H100))
    assert cell.block_bytes == 32 * 8 * 128 * 2 * 2
    assert (442750 + 1) * cell.k_bytes_per_token / GiB == pytest.approx(27.02, abs=0.005)
