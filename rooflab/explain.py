"""Show the working: every figure of a report as formula, numbers substituted, and result with units.

The derivation follows the chapter (../shared/seeds/naive-attention-and-online-softmax.txt):
S and P, the traffic of each kernel, the total, F, the intensity, the compulsory intensity,
the floors, the ridge and the distance from it, whole-model times, and whether it fits.

Each value shown is the one rooflab's cost functions and roofline compute. The formula beside
it is evaluated independently from the symbols, and the two must agree: a disagreement is a
bug in rooflab (ExplainMismatch), never something to round away.
"""

from __future__ import annotations

import ast
import enum
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from .cost.common import Variant
from .cost.flash import KV_STAGES, choose_tile, flash_prefill
from .cost.merge import merge_pair
from .cost.naive import naive_prefill
from .cost.paged import check_splits, context_lengths, paged_decode, recommend_splits
from .errors import InputError
from .render import ridge_text
from .report import prefill_report
from .roofline import Ceilings, CeilingSource, predict, predict_kernel
from .specs import GpuSpec, ModelSpec
from .units import FP32_BYTES, INT32_BYTES, DType, fmt_bytes, fmt_flops, fmt_seconds

#: The variants `rooflab explain` derives.
EXPLAINED = (Variant.naive, Variant.flash, Variant.paged, Variant.split_kv, Variant.merge)
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


def _heads_and_roofs(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, dtype: DType,
                     vector: bool = False) -> None:
    d.given("h", model.num_qo_heads, f"query heads ({model.display_name})")
    d.given("h_kv", model.num_kv_heads, "key/value heads")
    d.given("d", model.head_dim, "head dimension")
    d.given("b", dtype.bytes, f"bytes per element ({dtype.value})")
    d.given("L", model.num_layers, "layers")
    d.given("pi", roofs.matmul_flop_per_s, f"FLOP/s, dense {dtype.value} tensor rate ({gpu.display_name}, "
                                           f"{roofs.source.value})")
    if vector:
        d.given("pi_vec", roofs.vector_flop_per_s, "FLOP/s, fp32 vector rate")
    d.given("beta", roofs.bandwidth_bytes_per_s, "B/s, HBM bandwidth")
    if roofs.exp_per_s:
        d.given("eps", roofs.exp_per_s, "exp/s, special-function rate")


def _floor_formula(flops: str, rate: str, exps: Optional[str], bytes_: str, roofs: Ceilings,
                   fraction: str = "") -> str:
    """max(F / pi, E / eps, Q / beta): the exp term only where the spec gives an exp rate."""
    terms = [f"{flops} / {rate}"]
    if exps and roofs.exp_per_s:
        terms.append(f"{exps} / eps")
    terms.append(f"{bytes_} / beta" + (f" / {fraction}" if fraction else ""))
    return f"max({', '.join(terms)})"


# --- the variants ---------------------------------------------------------------------------------

