"""`rooflab explain --phase step`: where each figure of the whole-model step comes from, row by row.

One path: every figure shown is a row of rooflab.step.step_report (or the report's own totals); nothing here prices a
launch. What explain adds is the working beside each figure, checked against it (ExplainMismatch on a disagreement,
as in every derivation):

    FLOPs and bytes   the GEMM rows' F = 2 m n k and Q = W + m (k + n) b over the model's shapes (rooflab.cost.gemm);
                      attention and the draft as their rows give them (one layer's derivation: --variant paged,
                      split_kv or flash); a collective's bus bytes
    floors            t_compute = F / pi, t_memory = Q / beta at the roof the row's launches ran against (named by
                      which of the GPU's roofs F / t_compute is), a collective's C / beta_link; the row's floor the
                      sum of its launches' max(...), the bound the largest
    predictions       the row's fit (source, implementation, provenance: measured on this GPU or transferred, with the
                      report's error band); the small kernels as n x t(m) from the GPU's measured launch times
    the step          t_floor = M x max(sum compute, sum memory, sum communication) (everything overlapped, M micro-
                      batches), t_predicted = stage times x sum of the rows' predictions, per output token / tokens a
                      step
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..comm import interconnect_of
from ..deployment import Deployment
from ..errors import InputError, shown
from ..floors import Ceilings
from ..specs import GpuSpec, ModelSpec
from ..step import (FUSED_SMALL_OPS, LAYER_SMALL_OPS, StepReport, engine_kernels, small_op_time,
                    step_report)
from ..step.gemms import lm_head_ways
from ..step.pricing import StepContext
from ..step.rows import StepRow
from ..step.sampler import SAMPLING_VARIANT, sampler_time
from ..units import DType
from ..vocab import Pipe
from .derivation import Explanation, Step, Unit, _Derivation

#: The single-m GEMM rows: label prefix -> (weight component, which rows go through them).
_GEMM_ROWS = {"attention projections": ("attention", "tokens"), "MLP (gate/up": ("dense_mlp", "gathered"),
              "shared experts": ("shared_experts", "gathered"), "logits (lm_head": ("lm_head", "logits")}


@dataclass(frozen=True)
class StepExplanation:
    """The derivation of a step (Explanation) and the StepReport whose rows and totals it shows."""

    explanation: Explanation
    report: StepReport

    def to_dict(self) -> dict:
        """JSON: the derivation's symbols, sections and steps, then the report's rows and totals (strict JSON: the
        values are finite or null)."""
        e, r = self.explanation, self.report
        return {"phase": "step", "title": e.title,
                "symbols": [{"symbol": s, "value": v, "meaning": m} for s, v, m in e.symbols],
                "sections": [{"title": s.title, "steps": [
                    {"quantity": st.quantity, "formula": st.formula, "substituted": st.substituted,
                     "value": st.value, "unit": st.unit.value, "result": st.result, "note": st.note}
                    for st in s.steps]} for s in e.sections],
                "conclusion": list(e.conclusion),
                "rows": [{"label": x.label, "variant": x.variant, "bound": x.bound, "t_floor_s": x.t_floor_s,
                          "t_predicted_s": x.t_predicted_s, "source": x.source, "predicted_impl": x.predicted_impl,
                          "predicted_from": x.predicted_from} for x in r.rows],
                "t_floor_s": r.t_floor_s, "t_floor_serial_s": r.t_floor_serial_s, "t_predicted_s": r.t_predicted_s,
                "t_per_output_token_s": r.t_per_output_token_s, "notes": list(r.notes)}


@dataclass(frozen=True)
class _Tokens:
    """The rows one GPU's GEMMs see, as step_report hands them to the step's rows (StepWork)."""

    tokens: int                  # a data rank's rows through the layers' GEMMs (one micro-batch, its PCP share)
    gathered: int                # the TP group's gathered rows (dense MLP and shared experts under attention DP)
    logits: int                  # rows the lm_head scores
    sampled: int = 0             # rows the sampler picks a token for (the step's logit rows, before the vocab split)


def _tokens(r: StepReport, ctx: StepContext) -> _Tokens:
    dep = ctx.dep
    per_micro = math.ceil(math.ceil(r.batch / dep.data_ranks) / r.micro_batches)
    if r.step == "decode":
        tokens, logits = per_micro * r.q_len + r.prefill_tokens, per_micro * r.q_len + (1 if r.prefill_tokens else 0)
    else:
        tokens, logits = per_micro * r.context_len, per_micro
    tokens = math.ceil(tokens / dep.prefill_context_parallel)
    return _Tokens(tokens, tokens * dep.attention_data_parallel,
                   logits * lm_head_ways(ctx) // dep.attention_tensor_parallel, logits)


def explain_step(model: ModelSpec, gpu: GpuSpec, batch: int = 1, context_len: int = 8192, step: str = "decode",
                 deployment: Optional[Deployment] = None, prefill_tokens: int = 0, expert_imbalance: float = 1.0,
                 micro_batches: Optional[int] = None, engine: Optional[str] = None,
                 engine_version: Optional[str] = None) -> StepExplanation:
    """The working of rooflab.step.step_report for the same arguments: each row's FLOPs, bytes, floors and
    prediction, then the step's floor and prediction (the module docstring); `engine` / `engine_version`: the
    kernels that engine runs (rooflab.step.engine_kernels), as step_report takes them."""
    deployment = Deployment() if deployment is None else deployment
    if not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    r = step_report(model, gpu, batch, context_len, step, deployment=deployment, prefill_tokens=prefill_tokens,
                    expert_imbalance=expert_imbalance, micro_batches=micro_batches, engine=engine,
                    engine_version=engine_version)
    kernels = engine_kernels(model, gpu, deployment, engine, engine_version)
    ctx = kernels.context(model, gpu, deployment, expert_imbalance, graphs=r.cuda_graph)   # the report's timing
    d = _Derivation({})
    _shared_symbols(d, r, ctx)
    toks = _tokens(r, ctx)
    for i, row in enumerate(r.rows, start=1):
        d.section(f"{row.label}")
        if not row.is_communication:
            _work(d, i, row, ctx, toks, r.pipeline_parallel)
            _floors(d, i, row, ctx)
        else:
            _link(d, i, row, gpu, r.gpus)
        _prediction(d, i, row, ctx, toks, r)
    conclusion = _totals(d, r)
    where = f"{r.gpus} x {gpu.display_name} ({deployment.describe().rsplit(' (', 1)[0]})" if r.gpus > 1 else \
        gpu.display_name
    what = "decode step" if r.step == "decode" else "prefill"
    title = (f"{model.display_name} on {where}: {what}, batch {r.batch:,} x context {r.context_len:,}, {r.dtype}; "
             f"one GPU, whole step (all layers)")
    return StepExplanation(Explanation(title, tuple(d.legend), d.finish(), tuple(conclusion)), r)


def _shared_symbols(d: _Derivation, r: StepReport, ctx: StepContext) -> None:
    model = ctx.model
    d.given("H", model.hidden_size, f"hidden size ({model.display_name})")
    d.given("beta", Ceilings.of(ctx.gpu, ctx.dtype).bandwidth_bytes_per_s, "B/s, HBM bandwidth (datasheet)")
    if r.stage_slots != 1 or r.micro_batches != 1:
        d.given("M", r.micro_batches, "micro-batches a GPU computes a step (pipeline)")
        d.given("S", r.stage_slots, "stage times a step takes: max(M, PP) decode, M + PP - 1 prefill")


def _given_row(d: _Derivation, name: str, field: str, value: float, unit: Unit, note: str) -> None:
    """A figure as the row gives it, its formula the StepRow field it is (`row.flops`): no working of its own here."""
    d.symbols[name] = float(value)
    d._steps.append(Step(name, f"row.{field}", f"row.{field}", float(value), unit, note))


def _work(d: _Derivation, i: int, row: StepRow, ctx: StepContext, toks: _Tokens, pp: int) -> None:
    """F and Q: the GEMM rows' formulas over the model's shapes, the others as the row gives them."""
    F, Q, W = f"F{i}", f"Q{i}", f"W{i}"
    gemm = next((v for k, v in _GEMM_ROWS.items() if row.label.startswith(k)), None)
    moe = row.label.startswith("MoE (")
    if gemm and gemm[0] == "attention" and any(layer.is_latent for _, layer, _ in ctx.model.layer_walk()):
        note = ("MLA's projections, each GEMM at its own rows and widths (rooflab.step.gemms._mla_projections: q_a and "
                "kv_a whole on every rank, q_b and o over the rank's heads, kv_b absorbed for decode rows, a GEMM "
                "for prefill rows): the row's sum")
        _given_row(d, W, "weight_bytes", row.weight_bytes, Unit.bytes, "weight bytes read once a step (the row's)")
        _given_row(d, F, "flops", row.flops, Unit.flop, note)
        _given_row(d, Q, "hbm_bytes", row.hbm_bytes, Unit.bytes, note)
        return
    if pp > 1 or not (gemm or moe):
        layers = f" over {row.num_layers} layers" if row.num_layers else ""
        note = {"draft": "the draft's own rows summed, k times"}.get(row.variant, f"the row's launches{layers}")
        if row.layer_type:
            note += f"; one layer's working: rooflab explain --variant {row.variant} --layer-type {row.layer_type}"
        _given_row(d, F, "flops", row.flops, Unit.flop, note)
        _given_row(d, Q, "hbm_bytes", row.hbm_bytes, Unit.bytes, note)
        return
    _given_row(d, W, "weight_bytes", row.weight_bytes, Unit.bytes, "weight bytes read once a step (the row's)")
    if moe:
        _moe_work(d, i, row, ctx, toks)
        return
    component, rows = gemm
    m, b_w, b = f"m{i}", f"bw{i}", f"b{i}"
    arith = ctx.dtype if component == "lm_head" else ctx.arithmetic(component)
    d.given(m, getattr(toks, rows), {"tokens": "rows through the layers' GEMMs (decodes x query tokens + chunk)",
                                     "gathered": "rows through the MLP (the TP group's gathered tokens)",
                                     "logits": "rows the lm_head scores"}[rows])
    d.given(b_w, ctx.bits(component) / 8, f"bytes a weight ({component}: "
                                          f"{ctx.model.weight_format(component, ctx.weights_as).value})")
    d.given(b, arith.bytes, f"bytes an activation ({arith.value} GEMM)")
    d.step(F, f"2 * {m} * {W} / {b_w}", row.flops, Unit.flop, "2 m n k: two FLOPs a weight a row")
    kn = f"kn{i}"                              # sum over the row's GEMMs of (k + n): each row's input and output
    model = ctx.model
    if component == "lm_head":
        d.given("V", model.vocab_size, "vocabulary")
        ways = lm_head_ways(ctx)
        d.given("TP_v", ways, "GPUs the vocabulary is split over (attention TP; TP under attention DP)")
        d.step(kn, "H + ceil(V / TP_v)", model.hidden_size + math.ceil(model.vocab_size / ways), Unit.count)
    elif component == "dense_mlp" or component == "shared_experts":
        dense = component == "dense_mlp"
        width = (model.dense_ffn_size or model.ffn_size) // ctx.dep.tensor_parallel if dense else \
            model.num_shared_experts * (model.shared_expert_ffn_size or model.ffn_size) // ctx.dep.tensor_parallel
        n_layers = model.num_dense_layers if dense else model.num_moe_layers
        d.given(f"w{i}", width, "the GPU's MLP width (gate/up [2w, H], down [H, w])")
        d.given(f"L{i}", n_layers, "layers")
        d.step(kn, f"L{i} * (2 * H + 3 * w{i})", n_layers * (2 * model.hidden_size + 3 * width), Unit.count)
    else:
        _given_row(d, f"A{i}", "hbm_bytes - row.weight_bytes", row.hbm_bytes - row.weight_bytes, Unit.bytes,
                   "activation bytes of the QKV and O GEMMs of every layer type (the row's)")
        d.step(Q, f"{W} + A{i}", row.hbm_bytes, Unit.bytes)
        return
    d.step(Q, f"{W} + {m} * {kn} * {b}", row.hbm_bytes, Unit.bytes, "W + m (k + n) b: weights, rows in and out")


def _moe_work(d: _Derivation, i: int, row: StepRow, ctx: StepContext, toks: _Tokens) -> None:
    """The router over the rank's tokens and this GPU's experts at the token-expert pairs they receive; where the
    routing fuses the shared experts (Routing.fuses_shared_expert: SGLang 0.5.x at EP 1, rooflab.step.routing),
    they are s more experts every routed token picks, s M more pairs (step.gemms._experts), and no row of their
    own."""
    model, dep, a = ctx.model, ctx.dep, ctx.arithmetic("experts")
    group = toks.tokens * dep.data_ranks
    shared = model.num_shared_experts if ctx.routing.fuses_shared_expert else 0
    pairs = math.ceil(ctx.imbalance * group * model.num_experts_per_token / dep.expert_parallel) + shared * group
    d.given(f"m{i}", toks.tokens, "the rank's rows through the router")
    fused = (f" + s M, the {shared} shared expert(s) fused as more experts every token picks "
             f"({ctx.routing.value})" if shared else "")
    d.given(f"p{i}", pairs, f"token-expert pairs this GPU's experts receive: ceil(f x M k / EP){fused}, f "
                            f"{ctx.imbalance:g}, k {model.num_experts_per_token}, EP {dep.expert_parallel}")
    d.given("E", model.num_experts, "routed experts")
    d.given(f"we{i}", model.ffn_size // dep.expert_tensor_parallel, "an expert's width on this GPU")
    d.given(f"L{i}", model.num_moe_layers, "MoE layers")
    d.given(f"br{i}", ctx.dtype.bytes, f"bytes an activation of the router ({ctx.dtype.value})")
    d.given(f"be{i}", a.bytes, f"bytes an activation of the experts ({a.value} GEMM)")
    d.step(f"F{i}", f"L{i} * (2 * m{i} * E * H + 2 * p{i} * 3 * we{i} * H)", row.flops, Unit.flop,
           "router [E, H] over the rows, gate/up [2 w, H] and down [H, w] over the pairs")
    d.step(f"Q{i}", f"W{i} + L{i} * (m{i} * (H + E) * br{i} + p{i} * (2 * H + 3 * we{i}) * be{i})", row.hbm_bytes,
           Unit.bytes, "weights of the touched experts once, rows in and out")


def _roof(row: StepRow, ctx: StepContext) -> Optional[tuple[float, str]]:
    """The GPU's roof the row's FLOPs ran against: the one F / t_compute is (None: its launches ran on several)."""
    dtypes = dict.fromkeys([ctx.dtype] + [ctx.arithmetic(c) for c in ("attention", "dense_mlp", "experts")])
    for dtype in dtypes:
        roofs = Ceilings.of(ctx.gpu, dtype)
        for pipe in Pipe:
            rate = roofs.rate(pipe)
            if rate and math.isclose(row.flops / rate, row.t_compute_s, rel_tol=1e-9):
                return rate, f"FLOP/s, {pipe.value} {dtype.value} rate ({ctx.gpu.display_name}, datasheet)"
    return None


def _floors(d: _Derivation, i: int, row: StepRow, ctx: StepContext) -> None:
    roof = _roof(row, ctx) if row.flops else None
    if roof is not None:
        d.given(f"pi{i}", roof[0], roof[1])
        d.step(f"tc{i}", f"F{i} / pi{i}", row.t_compute_s, Unit.seconds)
    else:
        _given_row(d, f"tc{i}", "t_compute_s", row.t_compute_s, Unit.seconds,
                   "each launch's FLOPs over its pipe's rate, summed")
    if row.t_exp_s:
        _given_row(d, f"te{i}", "t_exp_s", row.t_exp_s, Unit.seconds, "the exps over the exp roof")
    if math.isclose(row.hbm_bytes / d.symbols["beta"], row.t_memory_s, rel_tol=1e-9):
        d.step(f"tm{i}", f"Q{i} / beta", row.t_memory_s, Unit.seconds)
    else:                                       # ring attention: its row carries the ring's floor as memory time
        _given_row(d, f"tm{i}", "t_memory_s", row.t_memory_s, Unit.seconds,
                   "not Q / beta: the row's own (ring attention: the ring's floor, the KV passes overlapped)")
    whole = f"max(tc{i}, te{i}, tm{i})" if row.t_exp_s else f"max(tc{i}, tm{i})"
    if math.isclose(max(row.t_compute_s, row.t_exp_s, row.t_memory_s), row.t_floor_s, rel_tol=1e-9):
        d.step(f"tf{i}", whole, row.t_floor_s, Unit.seconds, f"{row.bound} binds")
    else:
        _given_row(d, f"tf{i}", "t_floor_s", row.t_floor_s, Unit.seconds,
                   f"each launch's max(compute, exp, memory), summed: above {whole}; {row.bound} binds the most")


def _link(d: _Derivation, i: int, row: StepRow, gpu: GpuSpec, gpus: int) -> None:
    """A collective's floor: its bus bytes at the link's datasheet bandwidth."""
    _given_row(d, f"C{i}", "comm_bytes", row.comm_bytes, Unit.bytes, f"bus bytes over {row.calls:,} calls (the row's)")
    link = interconnect_of(gpu)
    world = next((w for w in range(2, max(gpus, 2) + 1) if row.t_floor_s and
                  math.isclose(row.comm_bytes / link.link_for(w), row.t_floor_s, rel_tol=1e-9)), None)
    if world is None:
        _given_row(d, f"tf{i}", "t_floor_s", row.t_floor_s, Unit.seconds, "the link's floor")
        return
    rate = f"beta_link{'' if link.link_for(world) == link.link_for(2) else f'_{world}'}"
    d.given(rate, link.link_for(world), "B/s, the link's datasheet bandwidth" + (
        "" if rate == "beta_link" else f" over {world} GPUs"))
    d.step(f"tf{i}", f"C{i} / {rate}", row.t_floor_s, Unit.seconds, "communication binds")


def _prediction(d: _Derivation, i: int, row: StepRow, ctx: StepContext, toks: _Tokens, r: StepReport) -> None:
    name = f"tp{i}"
    if row.t_predicted_s is None:
        d.symbols[name] = math.nan
        return
    where = row.predicted_from or "no provenance"
    band = [n.split(": ", 1)[1] for n in r.notes if n.startswith(f"t_predicted {row.predicted_impl} ")]
    note = f"{row.source}; {row.predicted_impl}, {where}" + (f"; {band[0]}" if band else "")
    if row.variant == SAMPLING_VARIANT:
        _sampling(d, i, row, ctx, toks.sampled, note)
        return
    if row.variant == "elementwise" and r.pipeline_parallel == 1 and ctx.pricer.launches.times is not None:
        _small_ops(d, i, row, ctx, toks.tokens, note)
        return
    _given_row(d, name, "t_predicted_s", row.t_predicted_s, Unit.seconds, note)


def _small_ops(d: _Derivation, i: int, row: StepRow, ctx: StepContext, tokens: int, note: str) -> None:
    """The small kernels as counts x their measured launch times at the rank's rows (rooflab.step.small_op_time)."""
    model, eager = ctx.model, not ctx.graphs
    ffn = (model.dense_ffn_size or model.ffn_size) // ctx.dep.tensor_parallel
    gpu = ctx.gpu
    bw = gpu.measured.copy_bytes_per_s if gpu.measured else gpu.hbm_bandwidth_bytes_per_s
    ops = dict(FUSED_SMALL_OPS if ctx.dep.fused else LAYER_SMALL_OPS)
    ops["rms_norm"] = ops["rms_norm"] * model.num_layers + 1                     # and the final norm
    terms = []
    for op, per_layer in ops.items():
        n = per_layer if op == "rms_norm" else per_layer * model.num_layers
        t = small_op_time(op, tokens, model.hidden_size, ffn, bw, eager, ctx.pricer.launches.times)
        d.given(f"n_{op}", n, f"{op} launches a step")
        d.given(f"t_{op}", t, f"s, one {op} at {tokens:,} rows, {'eager' if eager else 'in a CUDA graph'} "
                              f"({ctx.pricer.launches.measured_on}'s measured.launch)")
        terms.append(f"n_{op} * t_{op}")
    d.step(f"tp{i}", " + ".join(terms), row.t_predicted_s, Unit.seconds, note)


