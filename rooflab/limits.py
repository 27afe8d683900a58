"""Workload limits: values far past any real deployment, refused where they enter (CLI options, API arguments).

They keep every figure a finite float64 and every array small: a batch is at most 2^24
sequences (a uniform batch of any size up to that is priced in closed form, without a Python
list per sequence), a context at most 2^31 tokens. Each limit is named in the error that refuses
a value past it.
"""

from __future__ import annotations

#: Tokens in one sequence, context or prefill (2^31: past any model's context window by 100x).
MAX_TOKENS = 1 << 31
#: Sequences in one batch.
MAX_BATCH = 1 << 24
#: Context lengths listed one by one (a ragged batch).
MAX_RAGGED = 1 << 16
#: KV splits of one sequence.
MAX_SPLITS = 1 << 12
#: Tokens in one KV-cache page.
MAX_PAGE_SIZE = 1 << 20
#: GPUs in one tensor- or context-parallel group.
MAX_GPUS = 1 << 12
#: Standard deviation of logits in the numerics headroom (exp of 88 already overflows fp32).
MAX_LOGIT_STD = 1e6
#: Memory in a reserve or a size option, GiB.
MAX_GIB = 1e6
