"""The measured DeepSeek-V3 TP-8 rank step (benchmarks/step_deepseek_tp8_rank.py) against rooflab's step model.

    python benchmarks/step_deepseek_compare.py measurements/steps/h200-step-deepseek-v3-tp8-rank.csv

For every (batch, context) of the file: rooflab.step.step_report for deepseek-v3 on h200-sxm with
Deployment(tensor_parallel=8) (block fp8 as shipped, CUDA graphs; eager for the eager column), priced as vLLM 0.7.4's
kernels (engine_kernels: the fused block-fp8 MoE and the split MLA decode the measurement emulates), memory not
checked. The communication rows (the all-reduces and the logits all-gather) are left out of the predicted step that
is compared (the measurement runs on one GPU) and shown beside it, as rooflab's collective model prices them.

Per component: the measured graph_isolated seconds (that component's launches alone in one CUDA graph, all layers)
against the model's rows, by MODEL_ROW; the measured components no row prices (routing before f3e1849; quant and
align before 4cc689a) are listed as such. Since 4cc689a the model prices the activation quantisation and the MoE
align inside its GEMM rows: they are taken out of those rows and compared as "quant" and "align" (predicted).
gap = measured / predicted.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENGINE, ENGINE_VERSION = "vllm", "0.7.4"
#: the step model's row (label prefix) -> the measured components it prices (step_deepseek_tp8_rank.Component)
MODEL_ROW = {"attention projections": ("projections", "absorb"), "attention [mla]": ("attention",),
             "MLP (gate/up, down)": ("dense_mlp",), "MoE (": ("router_gemm", "experts"),
             "shared experts": ("shared_experts",), "norms and elementwise": ("norms_elementwise",),
             "logits (lm_head": ("logits",)}
UNPRICED = ("quant", "routing", "align")
#: the measured routing joins the MoE row where the step model prices it (rooflab.step.routing, from f3e1849: the
#: row's source then names "routing: grouped_topk")
ROUTING_IN_MOE = "routing: grouped_topk"


def read(path: Path) -> tuple[dict, list[dict]]:
    meta, lines = {}, []
    for line in open(path):
        if line.startswith("# "):
            key, _, value = line[2:].partition(": ")
            meta[key] = value.rstrip("\n")
        else:
            lines.append(line)
    return meta, list(csv.DictReader(lines))


def predicted(batch: int, context: int, graphs: bool) -> tuple[dict, float, bool]:
    """({model row prefix: seconds}, communication seconds, whether the MoE row prices the routing). The GEMM rows'
    small block-fp8 launches (rooflab.step.small_ops act_quant_time and moe_align_time, priced inside the
    projection, MLP and MoE rows since issue 29) are taken out of their rows and given as the pseudo-rows "quant" and
    "align", the measured components they price: each the rows' difference with that launch priced at zero."""
    from unittest import mock

    full, comm, routing = _predicted(batch, context, graphs)
    rows = dict(full)
    for name, target in (("quant", "act_quant_time"), ("align", "moe_align_time")):
        with mock.patch(f"rooflab.step.gemms.{target}", lambda *args: 0.0):
            without, _, _ = _predicted(batch, context, graphs)
        rows[name] = sum(full[k] - without[k] for k in full)
        for k in full:
            rows[k] -= full[k] - without[k]
    return rows, comm, routing


def _predicted(batch: int, context: int, graphs: bool) -> tuple[dict, float, bool]:
    from rooflab import load_gpu, load_model
    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    report = step_report(load_model("deepseek-v3"), load_gpu("h200-sxm"), batch=batch, context_len=context,
                         deployment=Deployment(tensor_parallel=8, cuda_graphs=graphs), engine=ENGINE,
                         engine_version=ENGINE_VERSION, check_memory=False)
    rows, comm, routing = {}, 0.0, False
    for row in report.rows:
        if row.is_communication:
            comm += row.t_predicted_s
            continue
        key = next((k for k in MODEL_ROW if row.label.startswith(k)), None)
        if key is None:
            raise ValueError(f"a step row this comparison does not map: {row.label!r}")
        rows[key] = rows.get(key, 0.0) + row.t_predicted_s
        routing |= key == "MoE (" and ROUTING_IN_MOE in row.source
    return rows, comm, routing


def compare(path: Path) -> str:
    meta, rows = read(path)
    cases: dict = {}
    for r in rows:
        key = (f"{r.get('dense_gemm') or 'triton_default'}:{r.get('align') or 'torch_ops'}", int(r["batch"]),
               int(r["context"]))
        cases.setdefault(key, {})[(r["timing"], r["component"])] = float(r["seconds"])
    steps = ["| dense GEMM:align | batch | context | graph measured | predicted, no comm | gap | + comm predicted | eager measured | "
             "eager predicted, no comm | isolated sum | unpriced (no row) |",
             "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |"]
    parts = ["| dense GEMM:align | batch x context | model row | measured (graph, isolated) | predicted (graph) | gap | eager instr. |",
             "| --- | --- | --- | --: | --: | --: | --: |"]
    for (gemm, b, c), got in sorted(cases.items()):
        pred, comm, routing = predicted(b, c, True)
        row_of = dict(MODEL_ROW)
        if routing:
            row_of["MoE ("] = row_of["MoE ("] + ("routing",)
        for n in ("quant", "align"):
            if pred.get(n):
                row_of[n] = (n,)
        unpriced_names = tuple(n for n in UNPRICED if not (routing and n == "routing") and not pred.get(n))
        pred_e, comm_e, _ = predicted(b, c, False)
        no_comm, no_comm_e = sum(pred.values()), sum(pred_e.values())
        g, e = got.get(("graph", "step")), got.get(("eager", "step"))
        iso = {k[1]: v for k, v in got.items() if k[0] == "graph_isolated"}
        ins = {k[1]: v for k, v in got.items() if k[0] == "eager_instrumented"}
        unpriced = sum(iso.get(n, 0.0) for n in unpriced_names)
        steps.append(f"| {gemm} | {b} | {c:,} | {_ms(g)} | {_ms(no_comm)} | {_gap(g, no_comm)} | {_ms(comm)} | {_ms(e)} | "
                     f"{_ms(no_comm_e)} | {_ms(sum(iso.values()))} | {_ms(unpriced)} |")
        for key, names in row_of.items():
            m = sum(iso.get(n, 0.0) for n in names)
            parts.append(f"| {gemm} | {b} x {c:,} | {key.rstrip(' (')} ({'+'.join(names)}) | {_ms(m)} | {_ms(pred.get(key))} "
                         f"| {_gap(m, pred.get(key))} | {_ms(sum(ins.get(n, 0.0) for n in names))} |")
        for n in unpriced_names:
            parts.append(f"| {gemm} | {b} x {c:,} | {n} (no row) | {_ms(iso.get(n))} | - | - | {_ms(ins.get(n))} |")
    checks = [f"{k}: {v}" for k, v in meta.items() if k.startswith(("check", "layers", "communication"))]
    return "\n".join(steps + [""] + parts + [""] + checks)


def _ms(s) -> str:
    return "-" if s is None else f"{s * 1e3:.3f} ms"


def _gap(measured, want) -> str:
    return "-" if not measured or not want else f"{measured / want:.2f}x"


if __name__ == "__main__":
    print(compare(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "measurements/steps/h200-step-deepseek-v3-tp8-rank.csv")))