def _explain_naive(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                   dtype: DType, causal: bool) -> tuple[str, ...]:
    cost = naive_prefill(model, seq_len, batch, dtype, causal)
    pred = predict(cost, roofs)
    qk, sm, pv = (predict_kernel(k, roofs) for k in cost.kernels)
    pairs = "T * (T + 1) / 2" if causal else "T^2"

    d.section("The intermediates S and P (one layer)")
    d.step("S", "B * h * T^2 * b", cost.s_bytes, Unit.bytes, "the scores [B, h, T, T]: quadratic in T, free of d")
    d.step("P", "B * h * T^2 * b", cost.p_bytes, Unit.bytes, "the softmax output, a second allocation alive with S")

    d.section("HBM traffic per kernel (compulsory: each byte once per kernel that touches it)")
    d.step("Q_qk", "B * h * T * d * b + B * h_kv * T * d * b + S", cost.qk.hbm_bytes, Unit.bytes,
           "QK^T reads Q and K (once per KV head), writes S")
    d.step("Q_softmax", "S + P", cost.softmax.hbm_bytes, Unit.bytes, "softmax reads S, writes P")
    d.step("Q_pv", "P + B * h_kv * T * d * b + B * h * T * d * b", cost.pv.hbm_bytes, Unit.bytes,
           "PV reads P and V, writes O")
    d.step("Q_total", "Q_qk + Q_softmax + Q_pv", cost.hbm_bytes, Unit.bytes)
    d.step("share_SP", "(2 * S + 2 * P) / Q_total", (cost.hbm_bytes - cost.qkvo_bytes) / cost.hbm_bytes,
           Unit.fraction, "of the bytes are S and P written and read back")

    d.section("FLOPs")
    d.step("F", f"4 * B * h * {pairs} * d", cost.flops, Unit.flop,
           "QK^T plus PV, 2 FLOP per multiply-add" + (", visible (causal) pairs only" if causal else ""))
    d.step("F_softmax", "4 * B * h * T^2", cost.softmax.flops, Unit.flop,
           "max, subtract, sum, normalise per element of S, on the fp32 vector units (not in F)")

    d.section("Arithmetic intensity")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity, "with S and P through HBM")
    d.step("Q_qkvo", "2 * B * h * T * d * b + 2 * B * h_kv * T * d * b", cost.qkvo_bytes, Unit.bytes,
           "Q, K, V, O once each: the compulsory bytes of attention itself")
    closed = "F / Q_qkvo" if causal else "2 * h * T / (b * (h + h_kv))"
    d.step("I_compulsory", closed, cost.flops / cost.qkvo_bytes, Unit.intensity,
           "the same arithmetic with S kept on chip")

    d.section("The ridge")
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity, "where the two roofs meet")
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge, "naive attention: memory-bound")
    d.step("ratio_compulsory", "I_compulsory / I_star", cost.flops / cost.qkvo_bytes / roofs.ridge_flop_per_byte,
           Unit.ridge, "the same arithmetic with S on chip: compute-bound")
    d.step("loss", "I_compulsory / I", cost.flops / cost.qkvo_bytes / pred.intensity_flop_per_byte, Unit.factor,
           "the factor in intensity that materialising S costs")

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.given("E", float(cost.softmax.exp_ops), "exps of the softmax, one per element of S", number(cost.softmax.exp_ops))
    d.step("t_qk", _floor_formula("F / 2", "pi", None, "Q_qk", roofs), qk.t_floor_s, Unit.seconds)
    d.step("t_softmax", _floor_formula("F_softmax", "pi_vec", "E", "Q_softmax", roofs), sm.t_floor_s, Unit.seconds)
    d.step("t_pv", _floor_formula("F / 2", "pi", None, "Q_pv", roofs), pv.t_floor_s, Unit.seconds)
    d.step("t_floor", "t_qk + t_softmax + t_pv", pred.t_floor_s, Unit.seconds, "the kernels run one after another")

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds, "naive attention, all layers")
    d.step("t_model_compute", "L * F / pi", model.num_layers * pred.t_compute_s, Unit.seconds,
           "the compute floor: what the same arithmetic could take")
    d.step("slowdown", "t_model / t_model_compute", pred.t_floor_s / pred.t_compute_s, Unit.factor)
    return _fits(d, model, gpu, cost, seq_len, batch, dtype)


