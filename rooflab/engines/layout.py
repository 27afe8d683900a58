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
modelled). Linear (Gated DeltaNet, Mamba) layers keep no KV: SGLang's cell counts the attention layers only and
its state pool is sglang.py's; vLLM V1 keeps their states in the same block pool (hybrid_layout below).

vLLM V1 with linear layers (states.py for the state's bytes S a layer and sequence):

    block     the attention block grows until its page holds a state: 16 ceil(S / (16 x attention bytes per
              token)) tokens (states.vllm_hybrid_block_size); each state page is padded to the attention page
    groups    the attention kinds and the linear layers grouped as above (group_size = the fewest layers of one
              kind): Qwen3-Next's 12 full and 36 linear layers make 1 + 3 groups of 12
    request   ceil(L / block) blocks per full group, and per linear group 1 block with --mamba-cache-mode none,
              2 with align (kv_cache_interface.py MambaSpec.max_memory_usage_bytes); the tokens line prints
              num_blocks // groups x the smallest group block (the state groups' block is max_model_len under
              none: kv_cache_utils.py _report_kv_cache_config)
    refusal   every decode sequence needs a state block: vLLM refuses max_num_seqs above num_blocks
              ("max_num_seqs (N) exceeds available Mamba cache blocks (M)", PR #38270, v0.19; vllm.py notes it)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..kvcache import kv_layout
from ..specs import ModelSpec
from .settings import Resolved, model_dtype
from .states import VLLM_STATE_PAGES, StateLayers, state_layers, vllm_hybrid_block_size
from .vocab import Engine, MambaCacheMode


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
    token_block: int = 0          # the block the tokens line multiplies by (0: block_size)
    state_groups: int = 0         # vLLM V1: groups of linear layers, each a state page per request

    def num_blocks(self, kv_bytes: int) -> int:
        return max(0, kv_bytes) // self.block_bytes

    def tokens(self, num_blocks: int) -> int:
        """What the engine logs as its KV-cache size in tokens (V1: per group)."""
        return num_blocks // self.num_groups * (self.token_block or self.block_size)

    def concurrency(self, num_blocks: int, max_model_len: int) -> float:
        """Requests of max_model_len tokens the blocks hold, as the engine prints it."""
        if self.v1:
            return num_blocks / self.blocks_per_request
        return num_blocks * self.block_size / max_model_len


def vllm_layout(model: ModelSpec, s: Resolved) -> BlockLayout:
    """vLLM's blocks for `model` with the resolved settings (module docstring)."""
    layers = _layers(model, s)
    states = engine_states(model, s, Engine.vllm)
    if states:
        return hybrid_layout(model, s, layers, states)
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


def hybrid_layout(model: ModelSpec, s: Resolved, layers: list[tuple[str, int, int]],
                  states: tuple[StateLayers, ...]) -> BlockLayout:
    """vLLM V1's blocks for a model with linear-attention layers (module docstring)."""
    sizes = {b for _, _, b in layers}
    if len(sizes) != 1:
        raise InputError(f"{model.name}: vLLM V1's hybrid allocator needs one page size for every attention layer "
                         f"kind; this model's keep {', '.join(map(str, sorted(sizes)))} bytes per token")
    per_token = sizes.pop()
    block = vllm_hybrid_block_size(per_token, max(st.bytes_per_layer for st in states), s.block_size)
    counts = [count for _, count, _ in layers] + [st.num_layers for st in states]
    group_size = min(counts)
    groups = blocks = state_groups = 0
    for name, count, _ in layers:
        n = -(-count // group_size)
        groups += n
        blocks += n * model.layer_types[name].request_pages(s.max_model_len, s.max_num_batched_tokens, block)
    for st in states:
        n = -(-st.num_layers // group_size)
        groups += n
        state_groups += n
        blocks += n * VLLM_STATE_PAGES[s.mamba_cache_mode]
    token_block = min(block, s.max_model_len) if s.mamba_cache_mode is MambaCacheMode.none else block
    return BlockLayout(block, block * per_token * group_size, groups, blocks, group_size, True,
                       token_block=token_block, state_groups=state_groups)


def engine_states(model: ModelSpec, s: Resolved, engine: Engine) -> tuple[StateLayers, ...]:
    """The model's linear layers' states as `engine` allocates them on one GPU (states.py); () for a model
    without any. An accounting older than the engine's linear-attention support refuses them."""
    if all(t.is_attention for t in model.layer_types.values()):
        return ()
    mamba = any(t.linear_mixer is not None and t.linear_mixer.is_mamba for t in model.layer_types.values())
    if engine is Engine.vllm and not s.accounting.is_v1 and mamba:
        raise InputError(f"{model.name}: rooflab models Mamba layers' states as vLLM V1 keeps them in its block "
                         f"pool; {s.accounting.releases}'s separate MambaCacheManager is not modelled; use "
                         "--engine-version v1")
    if engine is Engine.vllm and not s.accounting.is_v1:
        raise InputError(f"{model.name}: {s.accounting.releases} serves no linear-attention (Gated DeltaNet) model "
                         "(vLLM added Qwen3-Next in V1, v0.10.2); use --engine-version v1")
    if engine is Engine.sglang and s.accounting.short == "v0.4":
        raise InputError(f"{model.name}: {s.accounting.releases} has no linear-attention (Gated DeltaNet) state pool "
                         "(SGLang added Qwen3-Next in v0.5); use --engine-version v0.5")
    tp = s.tensor_parallel if engine is Engine.vllm else s.attention_tensor_parallel
    return state_layers(model, engine, tp, model_dtype(model), s.mamba_ssm_dtype)


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
    """(layer type, layers, bytes per token per layer on one GPU) for every attention layer type (linear layers
    keep states, not KV: engine_states)."""
    layout = kv_layout(model, 1, s.kv_dtype, s.block_size, s.attention_tensor_parallel,
                       mla_sparse_fp8=s.kv_cache_dtype.mla_sparse_fp8)
    return [(k.name, k.num_layers, k.bytes_per_token) for k in layout.layers
            if model.layer_types[k.name].is_attention]


def _kind_key(model: ModelSpec, name: str) -> tuple:
    return model.layer_types[name].allocator_group


def _request_pages(model: ModelSpec, name: str, s: Resolved) -> int:
    """Pages one max_model_len request holds in one layer of this type (V1's max_memory_usage_bytes / page)."""
    return model.layer_types[name].request_pages(s.max_model_len, s.max_num_batched_tokens, s.block_size)


__all__ = ["BlockLayout", "engine_states", "hybrid_layout", "sglang_cell", "vllm_layout"]
