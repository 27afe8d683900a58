"""The old name of specs/weights.py (parameter counts by component), kept for one release."""

from .weights import ParameterCount, attention_parameters, count_parameters

__all__ = ["ParameterCount", "attention_parameters", "count_parameters"]