def _fits(d: _Derivation, model: ModelSpec, gpu: GpuSpec, cost, seq_len: int, batch: int,
          dtype: DType) -> tuple[str, ...]:
    facts = prefill_report(model, gpu, seq_len, batch, dtype).facts
    d.section("Does it fit?")
    d.given("C", gpu.hbm_capacity_bytes, f"bytes of HBM ({fmt_bytes(gpu.hbm_capacity_bytes)})")
    d.given("N", model.total_parameters, "parameters")
    d.step("W", "N * b", facts["weights_bytes"], Unit.bytes, "the weights, in the same dtype")
    d.step("working_set", "S + P + Q_qkvo", facts["naive_working_set_bytes"], Unit.bytes,
           "one layer at its peak: S and P together, with Q, K, V, O")
    free = d.step("free", "C - W", gpu.hbm_capacity_bytes - facts["weights_bytes"], Unit.bytes)
    limit = int(facts["naive_max_seq_len"])
    if free <= 0:
        return (f"the weights alone ({fmt_bytes(facts['weights_bytes'])}) do not fit in "
                f"{fmt_bytes(gpu.hbm_capacity_bytes)}: naive prefill cannot run at any T",)
    _check_limit(model, dtype, batch, free, limit)
    d.step("a", "2 * B * h * b", 2 * batch * model.num_qo_heads * dtype.bytes, Unit.count,
           "working set = a T^2 + l T: the T^2 term (S and P)", "bytes per token^2")
    d.step("l", "B * (2 * h + 2 * h_kv) * d * b",
           batch * (2 * model.num_qo_heads + 2 * model.num_kv_heads) * model.head_dim * dtype.bytes, Unit.count,
           "the linear term (Q, K, V, O)", "bytes per token")
    d.step("T_max", "floor((sqrt(l^2 + 4 * a * free) - l) / (2 * a))", limit, Unit.count,
           "the longest T whose working set fits next to the weights", "tokens")
    verdict = "fits" if facts["naive_fits"] else "does NOT fit"
    return (f"naive prefill at T = {seq_len:,} {verdict}: working set {fmt_bytes(facts['naive_working_set_bytes'])} "
            f"against {fmt_bytes(free)} free; the longest T that fits is {limit:,}",)


def _check_limit(model: ModelSpec, dtype: DType, batch: int, free: float, limit: int) -> None:
    """T_max is the last T whose working set fits: check it at T_max and T_max + 1."""
    if limit < 1:
        return
    at = float(naive_prefill(model, limit, batch, dtype).working_set_bytes)
    past = float(naive_prefill(model, limit + 1, batch, dtype).working_set_bytes)
    if not at <= free < past:
        raise ExplainMismatch(f"naive_max_seq_len gives {limit}, but the working set there is {at} and at "
                              f"{limit + 1} is {past} against {free} free")


def _explain_flash(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                   dtype: DType, causal: bool) -> tuple[str, ...]:
    cost = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    pred = predict(cost, roofs)
    tile = choose_tile(gpu, model.head_dim, dtype)
    pairs = "T * (T + 1) / 2" if causal else "T^2"
    d.given("B_r", tile.block_q, "query rows per tile (choose_tile)")
    d.given("B_c", tile.block_kv, "key columns per tile")
    d.given("stages", KV_STAGES, "K/V buffers in flight (double buffering)")
    d.given("smem", gpu.smem_per_sm_bytes, "bytes of shared memory per SM")

    d.section("The tile on chip")
    d.step("tile_bytes", "(B_r + 2 * stages * B_c) * d * b", tile.smem_bytes(model.head_dim, dtype), Unit.bytes,
           "Q tile and double-buffered K, V tiles; the largest tile that fits smem")

    d.section("HBM traffic (compulsory)")
    qkvo = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu, write_lse=False).hbm_bytes
    d.step("Q_qkvo", "2 * B * h * T * d * b + 2 * B * h_kv * T * d * b", qkvo, Unit.bytes, "Q, K, V, O once each")
    d.step("Q_lse", f"B * h * T * {FP32_BYTES}", cost.hbm_bytes - qkvo, Unit.bytes,
           "the fp32 log-sum-exp kept for the backward pass or a merge")
    d.step("Q_total", "Q_qkvo + Q_lse", cost.hbm_bytes, Unit.bytes, "S and P never reach HBM")

    d.section("FLOPs and intensity")
    d.step("F", f"4 * B * h * {pairs} * d", cost.flops, Unit.flop, "unchanged by tiling")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)
    rows = "B_r * ceil(T / B_r) * (ceil(T / B_r) + 1) / 2 - (ceil(T / B_r) * B_r - T)" if causal else \
        "ceil(T / B_r) * T"
    d.step("Q_tiled", f"2 * B * h * T * d * b + Q_lse + 2 * B * h * ({rows}) * d * b", cost.hbm_bytes_tiled,
           Unit.bytes, "upper bound: K and V re-read for every query tile of every query head, no L2 reuse")
    d.step("I_tiled", "F / Q_tiled", cost.intensity_tiled, Unit.intensity)
    d.step("rescale", "1 / B_c", cost.rescale_overhead, Unit.fraction,
           "extra arithmetic of the online softmax against the PV accumulation")

    d.section("Time floors (one layer)")
    d.given("E", float(cost.kernel.exp_ops), "exps, one per visible (query, key) pair", number(cost.kernel.exp_ops))
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("t_floor", _floor_formula("F", "pi", "E", "Q_total", roofs), pred.t_floor_s, Unit.seconds)

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds)
    bound = "compute" if pred.t_compute_s >= pred.t_memory_s else "memory"
    return (f"flash attention is {bound}-bound here, {ridge_text(float(pred.ridge_ratio))} of the ridge",)


