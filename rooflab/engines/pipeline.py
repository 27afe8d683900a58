"""Pipeline parallelism in the engines' accounting: each stage's cache, and the stage that binds.

Every stage's workers size a cache of their own from their own memory: the stage's weights (its layers; the
embedding on the first stage, the LM head on the last: capacity/stages.py), its profile run (the sampler runs on
the last stage only: vllm/v1/worker/gpu_model_runner.py, "[V1][PP] Only warmup sampler at last PP rank", PR
#14643; V0's execute_model returns the hidden states before the logits on other ranks, vllm/worker/
model_runner.py at d5b68ab) and its layers' blocks. One scheduler then serves them all, so:

    vLLM     num_blocks = min over stages of (u T - W_s - A_s - N) // block_bytes_s      (vllm.py)
    SGLang   free = min over every rank of the free memory after loading (its get_available_gpu_memory over the
             world group); tokens = min over stages of (free - (1 - f) pre) // cell_s     (sglang.py)

The answer carries the binding stage's terms and a note for every stage.
"""

from __future__ import annotations

import dataclasses

from ..capacity.stages import Stage
from ..units import GiB
from .result import EngineCapacity


def pipeline_capacity(stages_capacity: list[EngineCapacity], stages: tuple[Stage, ...], why: str) -> EngineCapacity:
    """The binding stage's capacity (the fewest blocks; the first of equals), noting every stage's terms."""
    index = min(range(len(stages)), key=lambda i: stages_capacity[i].num_blocks)
    binding = stages_capacity[index]
    notes = tuple(stage_note(st, c) for st, c in zip(stages, stages_capacity))
    notes += (f"pipeline {stages[index].describe()} binds: {why}",)
    return dataclasses.replace(binding, notes=binding.notes + notes, pipeline_parallel=len(stages),
                               binding_stage=stages[index].describe())


def stage_note(stage: Stage, c: EngineCapacity) -> str:
    """'pipeline stage 0 of 2 (layers 0-39, embedding): weights 16.58 GiB, ... KV 50.09 GiB, 102,584 blocks'."""
    terms = ", ".join(f"{t.name.replace('_', ' ')} {t.bytes / GiB:.2f} GiB" for t in c.terms
                      if t.role.value == "used")
    unit = "blocks" if c.engine == "vllm" else "tokens"
    count = c.num_blocks if c.engine == "vllm" else c.kv_cache_tokens
    return (f"pipeline {stage.describe()}: {terms}; KV cache {c.kv_cache_bytes / GiB:.2f} GiB, {count:,} {unit} "
            f"of {c.block_bytes / 1024:.0f} KiB")


__all__ = ["pipeline_capacity", "stage_note"]
