"""The sequences of one decode step: how many, and how long each is, run-length coded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..limits import MAX_BATCH, MAX_RAGGED, MAX_TOKENS
from .common import ArrayLike, as_array, whole_number


@dataclass(frozen=True)
class DecodeBatch:
    """The sequences of one decode step, run-length coded: `counts[i]` sequences of `lengths[i]` tokens.

    A uniform batch of any size is one run, so a million sequences cost no more to price than one;
    a ragged list becomes its distinct lengths. Build one with decode_batch().
    """

    lengths: np.ndarray     # [U] distinct context lengths, ascending, float64
    counts: np.ndarray      # [U] sequences with each length, float64

    @classmethod
    def uniform(cls, context_len: int, batch: int) -> DecodeBatch:
        length = whole_number(context_len, "context length", maximum=MAX_TOKENS)
        size = whole_number(batch, "batch", maximum=MAX_BATCH)
        return cls(np.array([float(length)]), np.array([float(size)]))

    @property
    def size(self) -> int:
        """Sequences in the batch."""
        return int(self.counts.sum())

    @property
    def total_tokens(self) -> float:
        return float((self.lengths * self.counts).sum())

    @property
    def max_len(self) -> float:
        return float(self.lengths.max())

    @property
    def mean_len(self) -> float:
        return self.total_tokens / self.size

    @property
    def is_uniform(self) -> bool:
        return self.lengths.size == 1

    def expanded(self) -> tuple[int, ...]:
        """Every sequence's length, in ascending order (only for batches of at most MAX_RAGGED sequences)."""
        if self.size > MAX_RAGGED:
            raise InputError(f"a batch of {self.size:,} sequences is too large to list one by one "
                             f"(limit {MAX_RAGGED:,}); it is priced as {self.lengths.size} run(s)")
        return tuple(int(x) for x, n in zip(self.lengths, self.counts) for _ in range(int(n)))


def decode_batch(context_lens: ArrayLike | DecodeBatch) -> DecodeBatch:
    """A decode batch from a list of context lengths (whole numbers in [1, MAX_TOKENS]) or a DecodeBatch."""
    if isinstance(context_lens, DecodeBatch):
        return context_lens
    lens = as_array(context_lens, "context lengths", maximum=MAX_TOKENS).reshape(-1)
    if lens.size > MAX_RAGGED:
        raise InputError(f"{lens.size:,} context lengths given one by one; the limit is {MAX_RAGGED:,} "
                         "(give a uniform batch as one length and a batch size)")
    fractional = lens != np.floor(lens)
    if np.any(fractional):
        raise InputError(f"context lengths must be whole numbers, got {lens[fractional][0]:g}")
    lengths, counts = np.unique(lens, return_counts=True)
    return DecodeBatch(lengths, counts.astype(np.float64))


def context_lengths(context_lens: ArrayLike) -> np.ndarray:
    """A ragged batch's context lengths as a 1-D array of whole numbers >= 1."""
    batch = decode_batch(context_lens)
    return np.repeat(batch.lengths, batch.counts.astype(np.int64))