def _explain_decode(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, lens: np.ndarray,
                    page_size: int, dtype: DType, kv_dtype: DType, splits: int) -> tuple[str, ...]:
    cost = paged_decode(model, lens, page_size, dtype, kv_dtype, splits, gpu.num_sms)
    pred = predict(cost, roofs)
    attn = predict_kernel(cost.attention, roofs)
    d.given("B", lens.size, "sequences in the batch")
    d.given("sum_ctx", lens.sum(), "context tokens, summed over the batch")
    d.given("max_ctx", lens.max(), "the longest context")
    d.given("page", page_size, "tokens per KV page")
    d.given("n_pages", np.ceil(lens / page_size).sum(), "pages: sum of ceil(context / page) over the batch")
    d.given("b_kv", kv_dtype.bytes, f"bytes per KV-cache element ({kv_dtype.value})")
    d.given("n_sms", gpu.num_sms, "SMs")
    d.given("n_split", splits, "KV splits per sequence" + (" (1: one launch, no merge)" if splits == 1 else ""))

    d.section("HBM traffic of the attention launch (one layer)")
    d.step("Q_kv", "2 * h_kv * d * b_kv * sum_ctx", cost.kv_bytes, Unit.bytes,
           "K and V of every cached token, once per KV head (GQA)")
    d.step("Q_table", f"{INT32_BYTES} * (n_pages + B)", cost.block_table_bytes, Unit.bytes,
           "int32 block table and context lengths")
    out = "B * h * d * b" if splits == 1 else f"n_split * B * h * (d + 1) * {FP32_BYTES}"
    d.step("Q_attention", f"Q_kv + Q_table + B * h * d * b + {out}", cost.attention.hbm_bytes, Unit.bytes,
           "plus the query token and " + ("O" if splits == 1 else "the fp32 partial outputs and LSEs"))
    if cost.merge is not None:
        d.step("Q_merge", f"n_split * B * h * (d + 1) * {FP32_BYTES} + B * h * d * b", cost.merge.hbm_bytes, Unit.bytes,
               "the S-way merge reads the partials back and writes O")
        d.step("Q_total", "Q_attention + Q_merge", cost.hbm_bytes, Unit.bytes)
    else:
        d.step("Q_total", "Q_attention", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    d.step("F", "4 * h * d * sum_ctx", cost.flops, Unit.flop, "QK^T and PV for one query token per sequence")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_kv", "2 * h / (b_kv * h_kv)", cost.flops / cost.kv_bytes, Unit.intensity,
           "F over the KV bytes alone: fixed whatever the context or batch")
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds, "at full bandwidth")
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("longest", "min(ceil(ceil(max_ctx / page) / n_split) * page, max_ctx)",
           float(np.minimum(np.ceil(np.ceil(lens.max() / page_size) / splits) * page_size, lens.max())), Unit.count,
           "tokens of the longest work unit (one sequence x KV head x split)", "tokens")
    d.step("f", "min(1, h_kv * sum_ctx / (longest * n_sms))", cost.parallel_fraction, Unit.fraction,
           "share of the bandwidth the launch reaches: one work unit streams at most beta / n_sms")
    d.given("E", float(cost.attention.exp_ops), "exps, one per (query head, cached token)",
            number(cost.attention.exp_ops))
    t_attn = d.step("t_attention", _floor_formula("F", "pi", "E", "Q_attention", roofs, "f"), attn.t_floor_s,
                    Unit.seconds)
    if cost.merge is not None:
        merge = predict_kernel(cost.merge.kernel, roofs)
        d.given("pi_vec", roofs.vector_flop_per_s, "FLOP/s, fp32 vector rate: the merge's FLOPs run there")
        d.step("F_merge", "B * h * (n_split * (2 * d + 3) + d)", cost.merge.flops, Unit.flop,
               "on the fp32 vector units")
        d.given("E_merge", float(cost.merge.kernel.exp_ops), "exps of the merge, one per (row, split)")
        d.step("t_merge", _floor_formula("F_merge", "pi_vec", "E_merge", "Q_merge", roofs), merge.t_floor_s,
               Unit.seconds)
        d.step("t_floor", "t_attention + t_merge", pred.t_floor_s, Unit.seconds)
    else:
        d.step("t_floor", "t_attention", pred.t_floor_s, Unit.seconds)

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds, "attention of one decode step")
    best = recommend_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype)
    return (f"{int(cost.work_units)} work units for {gpu.num_sms} SMs reach {float(cost.parallel_fraction):.0%} of "
            f"the bandwidth; rooflab recommends {best} split(s) here (attention {fmt_seconds(t_attn)} per layer)",)


