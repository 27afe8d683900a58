"""The cost functions' argument checks: workload arrays, whole numbers, dtypes, specs, heads, layers and flags,
each refusal an InputError that names the argument (re-exported by rooflab.cost.common, where they lived)."""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Union

import numpy as np

from ..errors import InputError, shown
from ..specs import AttentionHeads, ModelSpec
from ..units import DType

ArrayLike = Union[float, int, np.ndarray, list]


#: The dtype kinds a workload array may hold: signed and unsigned integers, floats. Not booleans ('b'), complex
#: ('c'), text ('U', 'S'), dates and durations ('M', 'm'), raw bytes or records ('V'); objects ('O') element by element.
_NUMBER_KINDS = "iuf"
#: Scalars an object array (a Python list) may hold, booleans excepted.
_NUMBER_TYPES = (int, float, np.integer, np.floating, Fraction, Decimal)


def _masked_array_type() -> type | tuple:
    """np.ma.MaskedArray if numpy.ma is loaded, else () (isinstance of nothing): no masked array exists before it
    is, and `np.ma` would load it (about 20 ms of every command's start-up)."""
    masked = sys.modules.get("numpy.ma")
    return masked.MaskedArray if masked is not None else ()


#: Scalars as_array answers in a few comparisons when they pass (the cost functions' usual arguments; bool is not
#: among them: type(True) is bool), and the ints among them that an int64 array holds.
_PLAIN_SCALARS = (float, int, np.float64, np.int64)
_INT64_END = 2 ** 63


def as_array(value: ArrayLike, name: str, minimum: float = 1, maximum: float | None = None,
             lo_open: bool = False) -> np.ndarray:
    """A workload argument as a float64 array, refusing values below `minimum` (at it too with `lo_open`), above
    `maximum` or not finite, and what is not real numbers: text, raw bytes (bytes, bytearray, memoryview),
    booleans, complex numbers, dates and durations, records, masked entries, ragged or nested containers."""
    if type(value) in _PLAIN_SCALARS and (type(value) is not int or -_INT64_END <= value < _INT64_END):
        number = float(value)           # one plain number in range: the array the checks below return, at once
        if math.isfinite(number) and (number > minimum if lo_open else number >= minimum) and (
                maximum is None or number <= maximum):
            return np.asarray(number)
    if isinstance(value, (str, bytes, bytearray, memoryview)) or _is_bool(value):
        raise InputError(f"{name} must be numbers, got {shown(value)}")
    if isinstance(value, _masked_array_type()):
        if np.ma.is_masked(value):
            masked = int(np.ma.count_masked(value))
            raise InputError(f"{name} has {masked:,} masked (missing) value(s) of {value.size:,}; give numbers only")
        value = np.ma.getdata(value)
    arr = real_array(value, name)
    if arr.size == 0:
        raise InputError(f"{name} must not be empty")
    bad = ~np.isfinite(arr) | (arr < minimum) | ((arr == minimum) if lo_open else False)
    if np.any(bad):
        raise InputError(f"{name} must be {'>' if lo_open else '>='} {minimum:g}, got {arr[bad].flat[0]:g}")
    if maximum is not None and np.any(arr > maximum):
        raise InputError(f"{name} must be <= {maximum:,.0f} (far past any real workload), got {arr[arr > maximum].flat[0]:g}")
    return arr


def whole_array(value: ArrayLike, name: str, maximum: float | None = None) -> np.ndarray:
    """as_array's float64 array of `value` (each >= 1, at most `maximum`), refusing an entry that is not a whole
    number (2.5 sequences or tokens): InputError naming `name`."""
    arr = as_array(value, name, maximum=maximum)
    fractional = arr != np.floor(arr)
    if np.any(fractional):
        raise InputError(f"{name} must be whole numbers, got {arr[fractional].flat[0]:g}")
    return arr


def real_array(value: object, name: str) -> np.ndarray:
    """`value` as float64 if it holds real numbers only (what as_array lists; NaN and infinities kept, for callers
    with their own rule), else InputError naming `name`."""
    def refused() -> InputError:          # built only when raised: shown() costs more than the checks
        return InputError(f"{name} must be numbers, got {shown(value)}")

    try:
        raw = np.array(value, dtype=object) if isinstance(value, (list, tuple)) else np.asarray(value)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        raise refused() from None
    if raw.dtype.kind == "O":
        for item in raw.flat:
            if isinstance(item, (bool, np.bool_)):
                raise InputError(f"{name} must be numbers, got {shown(value)} (a boolean is not a count)")
            if not isinstance(item, _NUMBER_TYPES):
                raise refused()
    elif raw.dtype.kind not in _NUMBER_KINDS:
        raise refused()
    try:
        return raw.astype(np.float64)
    except OverflowError:                       # a Python int past float64 (10**400)
        raise InputError(f"{name} must be finite numbers, got {shown(value)}") from None
    except (TypeError, ValueError, ArithmeticError):
        raise refused() from None


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray) and value.dtype.kind == "b")


def _plain(value: object) -> object:
    """A NumPy scalar or 0-d array as the Python scalar it holds (np.int64 -> int, np.bool_ -> bool); else as is."""
    if isinstance(value, np.ndarray) and value.ndim == 0 or isinstance(value, np.generic):
        return value.item()
    return value


