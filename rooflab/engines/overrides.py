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
                             num_gpu_blocks_override=1", then "GPU KV cache size: 16 tokens"). vLLM allocates N
                             blocks whatever the memory (check_enough_kv_cache_memory reads the memory, not N:
                             vllm#27181), so N above the blocks it sized runs out of memory: a note says so.
    kv_cache_memory_bytes    vLLM V1's --kv-cache-memory-bytes, from v0.11.0 (settings.KV_CACHE_MEMORY_RELEASE):
                             determine_available_memory runs the profile without measuring it and returns the bytes
                             given ("reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes config
                             and skipped memory profiling. This does not respect the gpu_memory_utilization config",
                             vllm/v1/worker/gpu_worker.py), before any CUDA-graph estimate. The weights, activation
                             peak and non-torch memory are held but subtracted from nothing; what they and the cache
                             leave of the total is the margin. vLLM checks no fit: a cache past the total is a note.
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
                             changed was not found. Not modelled: v0.5.10's cap of the piecewise CUDA-graph sizes by
                             --max-total-tokens (server_args.py:1263-1267).
"""

from __future__ import annotations

from typing import Optional

from ..units import GiB
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


def override_blocks(s: Resolved, sized: int, block_bytes: int) -> tuple[int, tuple[str, ...]]:
    """The blocks vLLM keeps: `sized`, or --num-gpu-blocks-override, with a note (module docstring)."""
    n = s.num_gpu_blocks_override
    if n is None:
        return sized, ()
    note = (f"--num-gpu-blocks-override {n:,}: vLLM sized {sized:,} blocks ({sized * block_bytes / GiB:.2f} GiB) and "
            f"keeps {n:,} ({n * block_bytes / GiB:.2f} GiB)")
    if n > sized:
        note += (f", {(n - sized) * block_bytes / GiB:.2f} GiB more than it found for the cache: it would run out of "
                 "memory allocating them (it checks the memory, not the override: vllm#27181)")
    return n, (note,)


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


__all__ = ["capped_off_term", "capped_tokens", "eager_notes", "given_kv_terms", "override_blocks", "override_line"]
