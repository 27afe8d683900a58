"""Start-up settings that override an engine's own sizing, each as the engine applies it (vllm.py and sglang.py
call these; EngineSettings validates them and refuses them for the engine or release without the option):

    enforce_eager            vLLM's --enforce-eager, SGLang's --disable-cuda-graph: no CUDA graphs are captured.
                             vLLM V1 from v0.20.0 then subtracts a CUDA-graph estimate of 0 (cudagraph.py:
                             cudagraph_mode NONE); every other vLLM accounting sizes the cache before it captures
                             graphs, inside the (1 - u) margin, so the KV figure is as without it and the graphs'
                             share of the margin stays free. SGLang: ModelRunner.init_cuda_graphs returns at once
                             (python/sglang/srt/model_executor/model_runner.py, v0.4.x: "if
                             self.server_args.disable_cuda_graph: return"), graphs live in the (1 - f) margin, and
                             the default mem_fraction_static reserves 2 cuda_graph_max_bs MiB for them all the same
                             (server_args.py _handle_gpu_memory_settings, v0.5.x: "reserved_mem +=
                             self.cuda_graph_max_bs * 2", no disable_cuda_graph test; sglang-v0.4's table by TP size
                             and v0.4.8's reserve by GPU memory name no graphs): the pool is as without it.
                             Not read: whether v0.5.10's piecewise reserve (sglang.piecewise_reserve_mib) is dropped
                             under --disable-cuda-graph; it is kept. Not modelled: vLLM's profile run without
                             torch.compile under --enforce-eager (profile.py's activation peak has no fusion term, so
                             it is the same either way).
    num_gpu_blocks_override  vLLM sizes its blocks, then sets them to N, logging "Overriding num_gpu_blocks=M with
                             num_gpu_blocks_override=N": V0 vllm/engine/llm_engine.py _initialize_kv_caches (v0.6.x -
                             v0.10.x as read; v0.2.x not checked), V1 vllm/v1/core/kv_cache_utils.py
                             may_override_num_blocks, called by get_num_blocks. 'Available KV cache memory' is the
                             worker's figure from before it; '# GPU blocks' (V0, the executor's initialize_cache),
                             'GPU KV cache size' and 'Maximum concurrency' (V1, from kv_cache_config.num_blocks)
                             report N (vllm#27181's log: "Overriding num_gpu_blocks=125643 with
                             num_gpu_blocks_override=1", then "GPU KV cache size: 16 tokens"). The kv_cache term is
                             N x the block's bytes; what the sized memory leaves beside it is the margin term
                             num_gpu_blocks_override_rest (negative where N passes the blocks sized). vLLM allocates
                             N blocks whatever the memory (no check compares N with the memory: vllm#27181), so
                             N above the blocks it sized runs out of memory: a note says so.
                             V1 v0.9.1 logs the line and keeps M: its get_num_blocks never assigns N
                             (kv_cache_utils.py:644-663 in the 0.9.1 wheel); v0.8.5 and v0.9.0 assign it in
                             _get_kv_cache_config_uniform_type (:624-630, :627-633), v0.9.2 in get_num_blocks
                             (vllm#19503, :657-663). V0 assigns it (0.7.3 llm_engine.py:423-434).
                             The start-up check of one request of max_model_len (refusal_note): V0 checks the N blocks
                             kept (0.7.3 worker.py initialize_cache -> raise_if_cache_size_invalid, :285-296,
                             :532-549); V1 checks the sized memory before v0.21.0 (check_enough_kv_cache_memory) and
                             N x bytes per block from v0.21.0 (vllm#41069, get_kv_cache_configs; in the 0.21.0 and
                             0.22.0 wheels, not 0.20.0's), less the null block from v0.29.0 (0.29.0 wheel
                             kv_cache_utils.py:2294-2331; not in 0.24.0, 0.26.0 or 0.28.0); a label checks as before
                             v0.21.0 (vllm.given_release). Not modelled: the same length check on a sized cache
                             without an override (only "nothing is left" is).
    kv_cache_memory_bytes    vLLM V1's --kv-cache-memory-bytes, from v0.11.0 (settings.KV_CACHE_MEMORY_RELEASE):
                             determine_available_memory runs the profile without measuring it and returns the bytes
                             given ("reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes config
                             and skipped memory profiling. This does not respect the gpu_memory_utilization config",
                             vllm/v1/worker/gpu_worker.py), before any CUDA-graph estimate. The weights, activation
                             peak and non-torch memory are held but subtracted from nothing; what they and the cache
                             leave of the total is the margin. vLLM checks no fit: a cache past the total is a note.
                             check_enough_kv_cache_memory still checks the given bytes against one request of
                             max_model_len: too few is vLLM's start-up refusal (refusal_note).
                             The start-up refusal when less than u x total is free (init_device) still applies:
                             it reads gpu_memory_utilization before any sizing (vllm.check_memory_in_use).
    max_total_tokens         SGLang's --max-total-tokens: max_total_num_tokens = min(profiled, N), floored to
                             page_size (model_runner.py init_memory_pool, v0.4.x; on main model_runner_kv_cache_
                             mixin.py _apply_token_constraints), N above the profiled value logging "max_total_tokens=N
                             is larger than the profiled value M. Use the profiled value instead."; the memory the
                             cap leaves unallocated is a margin term. max_num_reqs (the req_to_token pool's rows)
                             comes from the profiled tokens before the cap in v0.4.x (init_memory_pool computes it
                             first) and from the capped ones on main (_resolve_max_num_reqs: "from the finalized
                             token capacity"), which sglang-v0.5 follows here; max_running_requests' tokens // 2 takes
                             the capped tokens in both (sglang.max_running_requests). The release where the order
                             changed was not found. A pool of 0 tokens after the cap and the page floor is SGLang's
                             start-up refusal ("Not enough memory", init_memory_pool; sglang.py). Not modelled:
                             v0.5.10's cap of the piecewise CUDA-graph sizes by --max-total-tokens
                             (server_args.py:1263-1267).
"""

