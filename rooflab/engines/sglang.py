"""SGLang's KV pool, term by term: f x (free memory after NCCL starts) - weights, in tokens of `cell` bytes.

    pre     = free memory once the distributed environment is up, min over ranks (GiB)
    post    = free memory after the weights load
    rest    = post - pre (1 - f)  =  f pre - weights
    tokens  = int(rest x 2^30) // cell, floored to a multiple of page_size

(sglang v0.3.6 python/sglang/srt/model_executor/model_runner.py:428-430; v0.4.6 :707-710; v0.5.10
model_runner_kv_cache_mixin.py:171-177.) SGLang runs no activation profile: activations and CUDA graphs must fit
in (1 - f) pre. Here pre = T - (memory in use before it measures, memory.py), T the CUDA-visible total.

Default f (mem_fraction_static) when --mem-fraction-static is not given:

    sglang-v0.4  by TP size (the first row whose floor TP reaches), the table of the release (EngineSettings.release;
                 without one, v0.4.0 - v0.4.5's, as before); python/sglang/srt/server_args.py __post_init__ of each
                 release's wheel:

                 release            TP >= 16  8     4     2     1
                 v0.1.17 - v0.1.x   -         0.80  0.82  0.85  0.90   (v0.1.17 server_args.py:62-70)
                 v0.2.0 - v0.2.6    0.80      0.84  0.86  0.88  0.89   (v0.2.0 :71-81, v0.2.6 :73-83)
                 v0.2.7 - v0.3.5    0.79      0.83  0.85  0.87  0.88   (v0.2.7 :92-102, v0.3.0 :109-119, v0.3.5)
                 v0.3.6.x           0.79      0.82  0.85  0.87  0.88   (v0.3.6 :156-166, v0.3.6.post3)
                 v0.4.0 - v0.4.7    0.79      0.81  0.85  0.87  0.88   (v0.4.0 :158-168, v0.4.5 :233-243)

                 v0.4.6 and v0.4.7 index the table by TP x PP and use it on GPUs of at most 81,920 MiB (nvidia-smi's
                 total M); above, f = 0.88, and above 96 GiB min(0.88 + 48 GiB x 0.12 / M, (M - 18 GiB) / M)
                 (v0.4.6.post2 :226-246; v0.4.7 :253-275 sets 0.79 above 180,000 MB instead; v0.4.6 itself took
                 (M - 13 GiB) / M above 81,920 MiB: releases are compared without their .postN, so it is not told
                 apart). v0.4.8 - v0.4.10: f = round((M - R) / M, 3), R = (2.8 + P / 10) GiB below 35 GiB, (9.5 +
                 P / 2) below 90, (12 + P / 2) below 160, else 32 GiB, P = TP x PP, + 4 GiB with DP attention
                 (v0.4.8 :275-310, v0.4.10 :286-323; their + 2 GiB for speculative decoding and the multimodal
                 adjustment are not modelled). The pool formula above is the same from v0.1.17 (sglang/srt/managers/
                 controller/model_runner.py:304-315 profile_max_num_token: available - total x (1 - f))
    sglang-v0.5  round((M - R) / M, 3), M = nvidia-smi's total in MiB, R = 512 + 1.5 max(chunked_prefill_size,
                 2048) + 2 cuda_graph_max_bs + 1024 tp / 8 MiB, at least 10 GiB on GPUs over 60 GiB; the
                 chunked prefill size and graph batch by GPU memory (sglang v0.5.10 server_args.py:1141-1330):
                 H100 at TP 1: R = 13,440 MiB, f = 0.835 (v0.5.3 - v0.5.9). With DP attention (--dp N) R adds
                 3 N cuda_graph_max_bs MiB, and 1.5 N cuda_graph_max_bs more where cuda_graph_max_bs > 300, before
                 the 10 GiB floor (v0.5.3 server_args.py:650-658 to v0.5.10 :1294-1302; the chunked prefill size is
                 divided by N only after, in _handle_data_parallelism). From v0.5.10 (and with no release) R adds
                 the piecewise CUDA graphs' reserve where they are on (piecewise_reserve_mib: 8 MiB a captured size
                 up to the chunked prefill size, 1.5 GiB for MLA, off under DP attention): a dense model on an H100
                 at TP 1, 58 sizes up to 8,192, R = 13,904 MiB, f = 0.830

--max-total-tokens caps the tokens (min(tokens, N), floored to the page) and --disable-cuda-graph leaves the pool as
it is (overrides.py).

Memory other processes hold (--memory-in-use M) is not free when SGLang measures: pre shrinks by M, the pool by
f M, and the margin (1 - f) pre by the rest.

Linear-attention (Gated DeltaNet, Mamba) models, sglang-v0.5 (python/sglang/srt/model_executor/
model_runner_kv_cache_mixin.py, profile_max_num_token and handle_max_mamba_cache, main at commit 226149a): the
cell counts the full-attention layers only, and a separate pool keeps max_mamba_cache_size request states of P
bytes (states.py: every linear layer's conv and temporal state), taken off the rest before the tokens:

    slots   --max-mamba-cache-size if given, else (rest x r / (1 + r)) // P, r = --mamba-full-memory-ratio (0.9)
    tokens  (rest - slots x P) // cell

Concurrency (SGLang's own cap, both accountings): the req_to_token pool holds max_num_reqs + 1 rows,

    max_num_reqs          --max-running-requests, else min(max(int(tokens / context_len x 512), 2048), 4096);
                          with linear layers at most slots // 3 (radix cache on: MAMBA_CACHE_SIZE_MAX_RUNNING_
                          REQUESTS_RATIO)
    max_running_requests  min(--max-running-requests or tokens // 2, max_num_reqs + 1)

(sglang v0.4 model_runner.py init_memory_pool: ReqToTokenPool(size=max_num_reqs + 1); tp_worker.py:
min(max_total_num_tokens // 2, req_to_token_pool.size); a v0.5.9 backport keeps the + 1, main at 226149a drops
it). The v0.4 logs of sglang#4760's Llama-3.1-8B (444,500 tokens) and DeepSeek-R1-Distill-Qwen-7B (105,531) print
max_running_requests=2049 at context_len 131072: 2048 + 1.
"""

