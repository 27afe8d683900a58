"""vLLM's KV-cache sizing, term by term, as each accounting (vocab.Accounting) computes it.

With T the CUDA-visible total (cudaMemGetInfo's, not nvidia-smi's) and u = gpu_memory_utilization, per GPU:

    vllm-v0.2    KV = u T - (T - free after the profile run): the CUDA context, the weights and the profile's
                 peak all count (vllm v0.2.5 vllm/worker/worker.py:91-99, profile_num_available_blocks; PR #2031;
                 v0.3.0 :122). From v0.3.1 to v0.6.3 the peak is (free at the worker's start - free), the start
                 read once the CUDA context is up and before NCCL (v0.3.1 worker.py:89, :134; v0.5.0 :109, :162;
                 v0.6.3 :171, :231): the context and other processes' memory drop out of it, which this accounting
                 still charges (about 0.5 GiB of context; not modelled by release)
    vllm-v0.6.4  KV = u T - (torch peak + non-torch): the torch peak of the profile includes the weights, non-torch
                 memory includes the CUDA context (vllm v0.6.4 vllm/worker/worker.py:186-230)
    vllm-v0      KV = u T - (W + A + N): weights as loaded, the torch-peak increase of the profile run, the
                 increase of non-torch memory since start-up, NCCL's buffers included (vllm v0.6.5
                 vllm/worker/worker.py:191-223 and vllm/utils.py memory_profiling; v0.7.0 worker.py:217-248)
    vllm-v0.8    KV = u T - (P + N): P torch's allocated peak over the profile run (the weights included), N
                 (total - free) - torch's allocated bytes after empty_cache, every byte outside torch: the CUDA
                 context, NCCL and other processes' memory (V1 v0.8.0 - v0.9.0.1: vllm/v1/worker/gpu_worker.py
                 determine_available_memory at 48cb2109b61676ebc0e7e76022a0be51a41a08b8, unchanged from
                 ad19c8a003 to PR #18974, 2d8476e465bb861c1e7d1e65c800b725282271c4); V1's profile run, a
                 single KV-cache type (more raised NotImplementedError), no start-up refusal
    vllm-v1      KV = u T - (W + A + N), the same shared memory_profiling() in V1's worker (vllm v0.9.1
                 vllm/v1/worker/gpu_worker.py:183-227; v0.10.0 :211-255), V1's profile run and defaults; from
                 v0.20.0 (a release given) less G, the profile's CUDA-graph estimate (cudagraph.py), with u 0.92 by
                 default (settings.default_utilization). From v0.27.0 memory_profiling counts W + N as what the
                 driver says vLLM took since its start-up snapshot and A as torch's peak less its allocated bytes
                 after the profile (vllm v0.27.0 and v0.29.0 vllm/utils/mem_utils.py total_consumed,
                 transient_peak_headroom): the same sum, plus torch's allocations outside the weights and the
                 profile (the model runner's persistent buffers) and the allocator's slack; not modelled

Every accounting then cuts KV into blocks (layout.py), takes the minimum over TP ranks (they are alike here)
and captures CUDA graphs afterwards, inside the (1 - u) T margin. The activation peak A is modelled
(profile.py) and N defaults per accounting (memory.py); --activation-gib and --non-torch-gib override them.

--enforce-eager, --num-gpu-blocks-override and --kv-cache-memory-bytes change this as overrides.py says: no
graph estimate (a 0-byte term from v0.20.0), the blocks set to N once sized, the KV cache memory as given.

Memory other processes hold when vLLM starts (--memory-in-use M):

    vllm-v0.2    subtracted: everything in use after the profile run counts (T - free)
    vllm-v0.6.4  subtracted: non-torch memory is T - free - torch's reserved bytes (v0.6.4 vllm/worker/worker.py
                 determine_num_available_blocks)
    vllm-v0      not subtracted: memory_profiling measures increases from a baseline snapshot (taken after the
                 CUDA context starts); vLLM allocates u T of cache and weights on top of that baseline and runs out
                 of memory when u T + M + the context > T, which rooflab refuses (no start-up check in V0)
    vllm-v0.8    subtracted: non-torch memory is total - free - torch's allocated bytes
    vllm-v1      not subtracted, but V1 refuses to start when the free memory at its first snapshot is below
                 u T: "Free memory on device (F/T GiB) on startup is less than desired GPU memory utilization
                 (u, uT GiB)" (vllm/v1/worker/gpu_worker.py init_device, the MemorySnapshot check); F = T - M -
                 what vLLM itself holds by then (its CUDA context; NCCL's buffers too under TP in the releases that
                 take the snapshot after NCCL starts: IN_USE_AT_SNAPSHOT below)
"""