from __future__ import annotations

from typing import Optional

from ..units import GiB
from .layout import BlockLayout
from .result import Role, Term
from .settings import Resolved
from .vocab import Accounting, Engine


def given_kv_terms(s: Resolved, total_src: str, used: list[Term], others: tuple[Term, ...]) -> tuple[tuple[Term, ...],
                                                                                                      tuple[str, ...]]:
    """vLLM V1's terms under --kv-cache-memory-bytes (module docstring): the total, the margin the cache and the held
    terms leave, the held terms, the cache as given; and a note where they pass the total."""
    total, kv = s.cuda_visible_bytes, s.kv_cache_memory_bytes
    held = [Term(t.name, t.bytes, f"held, not subtracted (profiling skipped): {t.source}", t.role) for t in used]
    free = total - kv - sum(t.bytes for t in held) - sum(t.bytes for t in others)
    notes = ()
    if free < 0:
        notes = (f"--kv-cache-memory-bytes {kv / GiB:.2f} GiB and the modelled weights, activation peak and non-torch "
                 f"memory pass the CUDA-visible total by {-free / GiB:.2f} GiB: vLLM checks no fit here and would run "
                 "out of memory allocating the cache",)
    terms = (Term("cuda_visible_total", total, total_src, Role.total),
             Term("margin", free, "what the given KV cache and the held terms leave of the total (gpu_memory_"
                                  "utilization does not size the cache); CUDA graphs live here", Role.margin),
             *others, *held,
             Term("kv_cache", kv, "--kv-cache-memory-bytes: reserved as given, memory profiling skipped "
                                  "(gpu_worker.py determine_available_memory)", Role.kv))
    return terms, notes


#: The V1 release whose get_num_blocks logs the override and keeps the blocks it sized (module docstring).
OVERRIDE_IGNORED_RELEASE = (0, 9, 1)
#: From this release vLLM V1 checks --num-gpu-blocks-override's blocks, not the sized memory, against max_model_len
#: (vllm#41069: get_kv_cache_configs sets the available memory to N x bytes per block before the check; read in the
#: 0.21.0, 0.22.0 and 0.29.0 wheels, absent from 0.20.0's).
OVERRIDE_CHECKED_RELEASE = (0, 21)
#: From this release vLLM V1's memory check holds back the null block (kv_cache_utils.py:975-984 and :2316-2320 in
#: the 0.29.0 wheel; absent from the 0.24.0, 0.26.0 and 0.28.0 wheels).
NULL_BLOCK_CHECKED_RELEASE = (0, 29)


