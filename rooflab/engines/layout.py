"""How an engine cuts its KV-cache bytes into blocks, and what its log lines count.

vLLM, one page per layer = block_size x the layer's bytes per token on this GPU (K and V of its KV heads,
replicated past h_kv; MLA's latent on every rank; vllm v0.6.4 vllm/worker/cache_engine.py get_cache_block_size,
vllm v0.10.0 vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes):

    V0        a block spans every attention layer, windows or not: num_blocks = KV // (block x all layers' bytes);
              "# GPU blocks: N"; "Maximum concurrency for L tokens per request: N x block / L"
    V1        one model-wide group when every layer is alike: the same num_blocks; "GPU KV cache size:
              N x block tokens"; concurrency N / ceil(L / block) (vllm v0.10.0 vllm/v1/core/kv_cache_utils.py)
    V1 hybrid layers grouped by kind (full, each window, each chunk): group_size = the fewest layers of one kind,
              a kind with more layers fills ceil(n / group_size) groups; a block id holds one page of group_size
              layers: num_blocks = KV // (page x group_size); the tokens line prints
              num_blocks // groups x block; a request holds ceil(L / block) blocks per full group and
              ceil(min(W - 1 + max_num_batched_tokens, L) / block) + 1 per sliding group (v0.10.0
              kv_cache_utils.py _get_kv_cache_config_uniform_page_size, kv_cache_interface.py
              SlidingWindowSpec.max_memory_usage_bytes)

SGLang, page_size tokens a page (1 by default): cell = bytes one token takes in every layer on this GPU
(sglang v0.4.6 python/sglang/srt/model_executor/model_runner.py profile_max_num_token); its pool allocates
(tokens + page_size) slots, so "K size" = (N + page) x K bytes per token (mem_cache/memory_pool.py).
Sliding-window layers count as full layers in both SGLang accountings modelled (v0.5's separate SWA pool is not
modelled); linear-attention (Mamba-style) layers are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..kvcache import kv_layout
from ..specs import ModelSpec
from .settings import Resolved


@dataclass(frozen=True)
class BlockLayout:
    """One block id's bytes, how many groups share the pool, and what one max_model_len request holds."""

    block_size: int
    block_bytes: int
    num_groups: int
    blocks_per_request: int
    group_size: int
    v1: bool
    k_bytes_per_token: int = 0

    def num_blocks(self, kv_bytes: int) -> int:
        return max(0, kv_bytes) // self.block_bytes

    def tokens(self, num_blocks: int) -> int:
        """What the engine logs as its KV-cache size in tokens (V1: per group)."""
        return num_blocks // self.num_groups * self.block_size

    def concurrency(self, num_blocks: int, max_model_len: int) -> float:
        """Requests of max_model_len tokens the blocks hold, as the engine prints it."""
        if self.v1:
            return num_blocks / self.blocks_per_request
        return num_blocks * self.block_size / max_model_len


def vllm_layout(model: ModelSpec, s: Resolved) -> BlockLayout:
    """vLLM's blocks for `model` with the resolved settings (module docstring)."""
    layers = _layers(model, s)
    block = s.block_size
    pages = -(-s.max_model_len // block)
    if not s.accounting.is_v1 or len({_kind_key(model, n) for n, _, _ in layers}) == 1:
        per_token = sum(count * b for _, count, b in layers)
        return BlockLayout(block, block * per_token, 1, pages, sum(c for _, c, _ in layers), s.accounting.is_v1)
    sizes = {b for _, _, b in layers}
    if len(sizes) > 1:
        raise InputError(f"{model.name}: vLLM V1's hybrid allocator needs one page size for every layer kind; "
                         f"this model's kinds keep {', '.join(map(str, sorted(sizes)))} bytes per token")
    group_size = min(count for _, count, _ in layers)
    groups = blocks = 0
    for name, count, _ in layers:
        n = -(-count // group_size)
        groups += n
        blocks += n * _request_pages(model, name, s)
    return BlockLayout(block, block * group_size * sizes.pop(), groups, blocks, group_size, True)


def sglang_cell(model: ModelSpec, s: Resolved) -> BlockLayout:
    """SGLang's pool: `page_size` tokens a page, every layer (module docstring); K bytes per token for the K-size line."""
    layers = _layers(model, s)
    cell = sum(count * b for _, count, b in layers)
    k = 0
    for name, count, b in layers:
        k += count * model.layer_types[name].key_bytes(b, model.heads)
    page = s.block_size
    return BlockLayout(page, page * cell, 1, -(-s.max_model_len // page), sum(c for _, c, _ in layers), False,
                       k_bytes_per_token=k)


def _layers(model: ModelSpec, s: Resolved) -> list[tuple[str, int, int]]:
    """(layer type, layers, bytes per token per layer on one GPU) for every attention layer type."""
    layout = kv_layout(model, 1, s.kv_dtype, s.block_size, s.attention_tensor_parallel,
                       mla_sparse_fp8=s.kv_cache_dtype.mla_sparse_fp8)
    linear = [k.name for k in layout.layers if not model.layer_types[k.name].is_attention]
    if linear:
        raise InputError(f"{model.name}: the engines' state caches for linear-attention layers ({linear[0]}) are "
                         "not modelled; rooflab models their KV caches for softmax and MLA layers only")
    return [(k.name, k.num_layers, k.bytes_per_token) for k in layout.layers]


def _kind_key(model: ModelSpec, name: str) -> tuple:
    return model.layer_types[name].allocator_group


def _request_pages(model: ModelSpec, name: str, s: Resolved) -> int:
    """Pages one max_model_len request holds in one layer of this type (V1's max_memory_usage_bytes / page)."""
    return model.layer_types[name].request_pages(s.max_model_len, s.max_num_batched_tokens, s.block_size)


__all__ = ["BlockLayout", "sglang_cell", "vllm_layout"]
