"""The float64 oracles for attention numerics: dtype limits, online softmax, streaming attention, merge.

Everything here is NumPy on the CPU and imports no matplotlib, CuPy or typer. Results are
float64; narrow formats (bf16, fp8) are emulated by rounding (formats.py). Sources: the chapters "Naive
attention and the online softmax" and "FlashAttention and PagedAttention: what does each save?".
"""

from ._checks import NumericsError
from .error_study import StateErrorRow, state_precision_error
from .formats import STATE_DTYPES, float_format, round_bf16, round_to_format, round_to_precision, state_dtype
from .limits import (DTypeLimits, SoftmaxHeadroom, dtype_limits, expected_max_normal, expected_max_normal_exact,
                     softmax_headroom)
from .merge import identity_state, merge_many, merge_states
from .reference import attention_reference, partial_attention
from .softmax import (NormaliserStep, OnlineResult, naive_softmax, normaliser_steps, online_softmax,
                      safe_softmax, softmax_normaliser)
from .streaming import streaming_attention
from .variants import masked_attention_reference, mla_decode_reference, visible_keys

__all__ = [
    "DTypeLimits", "NormaliserStep", "NumericsError", "OnlineResult", "STATE_DTYPES",
    "SoftmaxHeadroom", "StateErrorRow", "attention_reference", "dtype_limits", "expected_max_normal",
    "expected_max_normal_exact", "float_format", "identity_state", "merge_many", "merge_states",
    "naive_softmax", "normaliser_steps", "online_softmax", "partial_attention", "round_bf16",
    "round_to_format", "round_to_precision", "safe_softmax", "softmax_headroom", "softmax_normaliser",
    "state_dtype", "state_precision_error", "streaming_attention",
    "masked_attention_reference", "mla_decode_reference", "visible_keys",
]
