"""Tests of rooflab/kvcache.py: KV bytes per token and per sequence, and what a batch holds.

Golden values: DeepSeek-V3's latent cache (technical report, section 2.1.1: 512 + 64 per token per layer),
Gemma-3-27B and others at 64k tokens in 16-token pages; windows and fp8 shrinking a batch; a sparse MLA layout
on a model without MLA refused; bad arguments named; lists of lengths.
"""

from __future__ import annotations

import pytest

from rooflab.cost.batch import DecodeBatch
from rooflab.kvcache import batch_memory, kv_layout, longest_context, pages_kept
from rooflab.load import load_gpu, load_model
from rooflab.specs import MLA_SPARSE_FP8_BYTES
from rooflab.units import DType, GiB
from rooflab.vocab import WindowAllocation


# --- golden values ----------------------------------------------------------------------------------------

def test_deepseek_v3_latent_cache_per_token():
    """DeepSeek-V3 technical report, section 2.1.1: one (d_c + d_R) = 512 + 64 latent per token per layer."""
    m = load_model("deepseek-v3")
    assert m.kv_bytes_per_token(DType.bf16) == 61 * 576 * 2 == 70_272
    assert m.kv_bytes_per_token(DType.fp8_e4m3) == 61 * 576 == 35_136
    mla = m.layer_types["mla"]
    assert MLA_SPARSE_FP8_BYTES == 656        # FlashMLA's fp8 layout: 512 e4m3 + 4 fp32 scales + 64 bf16 rope
    assert mla.kv_bytes_per_token(m.heads, DType.bf16, mla_sparse_fp8=True) == 656
    assert kv_layout(m, 1, DType.bf16, 1, mla_sparse_fp8=True).bytes_per_token_full == 61 * 656


@pytest.mark.parametrize("name, full_gib, hybrid_gib", [("gemma-3-27b", 31.00, 5.41), ("gpt-oss-120b", 4.50, 2.25)])
def test_kv_per_sequence_at_64k_tokens(name, full_gib, hybrid_gib):
    """65,536 tokens in 16-token pages, bf16. Gemma-3-27B: 62 x 65,536 x 8 KiB = 31.00 GiB with full-length
    tables; 10 full layers + 52 sliding ones of 65 pages = 5.41 GiB. gpt-oss-120b: 36 x 65,536 x 2 KiB =
    4.50 GiB; 18 full + 18 sliding of 9 pages (window 128) = 2.25 GiB."""
    m = load_model(name)
    full = kv_layout(m, 65_536, DType.bf16, 16, allocation=WindowAllocation.full).bytes_per_sequence
    hybrid = kv_layout(m, 65_536, DType.bf16, 16, allocation=WindowAllocation.hybrid).bytes_per_sequence
    assert round(full / GiB, 2) == full_gib and round(hybrid / GiB, 2) == hybrid_gib


H100 = load_gpu("h100-sxm")


def test_windows_and_fp8_shrink_what_a_batch_holds():
    gemma = load_model("gemma-2-9b")
    batch = DecodeBatch.uniform(8192, 32)
    full = batch_memory(gemma, H100, batch, DType.bf16)
    fp8 = batch_memory(gemma, H100, batch, DType.fp8_e4m3)
    assert fp8.kv_bytes * 2 == full.kv_bytes
    assert full.kv_bytes < 32 * kv_layout(gemma, 8193, DType.bf16).bytes_per_token_full * 8208   # windows keep less


def test_sparse_mla_layout_on_a_model_without_mla_is_refused():
    """--kv-cache-dtype fp8_ds_mla on llama-3-8b was priced as plain fp8 without a word; vLLM refuses it."""
    from rooflab.errors import InputError

    with pytest.raises(InputError, match="fp8_ds_mla"):
        kv_layout(load_model("llama-3-8b"), 8192, DType.fp8_e4m3, mla_sparse_fp8=True)
    assert kv_layout(load_model("deepseek-v3"), 8192, DType.fp8_e4m3, mla_sparse_fp8=True).bytes_per_sequence > 0


@pytest.mark.parametrize("call, named", [
    (lambda m: kv_layout(m, 8192, "nope"), "kv_dtype"),
    (lambda m: kv_layout(m, 8192, DType.fp16, allocation="nope"), "allocation"),   # accepted as hybrid before
    (lambda m: kv_layout(m, 8192, DType.fp16, tensor_parallel=0), "tensor parallel"),
    (lambda m: longest_context(m, -1, DType.fp16), "budget_bytes"),                # returned 0 before
    (lambda m: longest_context(m, float("nan"), DType.fp16), "budget_bytes"),
    (lambda m: pages_kept(None, 100, 16), "layer"),
    (lambda m: pages_kept(m.layer_types["full"], 100, 0), "page size"),
    (lambda m: batch_memory(m, load_gpu("h100-sxm"), [8192], DType.fp16, q_len=0), "q_len"),
])
def test_kv_functions_name_a_bad_argument(call, named):
    from rooflab.errors import InputError

    with pytest.raises(InputError, match=named):
        call(load_model("llama-3-8b"))


def test_batch_memory_takes_a_list_of_lengths():
    from rooflab.cost.batch import decode_batch

    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    assert batch_memory(model, gpu, [8192, 1024], DType.fp16) == batch_memory(model, gpu, decode_batch([8192, 1024]),
                                                                               DType.fp16)


def test_a_jamba_sequence_keeps_28_states_beside_4_layers_of_kv():
    """Jamba-v0.1's shape (support.JAMBA_V01) in bf16 at 32k tokens: each Mamba-1 layer a fixed state of
    (8,192 x 3 + 8,192 x 16) x 2 bytes whatever the length (LayerType.state_elements), each attention layer
    2 x 8 x 128 x 2 bytes a token in 2,048 pages of 16 tokens."""
    from support import JAMBA_V01, read_config

    layout = kv_layout(read_config(JAMBA_V01), 32768, DType.bf16)
    by_name = {k.name: k for k in layout.layers}
    assert (by_name["linear"].num_layers, by_name["full"].num_layers) == (28, 4)
    assert by_name["linear"].bytes_per_token == 0 and by_name["full"].bytes_per_token == 4096
    assert layout.bytes_per_sequence == 28 * (8192 * 3 + 8192 * 16) * 2 + 4 * 2048 * 16 * 4096
