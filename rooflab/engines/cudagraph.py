"""vLLM V1's CUDA-graph memory estimate, which the KV-cache budget loses from v0.20.0.

From v0.20.0 the worker captures the graphs once during the profile and subtracts what they took
(vllm v0.20.0 - v0.29.0 vllm/v1/worker/gpu_worker.py determine_available_memory: KV = requested - non-KV -
cudagraph_memory_estimate_applied, the estimate applied where VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is set, its
default "1" from v0.20.0 in vllm/envs.py, "0" in v0.19.1; skipped under cudagraph_mode NONE, i.e. --enforce-eager).
The estimate (gpu_model_runner.py profile_cudagraph_memory, the same in v0.20.0, v0.24.0 and v0.29.0) captures
the first two sizes of each mode, largest first, and reads cudaMemGetInfo around each:

    G = max over modes of first[mode] + sum over modes of max(second[mode], 1 MiB) x (n[mode] - 1)

The sizes (vllm/config/vllm.py _set_cudagraph_sizes, v0.20.0 - v0.29.0): the largest is min(2 max_num_seqs, 512,
max_num_batched_tokens), the list [1, 2, 4] + range(8, 256, 8) + range(256, largest + 1, 16) up to it; PIECEWISE
captures them all, FULL (the default FULL_AND_PIECEWISE mode's uniform decode batches, one token a request) those
up to max_num_seqs. The logs agree: max_num_seqs 256 gives "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
(set 6, RTX 3090), 1,024 "PIECEWISE=51, FULL=51" (set 6, 8x H100). Model Runner V2, the default from v0.22 where
it supports the deployment (vllm/config/vllm.py use_v2_model_runner), captures every PIECEWISE size and extrapolates
FULL from two samples with the same 1 MiB floor (v0.29.0 vllm/v1/worker/gpu/cudagraph_utils.py
profile_cudagraph_memory, _MIN_PER_GRAPH_BYTES): the form below holds for it as a lower bound too.

rooflab models first[mode] as the forward working set at the largest size (profile.forward_bytes: the graph
pool's blocks hold one piece's intermediates at a time, piecewise outputs being weak references), without the
fused-MoE caches, which from v0.14 are WorkspaceManager's buffers kept from the profile run and reused by the
capture (profile.py; vllm v0.20.0 vllm/v1/worker/workspace.py), and second[mode]
by the code's floor, 1 MiB: the driver's own memory for each instantiated graph is not in the source and is not
modelled, so G is a lower bound. The logs measure 1.4 to 9.3 MiB a size (0.14 GiB for Qwen3-30B-A3B on an H100 at
v0.22.1, 0.55 for Qwen2.5-7B on an RTX 3090, 0.91 for Llama-3.3-70B at TP 8), not fitted here. Not modelled either:
the 1,024 largest size on compute capability 10.x (v0.29.0) and speculative decoding's wider decode batches.

--enforce-eager (EngineSettings.enforce_eager) sets cudagraph_mode NONE: nothing is captured and the estimate is 0
(vllm.py charges it as a 0-byte term, so explain names where it went). --kv-cache-memory-bytes returns from
determine_available_memory before the profile and the estimate (vllm.py): no estimate either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import ModelSpec
from ..units import MiB
from .profile import forward_bytes
from .result import Role, Term
from .settings import Resolved
from .vocab import Accounting

#: The term name of the profile's CUDA-graph estimate (vllm-v1 from v0.20.0).
CUDA_GRAPH_ESTIMATE = "cuda_graph_estimate"

#: The first vLLM V1 release that subtracts the estimate by default (vllm/envs.py, module docstring).
V1_CUDAGRAPH_ESTIMATE_RELEASE = (0, 20)
#: The largest default capture size, and the code's floor for each further graph (profile_cudagraph_memory).
MAX_CAPTURE_SIZE, PER_GRAPH_FLOOR_BYTES = 512, 1 * MiB


@dataclass(frozen=True)
class CudaGraphEstimate:
    """The modelled estimate (bytes, one GPU) and what it counts."""

    largest: int
    piecewise_graphs: int
    full_graphs: int
    first_capture_bytes: int

    @property
    def bytes(self) -> int:
        further = max(self.piecewise_graphs - 1, 0) + max(self.full_graphs - 1, 0)
        return self.first_capture_bytes + further * PER_GRAPH_FLOOR_BYTES

    def describe(self) -> str:
        return (f"modelled (a lower bound): the profile's CUDA-graph estimate, subtracted from v0.20.0: the first "
                f"capture's forward at {self.largest:,} tokens (no MoE caches: kept buffers) + {self.piecewise_graphs} "
                f"PIECEWISE and {self.full_graphs} FULL sizes at the code's 1 MiB floor a further graph")


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> list[int]:
    """The default capture sizes (module docstring), ascending."""
    largest = min(2 * max_num_seqs, MAX_CAPTURE_SIZE, max_num_batched_tokens)
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, largest + 1, 16))
    return [n for n in sizes if n <= largest]


def estimate_applies(s: Resolved, release: tuple[int, ...] | None) -> bool:
    """Whether vLLM V1 at `release` (vllm.given_release) subtracts a CUDA-graph estimate at all: V1 from v0.20.0,
    not a label (None: it keeps the v0.19 terms), and not with --kv-cache-memory-bytes (module docstring)."""
    return (s.accounting is Accounting.vllm_v1 and release is not None and release >= V1_CUDAGRAPH_ESTIMATE_RELEASE
            and s.kv_cache_memory_bytes is None)


def cudagraph_estimate(model: ModelSpec, s: Resolved, release: tuple[int, ...] | None) -> CudaGraphEstimate | None:
    """The estimate vLLM V1 subtracts at `release`, the one given (vllm.given_release; module docstring); None
    where it subtracts none (estimate_applies) or captures none (--enforce-eager)."""
    if not estimate_applies(s, release) or s.enforce_eager:
        return None
    sizes = capture_sizes(s.max_num_seqs, s.max_num_batched_tokens)
    full = [n for n in sizes if n <= s.max_num_seqs]
    return CudaGraphEstimate(sizes[-1], len(sizes), len(full), forward_bytes(model, s, sizes[-1], with_moe=False))


def graph_terms(model: ModelSpec, s: Resolved, release: tuple[int, ...] | None) -> list[Term]:
    """The estimate as the term vLLM subtracts; under --enforce-eager, where it would subtract one, a 0-byte term
    saying why (module docstring); none where no estimate is subtracted."""
    graphs = cudagraph_estimate(model, s, release)
    if graphs is not None:
        return [Term(CUDA_GRAPH_ESTIMATE, graphs.bytes, graphs.describe(), Role.used)]
    if s.enforce_eager and estimate_applies(s, release):
        return [Term(CUDA_GRAPH_ESTIMATE, 0, "--enforce-eager: cudagraph_mode NONE captures no graphs, so the "
                                             "profile's CUDA-graph estimate is 0 (gpu_worker.py "
                                             "determine_available_memory)", Role.used)]
    return []


__all__ = ["CUDA_GRAPH_ESTIMATE", "CudaGraphEstimate", "MAX_CAPTURE_SIZE", "PER_GRAPH_FLOOR_BYTES", "V1_CUDAGRAPH_ESTIMATE_RELEASE",
           "capture_sizes", "cudagraph_estimate", "estimate_applies", "graph_terms"]