def _sampling(d: _Derivation, i: int, row: StepRow, ctx: StepContext, rows: int, note: str) -> None:
    """The sampler after the graph as the sum of its measured sequences at the step's logit rows
    (rooflab.step.sampler.sampler_time), eager where the step runs eagerly (StepReport.cuda_graph)."""
    launches = ctx.pricer.launches.times
    t = sampler_time(ctx.sampler, ctx.gpu, rows, ctx.model.vocab_size, not ctx.graphs,
                     launches.eager_host_s if launches else None)
    terms = []
    for seq, timing, seconds in t.parts:
        d.given(f"t_{seq.value}", seconds, f"s, {seq.value} at {rows:,} x {ctx.model.vocab_size:,} logits, "
                                           f"{timing.value} (measurements/launch/h200-sampler.csv)")
        terms.append(f"t_{seq.value}")
    d.step(f"tp{i}", " + ".join(terms), row.t_predicted_s, Unit.seconds, note)


def _totals(d: _Derivation, r: StepReport) -> list[str]:
    """The step's floor (everything overlapped) and serial floor, its prediction and time per output token."""
    d.section("the step: everything overlapped (floor), launch after launch (prediction)")
    idx = range(1, len(r.rows) + 1)
    work = [i for i, x in zip(idx, r.rows) if not x.is_communication]
    link = [i for i, x in zip(idx, r.rows) if x.is_communication]
    tc = [f"max(tc{i}, te{i})" if f"te{i}" in d.symbols else f"tc{i}" for i in work]
    sums = {"T_compute": (" + ".join(tc) or "0",
                          sum(max(x.t_compute_s, x.t_exp_s) for x in r.rows if not x.is_communication)),
            "T_memory": (" + ".join(f"tm{i}" for i in work) or "0",
                         sum(x.t_memory_s for x in r.rows if not x.is_communication)),
            "T_comm": (" + ".join(f"tf{i}" for i in link) or "0",
                       sum(x.t_floor_s for x in r.rows if x.is_communication))}
    for name, (formula, value) in sums.items():
        d.step(name, formula, value, Unit.seconds)
    m = "M * " if "M" in d.symbols else ""
    d.step("t_floor", f"{m}max(T_compute, T_memory, T_comm)", r.t_floor_s, Unit.seconds,
           "the step's floor: compute, memory and communication overlapped")
    d.step("t_floor_serial", m + "(" + " + ".join(f"tf{i}" for i in idx) + ")", r.t_floor_serial_s, Unit.seconds,
           "each row at its own floor, one after another")
    out = []
    if r.t_predicted_s is not None:
        s = "S * " if "S" in d.symbols else ""
        d.step("t_predicted", s + "(" + " + ".join(f"tp{i}" for i in idx) + ")", r.t_predicted_s, Unit.seconds,
               "the rows' predictions, launch after launch")
        if r.tokens_per_step != 1:
            d.given("tokens", r.tokens_per_step, "tokens a sequence gains a step: (1 - a^(k+1)) / (1 - a)")
            d.step("t_per_token", "t_predicted / tokens", r.t_per_output_token_s, Unit.seconds)
        out.append(f"t_predicted / t_floor = {r.t_predicted_s / r.t_floor_s:.2f}")
    else:
        out.append("no prediction for the step: " + "; ".join(n for n in r.notes if n.startswith("no prediction")))
    return out + list(r.notes)


__all__ = ["StepExplanation", "explain_step"]
