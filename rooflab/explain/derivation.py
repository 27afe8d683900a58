"""The machinery of a derivation: steps and sections, formula evaluation, and the check against rooflab.

A step names a quantity, gives its formula, and takes rooflab's own value for it; the formula is
evaluated independently from the symbols given so far, and the two must agree to AGREEMENT_RTOL
(a disagreement is ExplainMismatch, a bug in rooflab). The variants' derivations (prefill.py,
decode.py) are written with it; render.py lays out what it produces.
"""

from __future__ import annotations

import ast
import enum
import math
import operator
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from ..floors import EMULATED_EXP_FLOP, Ceilings, emulated_exps, floor_kernel
from ..specs import GpuSpec
from ..units import DType, fmt_bytes, fmt_flops, fmt_seconds, ridge_text

if TYPE_CHECKING:
    from .layer import Layer

#: A formula and the cost function must agree to this relative error (float64 summation order only).
AGREEMENT_RTOL = 1e-9


class ExplainMismatch(RuntimeError):
    """A formula shown by `rooflab explain` disagrees with the cost function: a bug in rooflab."""


class Unit(str, enum.Enum):
    bytes = "bytes"
    flop = "flop"
    intensity = "intensity"
    seconds = "seconds"
    ridge = "ridge"          # I / I*, shown as 'Nx left/right of the ridge'
    factor = "factor"        # a plain multiple, 'Nx'
    fraction = "fraction"
    count = "count"


@dataclass(frozen=True)
class Step:
    """One derived figure: `quantity = formula = substituted = result`."""

    quantity: str
    formula: str
    substituted: str
    value: float
    unit: Unit
    note: str = ""
    word: str = ""           # what a count counts ("tokens")

    @property
    def result(self) -> str:
        return format_result(self.value, self.unit, self.word)


@dataclass(frozen=True)
class Section:
    title: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Explanation:
    """The whole derivation for one variant and workload."""

    title: str
    symbols: tuple[tuple[str, str, str], ...]      # (symbol, value, meaning)
    sections: tuple[Section, ...]
    conclusion: tuple[str, ...] = ()