from __future__ import annotations

import re

from ..capacity.stages import LayerPartition, pipeline_stages
from ..specs import GpuSpec, LinearMixer, ModelSpec
from ..units import GiB, MiB
from .layout import BlockLayout, engine_states, sglang_cell
from .memory import OTHER_PROCESSES, check_in_use, engine_weight_bytes, lora_term, non_torch_default
from .overrides import capped_off_term, capped_tokens, eager_notes
from .pipeline import pipeline_capacity
from .result import EngineCapacity, Role, Term
from .settings import EngineSettings, Resolved, resolve
from .vocab import Accounting, Engine

#: SGLang's default --mamba-full-memory-ratio (server_args.py) and the state slots a running request may use
#: with the radix cache on (model_runner_kv_cache_mixin.py MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO).
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_SLOTS_PER_REQUEST = 3


def sglang_capacity(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> EngineCapacity:
    """How SGLang would size its KV pool for `model` on `gpu` (module docstring)."""
    s = resolve(settings, model, gpu)
    check_in_use(s)
    weights, weights_src = engine_weight_bytes(model, s.tensor_parallel, settings.weight_format, s.expert_parallel,
                                              s.attention_data_parallel, None, s.accounting, gpu, s.release)
    if settings.non_torch_bytes is not None:
        before, before_src = settings.non_torch_bytes, "--non-torch-gib"
    else:
        before, before_src = non_torch_default(s.accounting, s.tensor_parallel, gpu)
    pre = s.cuda_visible_bytes - before - s.memory_in_use_bytes
    pre_src = "total less the memory in use before" + (" and other processes'" if s.memory_in_use_bytes else "")
    if s.pipeline_parallel == 1:
        return assemble(model, gpu, s, pre, (before, before_src), (weights, weights_src), pre_src=pre_src)
    return _pipeline(model, gpu, s, settings, pre, (before, before_src), pre_src)


def _pipeline(model: ModelSpec, gpu: GpuSpec, s: Resolved, settings: EngineSettings, pre: int,
              before: tuple[int, str], pre_src: str) -> EngineCapacity:
    """SGLang under --pp (engines/pipeline.py): the free memory after loading is the min over every rank, so the
    heaviest stage's weights come off every stage's pool; each stage divides the rest by its own layers' cell and
    the ranks keep the fewest tokens (model_runner_kv_cache_mixin.py profile_max_num_token and init_memory: the
    all_reduce MIN when pp_size > 1, sgl-project/sglang at 001ccef)."""
    stages = pipeline_stages(model, s.pipeline_parallel, LayerPartition.sglang, s.pp_layer_partition)
    own = [engine_weight_bytes(model, s.tensor_parallel, settings.weight_format, s.expert_parallel,
                               s.attention_data_parallel, st, s.accounting, gpu, s.release)[0] for st in stages]
    heaviest = max(range(len(stages)), key=lambda i: own[i])
    src = (f"the heaviest stage's ({stages[heaviest].describe()}): SGLang's free memory after loading is the min "
           f"over all ranks; each stage's own: {', '.join(f'{w / GiB:.2f}' for w in own)} GiB")
    caps = [assemble(st.layers_model(model), gpu, s, pre, before, (own[heaviest], src), pre_src=pre_src)
            for st in stages]
    return pipeline_capacity(caps, stages, "SGLang keeps the fewest tokens of any rank (all_reduce MIN)")


#: sglang-v0.4's mem_fraction_static by TP size, per release (module docstring): (first release, ((floor TP, f),
#: ...)), newest first; a release takes the first row it reaches, a TP the first floor it reaches.
SGLANG_V0_4_FRACTIONS = (
    ((0, 4, 0), ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))),
    ((0, 3, 6), ((16, 0.79), (8, 0.82), (4, 0.85), (2, 0.87), (1, 0.88))),
    ((0, 2, 7), ((16, 0.79), (8, 0.83), (4, 0.85), (2, 0.87), (1, 0.88))),
    ((0, 2, 0), ((16, 0.80), (8, 0.84), (4, 0.86), (2, 0.88), (1, 0.89))),
    ((0, 1, 17), ((8, 0.80), (4, 0.82), (2, 0.85), (1, 0.90))),
)