def override_ignored(s: Resolved, release: tuple[int, ...] | None) -> bool:
    """vLLM V1 v0.9.1 logs the override and keeps its sized blocks (module docstring); `release` as given."""
    return s.accounting.is_v1 and release is not None and release[:3] == OVERRIDE_IGNORED_RELEASE


def override_blocks(s: Resolved, terms: tuple[Term, ...], sized: int, block_bytes: int,
                    release: tuple[int, ...] | None) -> tuple[int, tuple[Term, ...], tuple[str, ...]]:
    """The blocks vLLM keeps, the terms with the KV cache as those blocks' bytes (the rest of the sized memory a
    margin term, as SGLang's max_total_tokens_cap), and a note (module docstring). `terms` ends with the kv term;
    `release` is the release given (vllm.given_release)."""
    n = s.num_gpu_blocks_override
    if n is None:
        return sized, terms, ()
    if override_ignored(s, release):
        return sized, terms, (f"--num-gpu-blocks-override {n:,}: vLLM v0.9.1 logs the override and keeps the "
                              f"{sized:,} blocks it sized (get_num_blocks does not assign it: vllm/v1/core/"
                              "kv_cache_utils.py:644-663 in the 0.9.1 wheel; vllm#19503 fixed it in v0.9.2)",)
    kept = n * block_bytes
    *head, sized_term = terms
    note = (f"--num-gpu-blocks-override {n:,}: vLLM sized {sized:,} blocks ({sized * block_bytes / GiB:.2f} GiB) and "
            f"keeps {n:,} ({kept / GiB:.2f} GiB)")
    if n > sized:
        note += (f", {(n - sized) * block_bytes / GiB:.2f} GiB more than it found for the cache: it would run out of "
                 "memory allocating them (it checks the memory, not the override: vllm#27181)")
    rest = Term("num_gpu_blocks_override_rest", sized_term.bytes - kept,
                f"--num-gpu-blocks-override {n:,}: what the sized KV cache ({sized_term.bytes / GiB:.2f} GiB) leaves "
                "beside the blocks kept (negative: the blocks ask for more)", Role.margin)
    kv = Term("kv_cache", kept, f"--num-gpu-blocks-override {n:,} blocks x {block_bytes:,} bytes", Role.kv)
    return n, (*head, rest, kv), (note,)


def refusal_note(s: Resolved, layout: BlockLayout, kv_bytes: int, blocks: int,
                 release: tuple[int, ...] | None) -> tuple[str, ...]:
    """vLLM's start-up refusal where a cache set by --num-gpu-blocks-override or --kv-cache-memory-bytes holds no
    request of max_model_len (module docstring), or none.

    V1 checks memory (check_enough_kv_cache_memory): `kv_bytes`, the sized or given cache, or from
    OVERRIDE_CHECKED_RELEASE the override's blocks, less a null block from NULL_BLOCK_CHECKED_RELEASE, against the
    blocks one request of max_model_len holds (layout.blocks_per_request). V0 checks the `blocks` it keeps, the
    override's included (raise_if_cache_size_invalid). `release` is the release given (vllm.given_release)."""
    n, checked, block_bytes = s.num_gpu_blocks_override, kv_bytes, layout.block_bytes
    if n is None and s.kv_cache_memory_bytes is None:
        return ()       # a sized cache: _budget_terms' refusal where none is left; the length check not modelled
    if s.accounting.is_v1:
        later = release is not None
        if n is not None and later and release >= OVERRIDE_CHECKED_RELEASE:
            checked = n * block_bytes
        if later and release >= NULL_BLOCK_CHECKED_RELEASE:
            checked -= block_bytes
        needed = layout.blocks_per_request * block_bytes
        where = "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory, 0.29.0 wheel :852-889"
        if checked <= 0:
            return (f"vLLM would refuse to start: 'No available memory for the cache blocks' ({checked / GiB:.3f} "
                    f"GiB checked; {where})",)
        if needed > checked:
            return (f"vLLM would refuse to start: 'To serve at least one request with the model's max seq len "
                    f"({s.max_model_len}), ({needed / GiB:.2f} GiB KV cache is needed, which is larger than the "
                    f"available KV cache memory ({checked / GiB:.2f} GiB)' ({where})",)
        return ()
    where = "vllm/worker/worker.py raise_if_cache_size_invalid, 0.7.3 wheel :532-549, on the blocks kept"
    if blocks <= 0:
        return (f"vLLM would refuse to start: 'No available memory for the cache blocks' ({where})",)
    if s.max_model_len > layout.block_size * blocks:
        return (f"vLLM would refuse to start: 'The model's max seq len ({s.max_model_len}) is larger than the maximum "
                f"number of tokens that can be stored in KV cache ({layout.block_size * blocks})' ({where})",)
    return ()