# --- evaluating a formula ---------------------------------------------------------------------

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_FUNCTIONS: dict[str, Callable[..., float]] = {"ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt,
                                               "max": max, "min": min}
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def evaluate(formula: str, symbols: dict[str, float]) -> float:
    """Value of an arithmetic formula over `symbols`: + - * / ^, parentheses, ceil, floor, sqrt, max, min."""
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(symbols[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
            return float(_FUNCTIONS[node.func.id](*(ev(a) for a in node.args)))
        raise ValueError(f"unsupported element in formula {formula!r}: {ast.dump(node)}")

    return ev(ast.parse(formula.replace("^", "**"), mode="eval"))


def number(x: float) -> str:
    """A number for a substituted formula: whole numbers as they are, others in engineering notation."""
    x = float(x)
    if x == int(x) and abs(x) < 1e7:
        return str(int(x))
    if 0.1 <= abs(x) < 1e4:
        return f"{x:.5g}"
    exp3 = 3 * math.floor(math.log10(abs(x)) / 3)
    mantissa = f"{x / 10 ** exp3:.5g}"
    if float(mantissa) >= 1000:                  # 999.996e9 rounds up to 1000e9
        exp3, mantissa = exp3 + 3, f"{x / 10 ** (exp3 + 3):.5g}"
    return f"{mantissa}e{exp3}"


def is_symbol(formula: str) -> bool:
    """True for a formula that is one bare symbol ('Q_attention'): substituting it says nothing new."""
    return _NAME.fullmatch(formula) is not None


def substitute(formula: str, symbols: dict[str, float]) -> str:
    return _NAME.sub(lambda m: m.group(0) if m.group(0) in _FUNCTIONS else number(symbols[m.group(0)]), formula)


def _chapter_rounding(text: str) -> str:
    """'165.709 ms' -> '165.7 ms', '5.178 ms' -> '5.18 ms': three significant figures, at least one decimal."""
    value, unit = text.split(" ", 1)
    v = float(value)
    decimals = max(1, 2 - math.floor(math.log10(abs(v)))) if v else 1
    return f"{v:.{decimals}f} {unit}"


def format_result(value: float, unit: Unit, word: str = "") -> str:
    if unit is Unit.bytes:
        return f"{number(value)} B = {fmt_bytes(value)}" if value >= 1024 else f"{value:.0f} B"
    if unit is Unit.flop:
        return f"{number(value)} FLOP = {fmt_flops(value)}" if value >= 1000 else f"{value:.0f} FLOP"
    if unit is Unit.intensity:
        return f"{value:.1f} FLOP/byte" if value >= 1 else f"{value:.3g} FLOP/byte"
    if unit is Unit.seconds:
        return f"{number(value)} s = {_chapter_rounding(fmt_seconds(value))}"
    if unit is Unit.ridge:
        return f"{value:.4g} = {ridge_text(value)} of the ridge"
    if unit is Unit.factor:
        return f"{value:.1f}x"
    if unit is Unit.fraction:
        return f"{value:.4g} = {value:.1%}"
    return f"{value:,.0f} {word}".rstrip()


# --- building a derivation ----------------------------------------------------------------------

@dataclass
class _Derivation:
    """Symbols in, steps out; each step's formula is checked against the cost function's value."""

    symbols: dict[str, float]
    legend: list[tuple[str, str, str]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    _steps: list[Step] = field(default_factory=list)
    _title: Optional[str] = None

    def given(self, name: str, value: float, meaning: str, shown: Optional[str] = None) -> None:
        """A symbol the derivation starts from; given again with the same value, it is not listed twice."""
        if name in self.symbols and self.symbols[name] == float(value):
            return
        self.symbols[name] = float(value)
        self.legend.append((name, shown or number(value), meaning))

    def section(self, title: str) -> None:
        self._close()
        self._title = title

    def step(self, name: str, formula: str, expected: object, unit: Unit, note: str = "", word: str = "") -> float:
        """Evaluate `formula`, check it against `expected` (rooflab's value), record and name the result."""
        value = float(np.asarray(expected, dtype=np.float64).reshape(-1)[0])
        from_formula = evaluate(formula, self.symbols)
        if not math.isclose(from_formula, value, rel_tol=AGREEMENT_RTOL, abs_tol=1e-300):
            raise ExplainMismatch(f"{name} = {formula} gives {from_formula!r}, but rooflab computes {value!r}")
        self.symbols[name] = value
        self._steps.append(Step(name, formula, substitute(formula, self.symbols), value, unit, note, word))
        return value

    def finish(self) -> tuple[Section, ...]:
        self._close()
        return tuple(self.sections)

    def _close(self) -> None:
        if self._title is not None and self._steps:
            self.sections.append(Section(self._title, tuple(self._steps)))
        self._steps = []


def heads_and_roofs(d: _Derivation, layer: "Layer", gpu: GpuSpec, roofs: Ceilings, dtype: DType,
                    vector: bool = False) -> None:
    """The symbols every softmax derivation starts from: the layer type's heads and span, the layers, the roofs."""
    heads, model = layer.heads, layer.model
    d.given("h", heads.num_qo_heads, f"query heads ({model.display_name})")
    d.given("h_kv", heads.num_kv_heads, "key/value heads" + (" (un-absorbed MLA: one per query head)"
                                                             if layer.spec.is_latent else ""))
    if layer.spec.is_latent:
        d.given("d_nope", layer.spec.qk_nope_head_dim, "each head's q.k width without rope (qk_nope_head_dim)")
        d.given("d_R", layer.spec.qk_rope_head_dim, "the rope part of q.k (qk_rope_head_dim)")
        d.given("d", heads.head_dim, "head dimension of q and k: d_nope + d_R")
    else:
        d.given("d", heads.head_dim, "head dimension")
    if layer.separate_values:
        d.given("d_v", heads.value_dim, "head dimension of v and o (v_head_dim)")
    if layer.spec.window is not None:
        d.given("W", layer.spec.window, "the sliding window: a query sees itself and the W - 1 keys before it")
    if layer.spec.chunk is not None:
        d.given("C", layer.spec.chunk, "the chunk: a query sees the keys of its own chunk of C, up to itself")
    d.given("b", dtype.bytes, f"bytes per element ({dtype.value})")
    d.given("L", layer.count, layer.layers_meaning())
    roof_symbols(d, gpu, roofs, dtype, vector)


def roof_symbols(d: _Derivation, gpu: GpuSpec, roofs: Ceilings, dtype: DType, vector: bool = False) -> None:
    """pi, beta (and pi_vec, the exp roof eps where used): the roofs of this GPU.

    eps = eps_sfu + pi_vec / c: the exp units, plus the exps the FMA units can emulate at c FLOP each
    (floors.EMULATED_EXP_FLOP; FlashAttention-4's scheme), so the floor stays a bound.
    """
    d.given("pi", roofs.matmul_flop_per_s, f"FLOP/s, dense {dtype.value} tensor rate ({gpu.display_name}, "
                                           f"{roofs.source.value})")
    if vector or roofs.exp_per_s:
        d.given("pi_vec", roofs.vector_flop_per_s, "FLOP/s, fp32 vector (FMA) rate")
    d.given("beta", roofs.bandwidth_bytes_per_s, "B/s, HBM bandwidth")
    if roofs.exp_per_s:
        d.given("eps_sfu", roofs.exp_per_s, "exp/s of the exp (special-function) units at the boost clock")
        d.given("c_emul", EMULATED_EXP_FLOP, "FLOP the FMA units spend on one emulated exp2 (range reduction "
                                             "and a cubic)")
        d.step("eps", "eps_sfu + pi_vec / c_emul", roofs.exp_roof_per_s, Unit.count,
               "the exp roof: the exp units plus what the idle FMA units can emulate", "exp/s")


def floor_formula(flops: str, rate: str, exps: Optional[str], bytes_: str, roofs: Ceilings) -> str:
    """max(F / pi, E / eps, Q / beta): the three roofs of a tensor-pipe launch (the exp term only where the spec
    gives an exp rate). A floor is physical: no busy share, no efficiency."""
    terms = [f"{flops} / {rate}"]
    if exps and roofs.exp_per_s:
        terms.append(f"{exps} / eps")
    terms.append(f"{bytes_} / beta")
    return f"max({', '.join(terms)})"


def vector_floor(d: _Derivation, name: str, flops: str, exps: str, bytes_: str, kernel, roofs: Ceilings,
                 value: object) -> float:
    """The floor of a vector-pipe launch whose exps share the FMA units with its FLOPs: x exps emulated
    (rooflab.floors.emulated_exps), then max((F + c x) / pi_vec, (E - x) / eps_sfu, Q / beta)."""
    if not roofs.exp_per_s:
        return d.step(name, floor_formula(flops, "pi_vec", None, bytes_, roofs), value, Unit.seconds)
    d.given(f"x_{name}", float(np.asarray(emulated_exps(kernel.flops, kernel.exp_ops, roofs))),
            "exps the FMA units emulate for the least time (where the two pipes finish together)")
    return d.step(name, f"max(({flops} + c_emul * x_{name}) / pi_vec, ({exps} - x_{name}) / eps_sfu, "
                        f"{bytes_} / beta)", value, Unit.seconds)


def merge_floor(d: _Derivation, cost, roofs: Ceilings, pred, rows: str, width: str) -> None:
    """With splits, the merge's FLOPs and floor after the attention launch's; then the step's floor.

    `rows` and `width` are the merge's rows ('B * h') and output width ('d') in the derivation's symbols.
    """
    if cost.merge is not None:
        merge = floor_kernel(cost.merge.kernel, roofs)
        d.given("pi_vec", roofs.vector_flop_per_s, "FLOP/s, fp32 vector rate: the merge's FLOPs run there")
        d.step("F_merge", f"{rows} * (n_split * (2 * {width} + 3) + {width})", cost.merge.flops, Unit.flop,
               "on the fp32 vector units")
        d.given("E_merge", float(cost.merge.kernel.exp_ops), "exps of the merge, one per (row, split)")
        vector_floor(d, "t_merge", "F_merge", "E_merge", "Q_merge", cost.merge.kernel, roofs, merge.t_floor_s)
        d.step("t_floor", "t_attention + t_merge", pred.t_floor_s, Unit.seconds)
    else:
        d.step("t_floor", "t_attention", pred.t_floor_s, Unit.seconds)