from __future__ import annotations

from ..capacity.stages import LayerPartition, Stage, pipeline_stages
from ..errors import InputError
from ..specs import GpuSpec, ModelSpec
from ..units import GiB
from .layout import BlockLayout, vllm_layout
from .memory import (OTHER_PROCESSES, check_in_use, engine_weight_bytes, lora_counted, lora_term, non_torch_default,
                     on_gpu_under_tp)
from .pipeline import pipeline_capacity
from .cudagraph import CUDA_GRAPH_ESTIMATE, estimate_applies, graph_terms
from .overrides import eager_notes, given_kv_terms, override_blocks, override_line, refusal_note
from .profile import profile_run
from .result import EngineCapacity, Role, Term
from .states import VLLM_STATE_PAGES
from .settings import EngineSettings, Resolved, resolve
from .vocab import Accounting, Engine

#: Default swap space per GPU, in CPU blocks (vllm v0.2.4 and v0.6.4 arg_utils.py: swap_space 4 GiB).
SWAP_BYTES = 4 * GiB
#: What vLLM V1 itself holds at its start-up snapshot, by TP 1 / TP > 1: the CUDA context, and NCCL's buffers where
#: the snapshot follows NCCL's start (vLLM v0.19.0 H100 logs' init snapshot: cuda_memory 0.51 GiB at TP 1, 1.53 at
#: TP 2; memory.py's non-torch figures). The TP figure is NVSwitch H100s'; on GPUs without device links only the
#: buffers on the GPU count (memory.on_gpu_under_tp, as the non-torch default: in_use_at_snapshot).
IN_USE_AT_SNAPSHOT = (int(0.5 * GiB), int(1.5 * GiB))
#: vLLM V1's default gpu_memory_utilization is 0.92 from this release (default_utilization).
V1_UTILIZATION_092_RELEASE = (0, 20)
#: How each accounting's releases split the layers over pipeline stages (capacity/stages.py).
_PARTITION = {Accounting.vllm_v0_6_4: LayerPartition.vllm_v0_7, Accounting.vllm_v0: LayerPartition.vllm_v0_7}
#: Where vLLM gives every worker the fewest blocks of any (pipeline_capacity).
_MIN_OVER = ("vLLM gives every worker the fewest blocks of any (V0: the executor's min over the workers' "
             "determine_num_available_blocks, vllm/executor/distributed_gpu_executor.py at d5b68ab; V1: "
             "unify_kv_cache_configs, vllm/v1/core/kv_cache_utils.py at 48cb210, and get_kv_cache_configs at abf61aa)")
#: The accountings that charge other processes' memory against the KV cache (module docstring).
_CHARGES_OTHERS = (Accounting.vllm_v0_2, Accounting.vllm_v0_6_4, Accounting.vllm_v0_8)

_NAMES = {  # how each accounting's log names the three subtracted terms
    Accounting.vllm_v0_2: ("weights", "profile peak (activations)", "CUDA context and other non-torch memory"),
    Accounting.vllm_v0_6_4: ("weights (inside peak_torch_memory)", "activation peak (peak_torch_memory - weights)",
                             "non_torch_memory"),
    Accounting.vllm_v0: ("model weights", "PyTorch activation peak memory", "non_torch_memory"),
    Accounting.vllm_v0_8: ("weights (inside peak_memory)", "activation peak (peak_memory - weights)",
                           "non_torch_allocations (all memory in use outside torch)"),
    Accounting.vllm_v1: ("weights memory", "torch peak memory increase", "non-torch forward increase memory"),
}