def default_fraction(accounting: Accounting, tensor_parallel: int, gpu: GpuSpec,
                     release: tuple[int, ...] | None = None, pipeline_parallel: int = 1,
                     dp_attention: bool = False, attention_data_parallel: int | None = None,
                     piecewise_mib: float = 0.0) -> float:
    """mem_fraction_static when none is given, by accounting and (sglang-v0.4) release (module docstring);
    `attention_data_parallel` is --dp under `dp_attention` (None: the TP size); `piecewise_mib` sglang-v0.5's
    piecewise CUDA-graph reserve (piecewise_reserve_mib; 0 where it is off)."""
    tp = tensor_parallel
    total_mib = gpu.hbm_capacity_bytes / MiB
    if accounting is Accounting.sglang_v0_4:
        return _v0_4_fraction(release or (0, 4, 0), tp, pipeline_parallel, total_mib, dp_attention)
    chunk, graph_bs = _gpu_defaults(total_mib / 1024, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if dp_attention:
        dp = attention_data_parallel or tp
        reserved += graph_bs * dp * 3 + (graph_bs * dp * 1.5 if graph_bs > 300 else 0)
    reserved += piecewise_mib
    if total_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((total_mib - reserved) / total_mib, 3)


def _v0_4_fraction(release: tuple[int, ...], tp: int, pp: int, total_mib: float, dp_attention: bool) -> float:
    """sglang-v0.4's f for one release (module docstring); `total_mib` is nvidia-smi's total M."""
    release = tuple(release) + (0,) * (3 - len(release))   # '0.4' is v0.4.0, never below it
    if release >= (0, 4, 8):
        parallel = tp * pp
        reserved_gib = next(r for below, r in ((35, 2.8 + parallel / 10), (90, 9.5 + parallel / 2),
                                               (160, 12 + parallel / 2), (float("inf"), 32.0))
                            if total_mib < below * 1024)
        reserved_mib = (reserved_gib + (4 if dp_attention else 0)) * 1024
        return round((total_mib - reserved_mib) / total_mib, 3)
    by_tp = next(rows for first, rows in SGLANG_V0_4_FRACTIONS if release >= first)
    if release < (0, 4, 6):
        return next(f for floor, f in by_tp if tp >= floor)
    f = next(f for floor, f in by_tp if tp * pp >= floor) if total_mib <= 81920 else 0.88
    if release >= (0, 4, 7) and total_mib > 180_000:
        return 0.79
    if total_mib > 96 * 1024:
        return min(f + 48 * 1024 * (1 - f) / total_mib, (total_mib - 18 * 1024) / total_mib)
    return f


#: The token counts SGLang v0.5.10 captures piecewise CUDA graphs at, up to its max (server_args.py:1397-1414
#: _generate_piecewise_cuda_graph_tokens): 4-32 by 4, 48-256 by 16, 288-512 by 32, 576-1024 by 64, 1280-4096 by
#: 256, then by 512.
PIECEWISE_SIZES = (tuple(range(4, 33, 4)) + tuple(range(48, 257, 16)) + tuple(range(288, 513, 32))
                   + tuple(range(576, 1025, 64)) + tuple(range(1280, 4097, 256)))


def piecewise_reserve_mib(model: ModelSpec, s: Resolved, gpu: GpuSpec) -> float:
    """sglang-v0.5's reserve for piecewise CUDA graphs, MiB: on by default from v0.5.10 (disable_piecewise_cuda_graph
    False; v0.5.4 - v0.5.9 only with --enable-piecewise-cuda-graph, v0.5.3 has none). sglang v0.5.10 server_args.py:

        off        _handle_piecewise_cuda_graph (:1078-1139), run before the reserve: DP attention, --pp, LoRA, a GPU
                   that is not NVIDIA's, a multimodal model, the disabled architectures (model_config.py
                   piecewise_cuda_graph_disabled_model_archs and is_deepseek_nsa: known here by DeepSeek-V3.2-style
                   indexers and Gated DeltaNet layers); speculative decoding, torch.compile, a MoE all-to-all backend
                   and the other switches are not settings here
        MLA        1.5 GiB flat (:1305-1311, use_mla_backend: attention_arch MLA); its capture is capped at 2,048
                   tokens (:1257-1261), which sets what it captures, not the reserve
        otherwise  8 MiB x len(piecewise_cuda_graph_tokens) (:1308): PIECEWISE_SIZES, then 4,608 by 512, up to
                   piecewise_cuda_graph_max_tokens = chunked_prefill_size (:1254-1259; the GPU's default here;
                   the cap by --max-total-tokens, :1263-1267, is not modelled: overrides.py), at most 4,096 where
                   "llama-2" is in the model path SGLang is given (:1269-1274, sglang_model_path)
    """
    if s.accounting is not Accounting.sglang_v0_5 or (s.release is not None and tuple(s.release) < (0, 5, 10)):
        return 0.0
    layers = model.layer_types.values()
    off = (s.attention_data_parallel > 1 or s.pipeline_parallel > 1 or s.enable_lora or model.vision_parameters
           or (gpu.vendor or "NVIDIA").upper() != "NVIDIA"
           or any(t.index_head_dim or t.linear_mixer is LinearMixer.gated_deltanet for t in layers))
    if off:
        return 0.0
    if any(t.is_latent for t in layers):
        return 1.5 * 1024
    chunk, _ = _gpu_defaults(gpu.hbm_capacity_bytes / GiB, s.tensor_parallel)
    top = min(chunk, 4096) if "llama-2" in sglang_model_path(model).lower() else chunk
    sizes = [n for n in PIECEWISE_SIZES + tuple(range(4608, top + 1, 512)) if n <= top]
    return 8.0 * len(sizes)


def sglang_model_path(model: ModelSpec) -> str:
    """The --model-path SGLang is taken to be given for `model`, which server_args.py tests by name (v0.5.10 :1271,
    '"llama-2" in self.model_path.lower()'): the checkpoint the spec's `source` names, as the Hugging Face repo id of
    a huggingface.co URL (https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json:
    meta-llama/Llama-2-7b-hf), else the directory of a config.json path (rooflab hf's source), else the source as
    written. Not rooflab's spec name: a spec named otherwise keeps the checkpoint's path."""
    source = model.source.strip()
    hub = re.match(r"https?://(?:www\.)?huggingface\.co/([^/\s]+/[^/\s]+)", source)
    if hub:
        return hub.group(1)
    return source.rsplit("/", 1)[0] if source.endswith("/config.json") else source


def _gpu_defaults(total_gib: float, tp: int) -> tuple[int, int]:
    """chunked_prefill_size and cuda_graph_max_bs by GPU memory (sglang v0.5.10 server_args.py:1165-1222)."""
    if total_gib < 20:
        return 2048, 8
    if total_gib < 35:
        return 2048, 24 if tp < 4 else 80
    if total_gib < 60:
        return 4096, 32 if tp < 4 else 160
    if total_gib < 160:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def assemble(model: ModelSpec, gpu: GpuSpec, s: Resolved, pre: int, before: tuple[int, str],
             weights: tuple[int, str], pre_src: str = "total less the memory in use before",
             extra: tuple[Term, ...] = (), notes: tuple[str, ...] = ()) -> EngineCapacity:
    """The pool from pre (free memory SGLang measures), the memory in use before it and the weights; `extra`
    terms (explain.py's unattributed remainder) come off the pool too."""
    f = s.utilization if s.utilization is not None else default_fraction(
        s.accounting, s.tensor_parallel, gpu, s.release, s.pipeline_parallel, s.attention_data_parallel > 1,
        s.attention_data_parallel, piecewise_reserve_mib(model, s, gpu))
    cell = sglang_cell(model, s)
    margin = int(pre * (1 - f))
    lora = lora_term(model, s, Engine.sglang)
    extra = extra + ((lora,) if lora else ())
    rest = pre - margin - weights[0] - sum(t.bytes for t in extra)
    states = engine_states(model, s, Engine.sglang)
    if any(t.linear_mixer is LinearMixer.mamba1 for t in model.layer_types.values()):
        notes += ("SGLang (v0.5.23) serves no hybrid of Mamba-1 and attention (no Jamba model): the state pool is "
                  "what its Mamba-1 layout (Mamba2StateShape.create_full_rank) would hold",)
    slots, state_terms = mamba_pool(rest, sum(st.bytes_per_sequence for st in states), s) if states else (0, ())
    rest -= sum(t.bytes for t in state_terms)
    pool = max(0, rest)
    per_token = cell.block_bytes // cell.block_size
    profiled = pool // per_token
    tokens, more = capped_tokens(s, profiled, cell.block_size)
    notes += more + eager_notes(s, Engine.sglang, False)
    capped = capped_off_term(s, rest, tokens * per_token, profiled)
    if capped:
        pool = tokens * per_token
    # v0.4 sizes the req_to_token rows from the profiled tokens, before --max-total-tokens (overrides.py)
    rows_from = profiled if s.max_total_tokens is not None and s.accounting is Accounting.sglang_v0_4 else None
    running = max_running_requests(tokens, s, slots if states else None, rows_from)
    if tokens <= 0:     # model_runner.py init_memory_pool, after the cap and the page floor (overrides.py)
        why = (f"nothing is left for the KV pool ({rest / GiB:.2f} GiB)" if rest <= 0 else
               f"max_total_num_tokens is 0 after the --max-total-tokens cap and the floor to the "
               f"{cell.block_size}-token page" if s.max_total_tokens is not None else
               f"the {rest / GiB:.4f} GiB left holds no {cell.block_size}-token page")
        notes += (f"SGLang would refuse to start: {why}; its error: 'Not enough memory. Please try to increase "
                  "--mem-fraction-static.' (model_runner.py:788-791 in the 0.4.6 wheel, :1316-1319 in 0.5.2's; "
                  "pool_configurator.py:52-56 in 0.5.12's)",)
    total = s.cuda_visible_bytes
    others = (Term(OTHER_PROCESSES, s.memory_in_use_bytes, "--memory-in-use: not free when SGLang measures",
                   Role.used),) if s.memory_in_use_bytes else ()
    terms = (Term("cuda_visible_total", total, s.cuda_visible_source, Role.total),
             Term("in_use_before_start", before[0], f"in use before SGLang measures: {before[1]}", Role.used), *others,
             Term("margin", margin, f"(1 - {f:g}) x free memory at start ({pre / GiB:.2f} GiB, {pre_src}): "
                                    "activations and CUDA graphs live here", Role.margin),
             Term("weights", weights[0], f"weights: {weights[1]}", Role.used), *extra, *state_terms, *capped,
             Term("kv_cache", pool if capped else rest,
                  f"--max-total-tokens {s.max_total_tokens:,}: {tokens:,} tokens x {per_token:,} bytes" if capped
                  else "what is left of mem_fraction_static x free memory", Role.kv))
    return EngineCapacity(
        engine="sglang", accounting=s.accounting.value, releases=s.releases, model=model.name,
        gpu=gpu.name, tensor_parallel=s.tensor_parallel, kv_cache_dtype=s.kv_cache_dtype.name,
        block_size=s.block_size, max_model_len=s.max_model_len, utilization=f, max_num_seqs=None,
        max_num_batched_tokens=None, terms=terms, kv_cache_bytes=pool, block_bytes=cell.block_bytes,
        num_blocks=tokens // s.block_size, kv_cache_tokens=tokens, max_concurrency=tokens / s.max_model_len,
        lines=log_lines(cell, tokens, model, running, s.max_model_len, slots if states else None), notes=notes,
        max_running_requests=running, state_slots=slots if states else None)


def mamba_pool(rest: int, per_request: int, s: Resolved) -> tuple[int, tuple[Term, ...]]:
    """SGLang's linear-attention state pool: its slots and the term it takes off the rest (module docstring)."""
    if s.max_mamba_cache_size is not None:
        dp = s.attention_data_parallel
        slots, how = s.max_mamba_cache_size // dp, "--max-mamba-cache-size" + (f" / DP {dp}" if dp > 1 else "")
    else:
        r = s.mamba_full_memory_ratio if s.mamba_full_memory_ratio is not None else MAMBA_FULL_MEMORY_RATIO
        slots = int(max(0, rest) * r / (1 + r)) // per_request
        how = f"rest x {r:g} / (1 + {r:g}) // {per_request:,} bytes a request (--mamba-full-memory-ratio)"
    return slots, (Term("mamba_state", slots * per_request,
                        f"linear-attention state pool: {slots:,} request states ({how})", Role.used),)


def max_running_requests(tokens: int, s: Resolved, slots: int | None = None, rows_from: int | None = None) -> int:
    """SGLang's max_running_requests: the req_to_token pool's rows, capped by half the tokens (module docstring);
    `rows_from` the tokens the rows are estimated from where they are not `tokens` (sglang-v0.4 under
    --max-total-tokens: the profiled ones, overrides.py)."""
    dp = s.attention_data_parallel
    given = s.max_running_requests // dp if s.max_running_requests is not None else None
    basis = tokens if rows_from is None else rows_from
    reqs = given if given is not None else min(max(int(basis / s.max_model_len * 512), 2048), 4096)
    if slots is not None:
        reqs = min(reqs, slots // MAMBA_SLOTS_PER_REQUEST)
    return min(tokens // 2 if given is None else given, reqs + 1)


def log_lines(cell: BlockLayout, tokens: int, model: ModelSpec, running: int | None = None, context_len: int = 0,
              state_slots: int | None = None) -> tuple[str, ...]:
    """'KV Cache is allocated. #tokens: N, K size: x GB, V size: y GB' (the pool keeps one page more), and the
    scheduler's line."""
    slots = tokens + cell.block_size
    per_token = cell.block_bytes // cell.block_size
    k = cell.k_bytes_per_token
    if k == per_token:   # MLA: one latent
        sizes = f"KV size: {slots * k / GiB:.2f} GB"
    else:
        sizes = f"K size: {slots * k / GiB:.2f} GB, V size: {slots * (per_token - k) / GiB:.2f} GB"
    scheduler = f"max_total_num_tokens={tokens}"
    if running is not None:
        scheduler += f", max_running_requests={running}, context_len={context_len}"
    mamba = (f"mamba state pool: {state_slots} request states",) if state_slots is not None else ()
    return (*mamba, f"KV Cache is allocated. #tokens: {tokens}, {sizes}", scheduler)


__all__ = ["MAMBA_FULL_MEMORY_RATIO", "MAMBA_SLOTS_PER_REQUEST", "SGLANG_V0_4_FRACTIONS", "assemble",
           "default_fraction", "log_lines", "mamba_pool", "max_running_requests", "piecewise_reserve_mib",
           "sglang_capacity", "sglang_model_path"]
