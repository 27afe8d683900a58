"""Engine-faithful capacity: the KV cache vLLM or SGLang would allocate, following each engine's own accounting.

rooflab's `capacity` is a bound (utilisation x nvidia-smi's total, less the weights). An engine sizes its cache
its own way: vLLM multiplies its utilisation by the CUDA-visible total and subtracts the weights, a profiled
activation peak and non-torch memory; SGLang takes a fraction of the free memory once NCCL is up, less the
weights. This package follows them term by term (vllm.py, sglang.py), models what a prediction cannot read off a
log (profile.py: the activation peak; memory.py: weights as loaded, non-torch memory; marlin_fp8.py: vLLM's
Marlin group scales for block-fp8 layers below compute capability 9.0), reads their start-up logs
(logs.py) and reproduces a logged figure from its terms, with what-ifs from there (explain.py). Linear-attention
(Gated DeltaNet) layers' state caches follow each engine's allocator (states.py; layout.py for vLLM V1's shared
block pool, sglang.py for SGLang's state pool), LoRA adapters' preallocated buffers lora.py, and memory other
processes hold (--memory-in-use) each engine's start-up (vllm.py, sglang.py); the settings that override an engine's
own sizing (--enforce-eager / --disable-cuda-graph, --max-total-tokens, --num-gpu-blocks-override,
--kv-cache-memory-bytes) overrides.py.

    engine_capacity(model, gpu, settings)           -> EngineCapacity (terms, blocks, tokens, concurrency, lines)
    logs.read_log(path), logs.parse_log(text, name)  -> EngineLog (each recognised figure with its line)
    explain.explain_log(log, model, gpu, settings)   -> LogExplanation (rebuilt, checks, modelled, what-if)
    request.engine_table_for(options, given)         -> the Table `rooflab capacity --engine/--engine-log` prints
"""

from __future__ import annotations

from ..cost.checks import check_spec
from ..errors import InputError, shown
from ..specs import GpuSpec, ModelSpec
from .result import EngineCapacity, Role, Term
from .settings import EngineSettings
from .vocab import Accounting, Engine, KvCacheDtype, parse_accounting, parse_engine, parse_kv_cache_dtype


def engine_capacity(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> EngineCapacity:
    """The KV cache `settings.accounting`'s engine would allocate for `model` on `gpu` (per GPU), the model in
    the dtype --dtype names, else the one --dtype auto loads it in on that GPU (ModelSpec.as_loaded)."""
    check_spec(model, ModelSpec, "model")
    check_spec(gpu, GpuSpec, "gpu")
    if not isinstance(settings, EngineSettings):
        raise InputError(f"settings must be a rooflab.engines.EngineSettings, got {shown(settings)}")
    model = model.as_loaded(gpu.compute_capability_version, settings.dtype)
    if settings.engine is Engine.vllm:
        from .vllm import vllm_capacity

        return vllm_capacity(model, gpu, settings)
    from .sglang import sglang_capacity

    return sglang_capacity(model, gpu, settings)


__all__ = ["Accounting", "Engine", "EngineCapacity", "EngineSettings", "KvCacheDtype", "Role", "Term",
           "engine_capacity", "parse_accounting", "parse_engine", "parse_kv_cache_dtype"]