def override_line(s: Resolved, sized: int) -> tuple[str, ...]:
    """vLLM's log line for --num-gpu-blocks-override (module docstring), or none."""
    if s.num_gpu_blocks_override is None:
        return ()
    return (f"Overriding num_gpu_blocks={sized} with num_gpu_blocks_override={s.num_gpu_blocks_override}",)


def eager_notes(s: Resolved, engine: Engine, estimate_charged: bool) -> tuple[str, ...]:
    """What --enforce-eager / --disable-cuda-graph changes where no estimate term shows it (module docstring);
    `estimate_charged` says vLLM's CUDA-graph estimate term applies (cudagraph.estimate_applies)."""
    if not s.enforce_eager or estimate_charged or s.kv_cache_memory_bytes is not None:
        return ()
    if engine is Engine.sglang:
        default = ("reserves 2 x cuda_graph_max_bs MiB for them all the same" if s.accounting is Accounting.sglang_v0_5
                   else "does not depend on it")
        return (f"--disable-cuda-graph: no CUDA graphs are captured (init_cuda_graphs returns); the default "
                f"mem_fraction_static {default} (server_args.py), so the pool is as without it and the graphs' share "
                "of the margin stays free",)
    return (f"--enforce-eager: no CUDA graphs are captured; at {s.releases} vLLM sizes the cache before capturing "
            "them, inside the (1 - u) margin (the profile's graph estimate is subtracted by V1 from v0.20.0 only, a "
            "release given), so the KV figure is as without it and the graphs' share of the margin stays free",)


def capped_tokens(s: Resolved, profiled: int, page: int) -> tuple[int, tuple[str, ...]]:
    """SGLang's max_total_num_tokens: min(profiled, --max-total-tokens) floored to the page, and its warning where
    the cap is above the profiled value (module docstring); `profiled` is int(rest / cell), before the floor."""
    cap: Optional[int] = s.max_total_tokens
    if cap is None:
        return profiled // page * page, ()
    notes = ()
    if cap > profiled:
        notes = (f"max_total_tokens={cap} is larger than the profiled value {profiled}. Use the profiled value "
                 "instead. (SGLang's warning: --max-total-tokens only lowers the pool)",)
    return min(profiled, cap) // page * page, notes


def capped_off_term(s: Resolved, rest: int, kept_bytes: int, profiled: int) -> tuple[Term, ...]:
    """The pool memory --max-total-tokens leaves unallocated, as a margin term (none where the cap does not bind:
    no option, or one at or above the `profiled` tokens)."""
    if s.max_total_tokens is None or s.max_total_tokens >= profiled:
        return ()
    return (Term("max_total_tokens_cap", rest - kept_bytes, f"--max-total-tokens {s.max_total_tokens:,}: the pool "
                 "is capped below what mem_fraction_static allows; this much stays free", Role.margin),)


__all__ = ["NULL_BLOCK_CHECKED_RELEASE", "OVERRIDE_CHECKED_RELEASE", "OVERRIDE_IGNORED_RELEASE", "capped_off_term",
           "capped_tokens", "eager_notes", "given_kv_terms", "override_blocks", "override_ignored", "override_line",
           "refusal_note"]
