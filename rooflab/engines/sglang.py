"""SGLang's KV pool, term by term: f x (free memory after NCCL starts) - weights, in tokens of `cell` bytes.

    pre     = free memory once the distributed environment is up, min over ranks (GiB)
    post    = free memory after the weights load
    rest    = post - pre (1 - f)  =  f pre - weights
    tokens  = int(rest x 2^30) // cell, floored to a multiple of page_size

(sglang v0.3.6 python/sglang/srt/model_executor/model_runner.py:428-430; v0.4.6 :707-710; v0.5.10
model_runner_kv_cache_mixin.py:171-177.) SGLang runs no activation profile: activations and CUDA graphs must fit
in (1 - f) pre. Here pre = T - (memory in use before it measures, memory.py), T the CUDA-visible total.

Default f (mem_fraction_static) when --mem-fraction-static is not given:

    sglang-v0.4  by TP size: 0.88 at 1, 0.87 at 2 or more, 0.85 at 4, 0.81 at 8, 0.79 at 16
                 (sglang v0.4.5 python/sglang/srt/server_args.py:233-243)
    sglang-v0.5  round((M - R) / M, 3), M = nvidia-smi's total in MiB, R = 512 + 1.5 max(chunked_prefill_size,
                 2048) + 2 cuda_graph_max_bs + 1024 tp / 8 MiB, at least 10 GiB on GPUs over 60 GiB; the
                 chunked prefill size and graph batch by GPU memory (sglang v0.5.10 server_args.py:1141-1330):
                 H100 at TP 1: R = 13,440 MiB, f = 0.835
"""

from __future__ import annotations

from ..specs import GpuSpec, ModelSpec
from ..units import GiB, MiB
from .layout import BlockLayout, sglang_cell
from .memory import engine_weight_bytes, non_torch_default
from .result import EngineCapacity, Role, Term
from .settings import EngineSettings, Resolved, resolve
from .vocab import Accounting


def sglang_capacity(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> EngineCapacity:
    """How SGLang would size its KV pool for `model` on `gpu` (module docstring)."""
    s = resolve(settings, model, gpu)
    weights, weights_src = engine_weight_bytes(model, s.tensor_parallel, settings.weight_format, s.expert_parallel,
                                              s.attention_data_parallel)
    if settings.non_torch_bytes is not None:
        before, before_src = settings.non_torch_bytes, "--non-torch-gib"
    else:
        before, before_src = non_torch_default(s.accounting, s.tensor_parallel)
    pre = s.cuda_visible_bytes - before
    return assemble(model, gpu, s, pre, (before, before_src), (weights, weights_src))


def default_fraction(accounting: Accounting, tensor_parallel: int, gpu: GpuSpec) -> float:
    """mem_fraction_static when none is given (module docstring)."""
    tp = tensor_parallel
    if accounting is Accounting.sglang_v0_4:
        return next(f for floor, f in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88)) if tp >= floor)
    total_mib = gpu.hbm_capacity_bytes / MiB
    chunk, graph_bs = _gpu_defaults(total_mib / 1024, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if total_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((total_mib - reserved) / total_mib, 3)


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
    f = s.utilization if s.utilization is not None else default_fraction(s.accounting, s.tensor_parallel, gpu)
    cell = sglang_cell(model, s)
    margin = int(pre * (1 - f))
    rest = pre - margin - weights[0] - sum(t.bytes for t in extra)
    pool = max(0, rest)
    tokens = _tokens(pool, cell)
    if rest <= 0:
        notes += (f"SGLang would refuse to start: nothing is left for the KV pool ({rest / GiB:.2f} GiB; its error: "
                  "'Not enough memory. Please try to increase --mem-fraction-static.')",)
    total = s.cuda_visible_bytes
    terms = (Term("cuda_visible_total", total, s.cuda_visible_source, Role.total),
             Term("in_use_before_start", before[0], f"in use before SGLang measures: {before[1]}", Role.used),
             Term("margin", margin, f"(1 - {f:g}) x free memory at start ({pre / GiB:.2f} GiB, {pre_src}): "
                                    "activations and CUDA graphs live here", Role.margin),
             Term("weights", weights[0], f"weights: {weights[1]}", Role.used), *extra,
             Term("kv_cache", rest, "what is left of mem_fraction_static x free memory", Role.kv))
    return EngineCapacity(
        engine="sglang", accounting=s.accounting.value, releases=s.accounting.releases, model=model.name,
        gpu=gpu.name, tensor_parallel=s.tensor_parallel, kv_cache_dtype=s.kv_cache_dtype.name,
        block_size=s.block_size, max_model_len=s.max_model_len, utilization=f, max_num_seqs=None,
        max_num_batched_tokens=None, terms=terms, kv_cache_bytes=pool, block_bytes=cell.block_bytes,
        num_blocks=tokens // s.block_size, kv_cache_tokens=tokens, max_concurrency=tokens / s.max_model_len,
        lines=log_lines(cell, tokens, model), notes=notes)


def _tokens(pool: int, cell: BlockLayout) -> int:
    per_token = cell.block_bytes // cell.block_size
    return pool // per_token // cell.block_size * cell.block_size


def log_lines(cell: BlockLayout, tokens: int, model: ModelSpec) -> tuple[str, ...]:
    """'KV Cache is allocated. #tokens: N, K size: x GB, V size: y GB' (the pool keeps one page more)."""
    slots = tokens + cell.block_size
    per_token = cell.block_bytes // cell.block_size
    k = cell.k_bytes_per_token
    if k == per_token:   # MLA: one latent
        sizes = f"KV size: {slots * k / GiB:.2f} GB"
    else:
        sizes = f"K size: {slots * k / GiB:.2f} GB, V size: {slots * (per_token - k) / GiB:.2f} GB"
    return (f"KV Cache is allocated. #tokens: {tokens}, {sizes}", f"max_total_num_tokens={tokens}")


__all__ = ["assemble", "default_fraction", "log_lines", "sglang_capacity"]