def _explain_merge(d: _Derivation, model: ModelSpec, roofs: Ceilings, tokens: int, dtype: DType) -> tuple[str, ...]:
    cost = merge_pair(tokens, model.num_qo_heads, model.head_dim, dtype)
    kernel = predict_kernel(cost.kernel, roofs)
    d.given("N_tok", tokens, "tokens whose two partial states (O, LSE) are merged")

    d.section("HBM traffic (per (token, head) row, then in all)")
    d.step("row_bytes", f"2 * d * b + 2 * {FP32_BYTES} + d * b", float(cost.hbm_bytes) / (tokens * model.num_qo_heads),
           Unit.bytes, "read O_a, O_b and two fp32 LSEs, write O")
    d.step("Q_total", "N_tok * h * row_bytes", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    d.step("row_flops", "3 * d + 6", float(cost.flops) / (tokens * model.num_qo_heads), Unit.flop,
           "two scales times two vectors and an add; max, two subtracts, a sum, two divides")
    d.step("F", "N_tok * h * row_flops", cost.flops, Unit.flop)
    d.step("I", "F / Q_total", kernel.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star_vec", "pi_vec / beta", roofs.vector_flop_per_s / roofs.bandwidth_bytes_per_s, Unit.intensity,
           "the ridge of the vector roof")
    d.step("ratio", "I / I_star_vec", kernel.intensity_flop_per_byte * roofs.bandwidth_bytes_per_s
           / roofs.vector_flop_per_s, Unit.ridge)

    d.section("Time floors")
    d.given("E", float(cost.kernel.exp_ops), "exps, two per row")
    d.step("t_memory", "Q_total / beta", kernel.t_memory_s, Unit.seconds)
    d.step("t_floor", _floor_formula("F", "pi_vec", "E", "Q_total", roofs), kernel.t_floor_s, Unit.seconds)
    return ("the merge is about as memory-bound as a kernel can be; it pays because it runs once per split, "
            "not once per key",)


def explain(variant: Variant, model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
            dtype: DType = DType.fp16, causal: bool = False, context_lens: Sequence[int] = (),
            page_size: int = 16, kv_dtype: Optional[DType] = None, splits: Optional[int] = None,
            ceilings: CeilingSource = CeilingSource.datasheet) -> Explanation:
    """The derivation of every figure rooflab reports for `variant` on this workload."""
    if variant not in EXPLAINED:
        raise InputError(f"explain covers {', '.join(v.value for v in EXPLAINED)}; not {variant.value}")
    roofs = Ceilings.of(gpu, dtype, ceilings)
    kv_dtype = kv_dtype or dtype
    d = _Derivation({})
    vector = variant in (Variant.naive, Variant.merge)
    if variant in (Variant.naive, Variant.flash):
        d.given("B", batch, "sequences in the batch")
        d.given("T", seq_len, "tokens per sequence (prefill)")
    _heads_and_roofs(d, model, gpu, roofs, dtype, vector)
    workload = f"T = {seq_len:,}, batch {batch}, {dtype.value}, {'causal' if causal else 'non-causal'}"
    if variant is Variant.naive:
        tail = _explain_naive(d, model, gpu, roofs, seq_len, batch, dtype, causal)
    elif variant is Variant.flash:
        tail = _explain_flash(d, model, gpu, roofs, seq_len, batch, dtype, causal)
    elif variant is Variant.merge:
        tail = _explain_merge(d, model, roofs, seq_len * batch, dtype)
        workload = f"{seq_len * batch:,} tokens x {model.num_qo_heads} heads, {dtype.value}"
    else:
        lens = context_lengths(list(context_lens) or [8192] * batch)
        if variant is Variant.paged:
            if splits not in (None, 1):
                raise InputError("--splits applies to --variant split_kv; paged decode is one launch")
            chosen = 1
        else:
            chosen = check_splits(splits) if splits is not None else \
                max(2, recommend_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype))
        tail = _explain_decode(d, model, gpu, roofs, lens, page_size, dtype, kv_dtype, chosen)
        kv = f", KV cache {kv_dtype.value}" if kv_dtype != dtype else ""
        workload = (f"decode step, {lens.size} sequence{'s' if lens.size > 1 else ''}, context {int(lens.max()):,}"
                    f"{' (longest)' if np.ptp(lens) else ''}, {dtype.value}{kv}, page size {page_size}"
                    + (f", {chosen} splits" if chosen > 1 else ""))
    title = (f"{variant.value} attention, {model.display_name} on {gpu.display_name}: {workload}, "
             f"{roofs.source.value} ceilings")
    return Explanation(title, tuple(d.legend), d.finish(), tail)


