"""How many KV splits an engine's MLA decode kernel runs, at a release, read from its shipped source.

rooflab's own step searches the split count that prices fastest (cost.layers.layer_splits). An engine's Triton MLA
decode kernel runs a fixed count instead, whatever the batch and context; the step prices the engine's MLA decode at
that count through the same cost function (cost.mla.mla_decode: the units, the waves and the merge of S splits) and
fit. At 4 splits a single sequence is 4 work units on an H200's 132 SMs: the measured TP-8 rank step ran vLLM 0.7.3's
split count and took 4.50 ms for 61 layers at 1 x 3,600 (measurements/steps/h200-step-deepseek-v3-tp8-rank.csv).

Facts (MLA_DECODE_FACTS), each read at one release and assumed kept within its minor line (0.7.x, 0.4.x, 0.5.x),
not beyond:

    vLLM 0.7.3         V0 on CUDA runs every MLA model on TRITON_MLA (platforms/cuda.py:159-161), whose decode
                       passes num_kv_splits=4 ("TODO(lucas) add heuristic": attention/backends/triton_mla.py:259,
                       645) to decode_attention_fwd (attention/ops/triton_decode_attention.py), paged at the cache's
                       block size (triton_mla.py:737 PAGE_SIZE = the cache's dim 1)
    SGLang 0.4.3.post2 MLA runs the triton backend unless --enable-flashinfer-mla (model_executor/model_runner.py:
                       109-121), with server_args.triton_attention_num_kv_splits = 8 (server_args.py:159; 16 on HIP
                       only, :285-286; layers/attention/triton_backend.py:69), over token-level KV indices (page 1)
    SGLang 0.5.12      no fixed count: MLA runs fa3 by default on Hopper (server_args.py:2579-2633
                       _get_default_attn_backend: MLA with is_hopper_with_cuda_12_3, utils/common.py:242), which
                       passes num_splits=0, FlashAttention-3's own split heuristic (layers/attention/
                       flashattention_backend.py:203-214); trtllm_mla on 10.x (server_args.py:1892-1900);
                       --attention-backend flashinfer (InferenceX's dsr1_fp8_h200.sh recipe passes it) runs
                       FlashInfer's BatchMLAPagedAttentionWrapper (flashinfer_mla_backend.py:267), whose plan picks
                       its own KV chunks. Each chooses its splits per batch: priced at rooflab's own split search
                       (the count that prices fastest through the same cost function), said in the note, not a
                       measurement of those kernels. The backend named follows the GPU (mla_decode_fact's gpu):
                       fa3 on NVIDIA 9.x, trtllm_mla on NVIDIA 10.x (DeepSeek-V3's architecture line,
                       server_args.py:1786-1900), triton on another NVIDIA GPU (:2645-2646), aiter or triton on
                       AMD (HIP: aiter at 16 or 128 heads a rank, :2636-2642); every one priced at the split search

Not expressed: vLLM's FLASHMLA backend (VLLM_ATTENTION_BACKEND=FLASHMLA, FlashMLA's own tile scheduler: the split
count it picks per batch was not read), SGLang's --enable-flashinfer-mla, and the page size (the deployment's
page_size is priced, not the engine's: SGLang 0.4.x pages by one token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..vocab import engine_name, fact_of_line


@dataclass(frozen=True)
class MlaDecodeFact:
    """An engine line's MLA decode split count, read at `version` from its wheel."""

    engine: str
    version: str
    splits: Optional[int]                # None: the kernel picks its splits per batch (rooflab's split search)
    backend: str
    source: str


MLA_DECODE_FACTS = (
    MlaDecodeFact("vllm", "0.7.3", 4, "TRITON_MLA",
                  "vllm 0.7.3 wheel on PyPI: platforms/cuda.py:159-161 (MLA on V0: TRITON_MLA), "
                  "attention/backends/triton_mla.py:259,645 num_kv_splits=4"),
    MlaDecodeFact("sglang", "0.4.3.post2", 8, "triton",
                  "sglang 0.4.3.post2 wheel on PyPI: model_executor/model_runner.py:109-121 (MLA: the triton "
                  "backend unless --enable-flashinfer-mla), server_args.py:159 triton_attention_num_kv_splits=8"),
    MlaDecodeFact("sglang", "0.5.12", None, "fa3",
                  "sglang 0.5.12 wheel on PyPI: srt/server_args.py:2579-2633 (MLA on Hopper: fa3; trtllm_mla on "
                  "10.x, :1892-1900), layers/attention/flashattention_backend.py:203-214 num_splits=0 (FA3's "
                  "heuristic); --attention-backend flashinfer: FlashInfer's BatchMLAPagedAttentionWrapper plan "
                  "(flashinfer_mla_backend.py:267)"),
)


def _backend_on(fact: MlaDecodeFact, gpu) -> tuple[str, str]:
    """(the MLA decode backend `fact`'s release picks by default on `gpu`, where that is read) for SGLang 0.5.x
    (the module docstring); `fact.backend` (fa3, its Hopper default) where the GPU is not given."""
    if gpu is None:
        return fact.backend, ""
    from .dense_block_fp8 import is_nvidia

    cc = str(getattr(gpu, "compute_capability", None) or "")
    major = cc.split(".")[0]
    if not is_nvidia(gpu):
        return "aiter or triton", (f" on HIP, {getattr(gpu, 'vendor', None) or 'not NVIDIA'} {cc}: aiter at 16 or "
                                   f"128 heads a rank, else triton, server_args.py:2636-2642")
    if major == "9":
        return fact.backend, f" on Hopper, {cc}"
    if major == "10":
        return "trtllm_mla", f" on {cc}, DeepSeek-V3's architecture line: server_args.py:1786-1900"
    return "triton", f" on {cc or 'an unknown capability'}: server_args.py:2645-2646"


def mla_decode_fact(engine, version, model, gpu=None) -> tuple[Optional[int], str]:
    """(the KV splits `engine` at `version` runs `model`'s MLA decode with on `gpu` (a GpuSpec; None: the fact's
    own backend), why); None (rooflab's own split search) for a model without MLA layers, no engine, a release
    whose kernel picks its own splits (SGLang 0.5.x: the backend named is the one it picks on `gpu`), or a release
    whose line was not read."""
    if not any(layer.is_latent for _, layer, _ in model.layer_walk()):
        return None, ""
    name = engine_name(engine)
    fact = fact_of_line(MLA_DECODE_FACTS, name, version)
    if fact is not None:
        if fact.splits is None:
            backend, where = _backend_on(fact, gpu)
            return None, (f"{backend} (by default{where}) picks its own splits per batch, read at {name} "
                          f"{fact.version} ({fact.source}): rooflab's own split search")
        return fact.splits, (f"{fact.splits} splits, {fact.backend}'s fixed count read at {name} {fact.version} "
                             f"({fact.source})")
    if not name:
        return None, ""
    return None, f"{name} {version}'s MLA decode split count not read: rooflab's own split search"


__all__ = ["MLA_DECODE_FACTS", "MlaDecodeFact", "mla_decode_fact"]
