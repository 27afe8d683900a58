"""What every cost function returns: FLOPs and compulsory HBM bytes per kernel launch.

Conventions (the chapters' section 0.4): compulsory traffic only, each distinct
byte crossing the HBM boundary once per kernel that touches it; FLOPs count a
multiply-add as two. All figures are per layer, arrays broadcast over the
workload arguments (sequence length, batch, ...), float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import InputError, shown
from ..vocab import Pipe, Variant
# The argument checks moved to checks.py; the cost modules and callers import them from here as before.
from .checks import (AGGREGATOR, ArrayLike, as_array, check_cost, check_dtypes, check_flag,  # noqa: F401
                     check_heads, check_layer, check_spec, real_array, real_number, whole_array, whole_number)



@dataclass(frozen=True)
class KernelCost:
    """One kernel launch: its FLOPs on one pipe, special-function calls, and compulsory HBM bytes.

    `parallel_fraction` is the share of the GPU a launch can keep busy when its work units do not
    fill every SM for the whole launch (cost/parallel.py): its floor is divided by it; 1 otherwise.
    """

    name: str
    flops: np.ndarray
    hbm_bytes: np.ndarray
    pipe: Pipe = Pipe.tensor
    exp_ops: np.ndarray = np.float64(0.0)
    parallel_fraction: np.ndarray = np.float64(1.0)

    @property
    def intensity_flop_per_byte(self) -> np.ndarray:
        return self.flops / self.hbm_bytes


class SingleKernel:
    """For a variant that is one launch, held in `self.kernel`: its kernels, FLOPs and bytes."""

    kernel: KernelCost

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.kernel,)

    @property
    def flops(self) -> np.ndarray:
        return self.kernel.flops

    @property
    def hbm_bytes(self) -> np.ndarray:
        return self.kernel.hbm_bytes


@dataclass(frozen=True)
class LaunchCost(SingleKernel):
    """One launch of a variant, priced on its own (naive attention's softmax as a kernel measured alone)."""

    kernel: KernelCost
    variant: Variant


def fused(name: str, kernels: "tuple[KernelCost, ...] | list[KernelCost]") -> KernelCost:
    """Several launches' work as one launch: FLOPs, bytes and exps summed, so the floor is that of the sums
    (a chunked-prefill step runs the decode batch and the prefill chunk in one kernel). All on one pipe."""
    pipes = {k.pipe for k in kernels}
    if len(pipes) != 1:
        raise InputError(f"cannot fuse launches on different pipes ({', '.join(p.value for p in pipes)})")
    return KernelCost(name, sum(k.flops for k in kernels), sum(k.hbm_bytes for k in kernels), pipes.pop(),
                      sum(k.exp_ops for k in kernels))


class Cost(Protocol):
    """A variant's cost: the headline FLOPs and bytes, and the kernel launches they come from."""

    variant: Variant

    @property
    def flops(self) -> np.ndarray: ...

    @property
    def hbm_bytes(self) -> np.ndarray: ...

    @property
    def kernels(self) -> tuple[KernelCost, ...]: ...


@dataclass(frozen=True)
class Visibility:
    """Which keys a query at position p sees (causal): all of 0..p, a window of the last `window` (keys j
    with p - W < j <= p), or its own chunk of `chunk` tokens (floor(j / C) = floor(p / C), j <= p).

    Full attention has neither. Window and chunk layers are causal by construction.
    """

    window: int | None = None
    chunk: int | None = None

    def __post_init__(self) -> None:
        for name in ("window", "chunk"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, whole_number(getattr(self, name), f"Visibility {name} (tokens)"))

    @classmethod
    def of(cls, layer: object | None) -> Visibility:
        """The visibility of a LayerType (or of full attention for None)."""
        if layer is None:
            return FULL_VISIBILITY
        return cls(getattr(layer, "window", None), getattr(layer, "chunk", None))

    @property
    def is_full(self) -> bool:
        return self.window is None and self.chunk is None

    @property
    def span(self) -> float:
        """The most keys one query sees: W, C, or unbounded."""
        return float(self.window or self.chunk or np.inf)

    def prefix_pairs(self, n: np.ndarray) -> np.ndarray:
        """Visible (query, key) pairs of queries 0..n-1 among keys 0..n-1 (causal).

        full    n (n + 1) / 2
        window  n (n + 1) / 2 while n <= W, then W (W + 1) / 2 + (n - W) W
        chunk   (n // C) C (C + 1) / 2 + r (r + 1) / 2 with r = n mod C
        """
        n = np.asarray(n, dtype=np.float64)
        if self.window is not None:
            w = float(self.window)
            return np.where(n <= w, n * (n + 1) / 2, w * (w + 1) / 2 + (n - w) * w)
        if self.chunk is not None:
            c = float(self.chunk)
            r = np.mod(n, c)
            return np.floor(n / c) * c * (c + 1) / 2 + r * (r + 1) / 2
        return n * (n + 1) / 2

    def pairs(self, q_len: np.ndarray, kv_len: np.ndarray, causal: bool = True) -> np.ndarray:
        """Visible pairs of one head for q_len queries at the end of kv_len keys (a prefill when equal,
        several new tokens of a decode or a chunk appended to a cache otherwise).

        Non-causal (full attention only): q_len kv_len. Causal: prefix_pairs(kv_len) - prefix_pairs(kv_len - q_len),
        which for full attention is q_len (kv_len - q_len) + q_len (q_len + 1) / 2.
        """
        q_len = np.asarray(q_len, dtype=np.float64)
        kv_len = np.asarray(kv_len, dtype=np.float64)
        if not causal:
            if not self.is_full:
                raise InputError("a window or chunk is causal; it has no non-causal form")
            return q_len * kv_len
        if self.is_full:
            return q_len * (kv_len - q_len) + q_len * (q_len + 1) / 2
        return self.prefix_pairs(kv_len) - self.prefix_pairs(kv_len - q_len)

    def kept_tokens(self, context_len: np.ndarray) -> np.ndarray:
        """Keys the next query of a `context_len`-token sequence sees (the last token is the query's own)."""
        ctx = np.asarray(context_len, dtype=np.float64)
        if self.window is not None:
            return np.minimum(ctx, self.window)
        if self.chunk is not None:
            return np.mod(ctx - 1, self.chunk) + 1
        return ctx

    def read_tokens(self, context_len: np.ndarray, q_len: int = 1) -> np.ndarray:
        """Keys q_len new tokens at the end of a `context_len`-token sequence see together: what a decode
        kernel must read (a window of W for q_len tokens spans W + q_len - 1 keys)."""
        ctx = np.asarray(context_len, dtype=np.float64)
        if self.window is not None:
            return np.minimum(ctx, self.window + q_len - 1)
        if self.chunk is not None:
            first = ctx - q_len                         # the first new token's position
            start = np.floor(first / self.chunk) * self.chunk
            return ctx - start
        return ctx


FULL_VISIBILITY = Visibility()


def check_visibility(visibility: object, what: str = "visibility") -> Visibility:
    """`visibility` as a Visibility, or InputError naming `what` (a window length or a layer is not one)."""
    if not isinstance(visibility, Visibility):
        raise InputError(f"{what} must be a rooflab.cost.common.Visibility (Visibility.of(layer)), got "
                         f"{shown(visibility)}")
    return visibility


def causal_pairs(q_len: np.ndarray, kv_len: np.ndarray, causal: bool) -> np.ndarray:
    """Visible (query, key) pairs of one head.

    Non-causal: q_len * kv_len. Causal with the queries at the end of the keys
    (prefill when q_len == kv_len, or a chunk appended to a cache): query i sees
    kv_len - q_len + i + 1 keys, so the sum is q_len * (kv_len - q_len) + q_len (q_len + 1) / 2.
    """
    if not causal:
        return q_len * kv_len
    return q_len * (kv_len - q_len) + q_len * (q_len + 1) / 2
