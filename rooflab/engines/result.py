"""What an engine-faithful capacity is: the memory terms, term by term, and the engine's own figures."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Optional

from ..units import GiB


class Role(str, enum.Enum):
    """How a term enters the sum: the device total splits into the margin, the terms used and the KV cache."""

    total = "total"          # what the engine multiplies by its utilisation
    margin = "margin"        # (1 - u) x total: outside the engine's budget (CUDA graphs live here)
    used = "used"            # subtracted from the budget: weights, activation peak, non-torch memory
    kv = "kv"                # what is left: the KV cache

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Term:
    """One memory term: its name, bytes on one GPU, and where the figure comes from (a log line, a model, a YAML)."""

    name: str
    bytes: int
    source: str
    role: Role

    def to_dict(self) -> dict:
        return {"name": self.name, "bytes": self.bytes, "gib": round(self.bytes / GiB, 4), "source": self.source,
                "role": self.role.value}


@dataclass(frozen=True)
class EngineCapacity:
    """An engine's KV cache for one deployment, as the engine would size it; bytes per GPU.

    `terms` add up: total = margin + the used terms + kv cache (vLLM), or, for SGLang, the memory in use before
    it starts + the margin of the free memory + weights + the pool. `lines` are the figures as the engine's log
    prints them.
    """

    engine: str
    accounting: str
    releases: str
    model: str
    gpu: str
    tensor_parallel: int
    kv_cache_dtype: str
    block_size: int
    max_model_len: int
    utilization: float
    max_num_seqs: Optional[int]               # vLLM's profile run; None for SGLang
    max_num_batched_tokens: Optional[int]
    terms: tuple[Term, ...]
    kv_cache_bytes: int
    block_bytes: int
    num_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    num_groups: int = 1
    lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: SGLang's max_running_requests (its concurrency cap, sglang.py); None for vLLM, whose cap is max_num_seqs
    max_running_requests: Optional[int] = None
    #: SGLang's linear-attention state slots (max_mamba_cache_size); None without linear layers or for vLLM
    state_slots: Optional[int] = None
    #: Pipeline stages (--pp) and the one whose cache binds (its terms are `terms`; engines/pipeline.py)
    pipeline_parallel: int = 1
    binding_stage: Optional[str] = None

    def term(self, name: str) -> Optional[Term]:
        return next((t for t in self.terms if t.name == name), None)

    @property
    def largest_term(self) -> Term:
        """The largest term outside the KV cache (the margin included): what to shrink first."""
        return max((t for t in self.terms if t.role in (Role.used, Role.margin)), key=lambda t: t.bytes)

    def to_dict(self) -> dict:
        doc = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "terms"}
        doc["terms"] = [t.to_dict() for t in self.terms]
        doc["largest_term"] = self.largest_term.name
        doc["lines"] = list(self.lines)
        doc["notes"] = list(self.notes)
        return doc


__all__ = ["EngineCapacity", "Role", "Term"]