def _real(value: object, what: str, kind: str, bounds: str) -> int | float:
    """`value` (a plain scalar) as a Python int (exactly) or float, whatever numeric type it came as;
    InputError for the rest."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, Decimal)):
        raise InputError(f"{what} must be {kind}{bounds}, got {shown(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value.adjusted() < 400 \
            and value == value.to_integral_value():
        return int(value)
    if isinstance(value, Fraction) and value.denominator == 1:
        return value.numerator
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InputError(f"{what} must be {kind}{bounds}, got {shown(value)}")
    return number


def _bounds(minimum: int, maximum: int | None) -> str:
    return f" >= {minimum:,}" if maximum is None else f" from {minimum:,} to {maximum:,}"


def check_dtypes(dtype: object, kv_dtype: object | None) -> tuple[DType, DType]:
    """The compute dtype and the KV cache's (the compute dtype where None), each given as a DType or its name."""
    dtype = DType.of(dtype)
    return dtype, (dtype if kv_dtype is None else DType.of(kv_dtype, "kv_dtype"))


def whole_number(value: object, what: str, minimum: int = 1, maximum: int | None = None) -> int:
    """`value` as an int, or InputError naming `what`, the bounds and the value if it is not a whole number in
    [minimum, maximum]. Any size of int, NumPy scalars, Fraction and Decimal are read exactly; booleans, text and
    containers are refused."""
    if type(value) is int and value >= minimum and (maximum is None or value <= maximum):
        return value                    # the common case
    bounds = _bounds(minimum, maximum)
    value = _plain(value)
    number = _real(value, what, "a whole number", bounds)
    if isinstance(number, float):
        if not number.is_integer():
            raise InputError(f"{what} must be a whole number{bounds}, got {shown(value)}")
        number = int(number)
    if number < minimum or (maximum is not None and number > maximum):
        far = " (far past any real workload)" if maximum is not None and number > maximum else ""
        raise InputError(f"{what} must be a whole number{bounds}{far}, got {shown(value)}")
    return number


#: What prices a whole model, named where a kernel cost function is handed one.
AGGREGATOR = ("rooflab.cost.layers.model_prefill / model_decode (a whole model, every layer type as itself) or "
              "layer_prefill / layer_decode (one layer type)")


#: How to get each spec class a name is not: a GPU or model name given where the spec is expected.
_SPEC_HINT = {"GpuSpec": "rooflab.load_gpu(name) loads one", "ModelSpec": "rooflab.load_model(name) loads one"}


def check_spec(value: object, kind: type, what: str):
    """`value` if it is a `kind` (GpuSpec, ModelSpec, Ceilings, ...), else InputError naming `what`, the class and, for a
    spec, how to load one (a GPU name where a GpuSpec is expected was an AttributeError deep inside)."""
    if isinstance(value, kind):
        return value
    hint = f" ({_SPEC_HINT[kind.__name__]})" if kind.__name__ in _SPEC_HINT else ""
    raise InputError(f"{what} must be a {kind.__name__}{hint}, got {shown(value)}")


def check_cost(cost: object, what: str = "cost"):
    """`cost` if it is a Cost (a cost function's result: its launches a tuple of KernelCost), else InputError
    naming `what`."""
    if not isinstance(getattr(cost, "kernels", None), tuple):
        raise InputError(f"{what} must be a Cost (a cost function's result), got {shown(cost)}")
    return cost


def check_heads(heads: object, function: str) -> AttentionHeads:
    """`heads` as AttentionHeads, or InputError naming `function`. A ModelSpec is refused: its layers may differ
    (windows, MLA, linear attention, their own heads), and only rooflab.cost.layers walks them."""
    if isinstance(heads, ModelSpec):
        raise InputError(f"{function} prices one layer's AttentionHeads, not a model ({heads.name}); price the model "
                         f"with {AGGREGATOR}, or pass model.heads for the heads of a single layer type")
    if not isinstance(heads, AttentionHeads):
        raise InputError(f"{function} takes AttentionHeads (a layer's heads), got {shown(heads)}")
    return heads


def check_layer(layer: object, kind: object = None, what: str = "layer"):
    """`layer` as a LayerType (of `kind` where given), or InputError naming `what` and what was given instead."""
    from ..specs import LayerType

    if not isinstance(layer, LayerType):
        raise InputError(f"{what} must be a LayerType (a model's layer_types[...]), got {shown(layer)}")
    if kind is not None and layer.kind is not kind:
        raise InputError(f"{what} must be a {kind.value} layer type, not {layer.kind.value}")
    return layer


def check_flag(value: object, what: str) -> bool:
    """`value` as a bool (a NumPy bool too), or InputError naming `what`: 'yes', 1 or None is not a switch."""
    value = _plain(value)
    if not isinstance(value, bool):
        raise InputError(f"{what} must be True or False, got {shown(value)}")
    return value


def real_number(value: object, what: str, minimum: float, maximum: float, lo_open: bool = False,
                unit: str = "") -> float:
    """`value` as a float in [minimum, maximum] ((minimum, maximum] with `lo_open`), or InputError naming `what`,
    the bounds and the value; booleans, text, containers, NaN and infinities are refused."""
    if type(value) is float and (minimum < value or (value == minimum and not lo_open)) and value <= maximum:
        return value                    # the common case, checked in a few comparisons (NaN fails them all)
    bounds = f" in {'(' if lo_open else '['}{minimum:g}, {maximum:g}]{unit}"
    value = _plain(value)
    number = _real(value, what, "a number", bounds)
    if number < minimum or (lo_open and number == minimum) or number > maximum:
        raise InputError(f"{what} must be a number{bounds}, got {shown(value)}")
    return float(number)