# --- rendering ----------------------------------------------------------------------------------

def render_explanation(e: Explanation, markdown: bool = False) -> str:
    """Plain text (one line per figure, its meaning below it) or markdown (a table per section)."""
    return _markdown(e) if markdown else _text(e)


def _text(e: Explanation) -> str:
    out = [e.title, "", "Symbols"]
    width = max(len(s) for s, _, _ in e.symbols)
    vwidth = max(len(v) for _, v, _ in e.symbols)
    out += [f"  {s.ljust(width)} = {v.ljust(vwidth)}  {m}" for s, v, m in e.symbols]
    for i, section in enumerate(e.sections, start=1):
        out += ["", f"{i}. {section.title}"]
        qwidth = max(len(st.quantity) for st in section.steps)
        for st in section.steps:
            parts = [st.quantity.ljust(qwidth), st.formula]
            if st.substituted != st.formula and not _NAME.fullmatch(st.formula):
                parts.append(st.substituted)
            parts.append(st.result)
            out.append("  " + " = ".join(parts))
            if st.note:
                out.append(f"  {' ' * qwidth}   ({st.note})")
    if e.conclusion:
        out += [""] + list(e.conclusion)
    return "\n".join(out) + "\n"


def _markdown(e: Explanation) -> str:
    out = [f"## {e.title}", "", "| symbol | value | meaning |", "|---|---:|---|"]
    out += [f"| `{s}` | {v} | {m} |" for s, v, m in e.symbols]
    for i, section in enumerate(e.sections, start=1):
        out += ["", f"### {i}. {section.title}", "", "| quantity | formula | with numbers | result | note |",
                "|---|---|---|---:|---|"]
        for st in section.steps:
            out.append(f"| `{st.quantity}` | `{st.formula}` | `{st.substituted}` | {st.result} | {st.note} |")
    if e.conclusion:
        out += [""] + [f"- {line}" for line in e.conclusion]
    return "\n".join(out) + "\n"