def vllm_capacity(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> EngineCapacity:
    """How vLLM would size its KV cache for `model` on `gpu` (module docstring); raises InputError on options vLLM
    itself refuses. Under pipeline parallelism each stage sizes its own cache and the engine keeps the fewest
    blocks of any worker (pipeline_capacity)."""
    s = resolve(settings, model, gpu)
    _check(s, model)
    check_in_use(s)
    if s.pipeline_parallel == 1:
        return _stage_capacity(model, gpu, s, settings, None)
    if s.accounting is Accounting.vllm_v0_2:
        raise InputError("--pp under vllm-v0.2 (vLLM v0.2.5 - v0.6.3): vLLM added pipeline parallelism in v0.5.1 (PR "
                         "#4412) and its stages under this accounting are not modelled; use --engine-version v0.6.4 "
                         "or later")
    stages = pipeline_stages(model, s.pipeline_parallel, _PARTITION.get(s.accounting, LayerPartition.vllm),
                             s.pp_layer_partition)
    return pipeline_capacity([_stage_capacity(model, gpu, s, settings, st) for st in stages], stages, _MIN_OVER)


def _stage_capacity(model: ModelSpec, gpu: GpuSpec, s: Resolved, settings: EngineSettings,
                    stage: Stage | None) -> EngineCapacity:
    """One worker's cache: the whole model (stage None) or one pipeline stage's layers, weights and profile."""
    layers = model if stage is None else stage.layers_model(model)
    weights, weights_src = engine_weight_bytes(model, s.tensor_parallel, settings.weight_format, s.expert_parallel,
                                              s.attention_data_parallel, stage, s.accounting, gpu, s.release)
    profile = profile_run(layers, s, last_stage=stage is None or stage.last)
    activation = settings.activation_bytes if settings.activation_bytes is not None else profile.peak_bytes
    activation_src = "--activation-gib" if settings.activation_bytes is not None else profile.describe()
    if settings.non_torch_bytes is not None:
        non_torch, non_torch_src = settings.non_torch_bytes, "--non-torch-gib"
    else:
        non_torch, non_torch_src = non_torch_default(s.accounting, s.tensor_parallel, gpu)
    used = used_terms(s.accounting, (weights, weights_src), (activation, activation_src), (non_torch, non_torch_src))
    used += graph_terms(layers, s, given_release(s))
    lora = lora_term(layers, s, Engine.vllm)
    layout = vllm_layout(layers, s)
    if s.accounting is Accounting.vllm_v0_8 and (layout.num_groups > 1 or layout.state_groups):
        raise InputError(f"{model.name}: vLLM V1 v0.8 sizes one KV-cache type only ('Support for more than one type "
                         "of KV cache is not implemented yet', vllm/v1/core/kv_cache_utils.py get_kv_cache_config)")
    if stage is not None and (layout.num_groups > 1 or layout.state_groups):
        raise InputError(f"{model.name}: vLLM V1's hybrid allocator under --pp groups layers by the whole model's "
                         "ratio (kv_cache_utils.py get_kv_cache_configs); not modelled")
    notes: tuple[str, ...] = ()
    if lora is not None and not lora_counted(s):
        notes = (f"LoRA buffers ({lora.bytes / GiB:.3f} GiB) are allocated outside vLLM's budget at this release: "
                 "load_model creates them after measuring the weights and the profile does not see them "
                 "(memory.VLLM_LORA_UNCOUNTED, vllm#14469 from v0.8.0)",)
        lora = None
    return assemble(model, gpu, s, used + ([lora] if lora else []), layout, notes=notes)


def given_release(s: Resolved) -> tuple[int, ...] | None:
    """The release the user gave (EngineSettings.release), None for a label: vLLM V1's v0.20.0 terms (the
    0.92 default, the CUDA-graph estimate) apply only to a release given, so a label keeps v0.19's (the corpora's
    V1 logs without a release are builds before the switch or of unknown release); a label's Resolved.release is
    the one it stands for (vocab.label_release), marked release_given False."""
    return s.release if s.release_given else None


def default_utilization(s: Resolved) -> float:
    """vLLM's default gpu_memory_utilization: 0.92 in V1 from v0.20.0 (vllm v0.19.1 vllm/config/cache.py
    CacheConfig.gpu_memory_utilization Field(default=0.9); v0.20.0, v0.22.1, v0.24.0 and v0.29.0 default=0.92),
    else 0.9; a label keeps 0.9 (given_release)."""
    release = given_release(s)
    if s.accounting is Accounting.vllm_v1 and release is not None and release >= V1_UTILIZATION_092_RELEASE:
        return 0.92
    return 0.9


def in_use_at_snapshot(tensor_parallel: int, gpu: GpuSpec | None = None) -> int:
    """What vLLM V1 holds itself at its start-up snapshot (IN_USE_AT_SNAPSHOT), under TP on `gpu`'s transport."""
    tp1, linked = IN_USE_AT_SNAPSHOT
    if tensor_parallel == 1:
        return tp1
    return int(on_gpu_under_tp(tp1 / GiB, linked / GiB, gpu) * GiB)


def check_memory_in_use(s: Resolved, budget_bytes: int, gpu: GpuSpec | None = None) -> None:
    """vLLM V1's start-up refusal when other processes leave less than u x total free, and V0's out-of-memory
    when they hold more than the (1 - u) x total outside its budget (module docstring)."""
    if not s.memory_in_use_bytes:
        return
    if s.accounting is Accounting.vllm_v0:
        _check_v0_fits(s, budget_bytes)
    if s.accounting is not Accounting.vllm_v1:
        return      # the refusal arrived with PR #18974 (v0.9.1)
    own = in_use_at_snapshot(s.tensor_parallel, gpu)
    free = s.cuda_visible_bytes - s.memory_in_use_bytes - own
    if free < budget_bytes:
        u = s.utilization if s.utilization is not None else default_utilization(s)
        raise InputError(f"--memory-in-use {s.memory_in_use_bytes / GiB:.2f} GiB: vLLM V1 would refuse to start: "
                         f"\"Free memory on device ({free / GiB:.2f}/{s.cuda_visible_bytes / GiB:.2f} GiB) on startup is "
                         f"less than desired GPU memory utilization ({u:g}, {budget_bytes / GiB:.2f} GiB)\" "
                         f"(with {own / GiB:.1f} GiB of its own CUDA context{' and NCCL' if s.tensor_parallel > 1 else ''});"
                         f" lower --gpu-memory-utilization to at most "
                         f"{max(0, free) * 1000 // s.cuda_visible_bytes / 1000:.3f}")


def _check_v0_fits(s: Resolved, budget_bytes: int) -> None:
    """vLLM V0 (v0.6.5 - v0.10) sizes the cache to u x total less what it measured itself and never looks at other
    processes' memory: once the cache is allocated it holds u x total besides its start-up baseline (the CUDA
    context, IN_USE_AT_SNAPSHOT[0], and the other processes), so that sum must fit the total (module docstring)."""
    total, others = s.cuda_visible_bytes, s.memory_in_use_bytes
    own = IN_USE_AT_SNAPSHOT[0]     # V0's baseline snapshot follows the CUDA context, precedes NCCL (init_device)
    if budget_bytes + others + own <= total:
        return
    u = s.utilization if s.utilization is not None else default_utilization(s)
    fits = max(0, total - others - own) * 1000 // total / 1000
    raise InputError(f"--memory-in-use {others / GiB:.2f} GiB: vLLM V0 would run out of memory allocating the KV "
                     f"cache: utilisation x total + memory in use > total ({u:g} x {total / GiB:.2f} = "
                     f"{budget_bytes / GiB:.2f} GiB, + {others / GiB:.2f} GiB of other processes + {own / GiB:.1f} GiB "
                     f"of its own CUDA context > {total / GiB:.2f} GiB; V0 does not subtract other processes' memory "
                     f"from its budget); the largest utilisation that fits is {fits:.3f}")


def used_terms(accounting: Accounting, weights: tuple[int, str], activation: tuple[int, str],
               non_torch: tuple[int, str]) -> list[Term]:
    """The three terms vLLM subtracts, each (bytes, source), named as `accounting`'s log names them."""
    names = _NAMES[accounting]
    return [Term(key, b, f"{name}: {src}", Role.used)
            for key, name, (b, src) in zip(("weights", "activation_peak", "non_torch"), names,
                                           (weights, activation, non_torch))]


def assemble(model: ModelSpec, gpu: GpuSpec, s: Resolved, used: list[Term], layout: BlockLayout,
             total_src: str | None = None, budget_bytes: int | None = None,
             notes: tuple[str, ...] = ()) -> EngineCapacity:
    """The capacity from the terms vLLM subtracts (used_terms, and what explain.py adds to them).

    `budget_bytes` is u T as a log printed it (two decimals of GiB are finer than T and u each rounded);
    explain.py passes it.
    """
    u = s.utilization if s.utilization is not None else default_utilization(s)
    total = s.cuda_visible_bytes
    budget = int(total * u) if budget_bytes is None else budget_bytes
    check_memory_in_use(s, budget, gpu)
    others = _others(s)
    if s.kv_cache_memory_bytes is not None:
        terms, more = given_kv_terms(s, total_src or s.cuda_visible_source, used, others)
        kv = s.kv_cache_memory_bytes
    else:
        terms, kv, more = _budget_terms(s, u, budget, used, others, total_src)
    notes += more + eager_notes(s, Engine.vllm, estimate_applies(s, given_release(s)))
    sized = layout.num_blocks(kv)
    blocks, terms, more = override_blocks(s, terms, sized, layout.block_bytes, given_release(s))
    notes += more       # terms[-1], the kv term, is now the blocks kept: kv stays the sized figure vLLM logs
    if not any("would refuse to start" in n for n in notes):
        notes += refusal_note(s, layout, kv, blocks, given_release(s))
    tokens = layout.tokens(blocks)
    concurrency = layout.concurrency(blocks, s.max_model_len)
    if layout.state_groups:
        per_group = layout.block_bytes // layout.group_size
        notes += (f"linear-attention layers: each sequence holds {VLLM_STATE_PAGES[s.mamba_cache_mode]} block(s) in each "
                  f"of {layout.state_groups} groups of {layout.group_size} linear layers (--mamba-cache-mode "
                  f"{s.mamba_cache_mode}), a layer's state padded to the {per_group / 1024:.1f} KiB attention page of "
                  f"{layout.block_size} tokens",)
    if layout.state_groups and 0 < blocks < s.max_num_seqs:
        notes += (f"vLLM from v0.19 (PR #38270) would refuse to start: 'max_num_seqs ({s.max_num_seqs}) exceeds available "
                  f"Mamba cache blocks ({blocks}). Each decode sequence requires one Mamba cache block'; lower "
                  f"--max-num-seqs to at most {blocks} (earlier V1 releases cap their CUDA-graph sizes instead)",)
    return EngineCapacity(
        engine="vllm", accounting=s.accounting.value, releases=s.releases, model=model.name, gpu=gpu.name,
        tensor_parallel=s.tensor_parallel, kv_cache_dtype=s.kv_cache_dtype.name, block_size=layout.block_size,
        max_model_len=s.max_model_len, utilization=u, max_num_seqs=s.max_num_seqs,
        max_num_batched_tokens=s.max_num_batched_tokens, terms=terms, kv_cache_bytes=max(0, terms[-1].bytes),
        block_bytes=layout.block_bytes, num_blocks=blocks, kv_cache_tokens=tokens, max_concurrency=concurrency,
        num_groups=layout.num_groups, lines=log_lines(s, layout, kv, blocks, tokens, concurrency, sized), notes=notes)


def _budget_terms(s: Resolved, u: float, budget: int, used: list[Term], others: tuple[Term, ...],
                  total_src: str | None) -> tuple[tuple[Term, ...], int, tuple[str, ...]]:
    """The terms of u x total less what vLLM subtracts, the KV cache left (at least 0) and a note where none is."""
    total = s.cuda_visible_bytes
    rest = budget - sum(t.bytes for t in used) - sum(t.bytes for t in others if t.role is Role.used)
    notes = ()
    if rest <= 0:
        notes = (f"vLLM would refuse to start: nothing is left for the KV cache ({rest / GiB:.2f} GiB; its error: "
                 "'No available memory for the cache blocks')",)
    inside = sum(t.bytes for t in others if t.role is Role.margin)
    terms = (Term("cuda_visible_total", total, total_src or s.cuda_visible_source, Role.total),
             Term("margin", total - budget - inside, f"(1 - {u:g}) x total: outside vLLM's budget; CUDA graphs live "
                                                      "here" + (" (less the memory of other processes)" if inside else ""),
                  Role.margin),
             *(t for t in others if t.role is Role.margin), *used, *(t for t in others if t.role is Role.used),
             Term("kv_cache", rest, "what is left of u x total", Role.kv))
    return terms, max(0, rest), notes


def _others(s: Resolved) -> tuple[Term, ...]:
    """Other processes' memory (--memory-in-use) as a term: charged to the budget by the older accountings, inside
    the margin for the rest (module docstring)."""
    if not s.memory_in_use_bytes:
        return ()
    if s.accounting in _CHARGES_OTHERS:
        how = {Accounting.vllm_v0_2: "v0.2.5 charges all memory in use after the profile run",
               Accounting.vllm_v0_6_4: "v0.6.4 counts it in non-torch memory (total - free - torch reserved)",
               Accounting.vllm_v0_8: "V1 v0.8 counts it in non-torch memory (total - free - torch allocated)"}[
            s.accounting]
        return (Term(OTHER_PROCESSES, s.memory_in_use_bytes, f"--memory-in-use: {how}", Role.used),)
    return (Term(OTHER_PROCESSES, s.memory_in_use_bytes, "--memory-in-use: outside vLLM's budget (its profile "
                                                          "measures increases from a baseline snapshot)", Role.margin),)


def log_lines(s: Resolved, layout: BlockLayout, kv: int, blocks: int, tokens: int, concurrency: float,
              sized: int | None = None) -> tuple[str, ...]:
    """The figures as this accounting's log prints them; `sized` the blocks before --num-gpu-blocks-override."""
    override = override_line(s, blocks if sized is None else sized)
    if s.accounting.is_v1:
        block = (f"Setting attention block size to {layout.block_size} tokens to ensure that attention page size is "
                 ">= mamba page size.",) if layout.state_groups else ()
        if s.kv_cache_memory_bytes is not None:
            available = (f"reserved {kv / GiB:.2f} GiB memory for KV Cache as specified by kv_cache_memory_bytes "
                         "config and skipped memory profiling.",)
        else:
            available = (f"Available KV cache memory: {kv / GiB:.2f} GiB",) if s.accounting is Accounting.vllm_v1 else ()
        return block + available + override + (f"GPU KV cache size: {tokens:,} tokens",
                f"Maximum concurrency for {s.max_model_len:,} tokens per request: {concurrency:.2f}x")
    cpu = SWAP_BYTES // layout.block_bytes
    lines = [*override, f"# GPU blocks: {blocks}, # CPU blocks: {cpu}"]
    if s.accounting is not Accounting.vllm_v0_2:
        lines.append(f"Maximum concurrency for {s.max_model_len} tokens per request: {concurrency:.2f}x")
    return tuple(lines)


def _check(s: Resolved, model: ModelSpec) -> None:
    """Options vLLM refuses at start-up (vllm v0.6.4 vllm/config.py SchedulerConfig._verify_args), and LoRA where
    the accounting's releases mostly predate it."""
    if s.enable_lora and s.accounting is Accounting.vllm_v0_2:
        raise InputError("--enable-lora under vllm-v0.2 (vLLM v0.2.5 - v0.6.3): vLLM gained LoRA in v0.3.0 "
                         "(PR #1804), so v0.2.5 - v0.2.7 have no such option, and v0.3.0 - v0.6.3's LoRA buffers are "
                         "not modelled (lora.py follows later releases); use --engine-version v0.6.4 or later")
    if s.max_num_batched_tokens < s.max_num_seqs:
        raise InputError(f"--max-num-batched-tokens {s.max_num_batched_tokens:,} is below --max-num-seqs "
                         f"{s.max_num_seqs:,}; vLLM refuses a batch budget smaller than its sequence count")
    chunked = not s.accounting.is_v1 and s.max_model_len > 32768
    if not s.accounting.is_v1 and not chunked and s.max_num_batched_tokens < s.max_model_len:
        raise InputError(f"--max-num-batched-tokens {s.max_num_batched_tokens:,} is below --max-model-len "
                         f"{s.max_model_len:,}; vLLM V0 without chunked prefill refuses it")
    if s.max_model_len > model.max_context_len:
        raise InputError(f"--max-model-len {s.max_model_len:,} exceeds {model.name}'s max_context_len "
                         f"{model.max_context_len:,}; vLLM refuses it")


__all__ = ["CUDA_GRAPH_ESTIMATE", "IN_USE_AT_SNAPSHOT", "SWAP_BYTES", "V1_UTILIZATION_092_RELEASE",
           "default_utilization", "given_release", "assemble", "check_memory_in_use", "in_use_at_snapshot", "log_lines", "used_terms",
           "vllm_capacity"]
