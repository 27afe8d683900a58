"""Measured whole decode steps (benchmarks/step_device_run.py) against rooflab's step model, per component.

    python benchmarks/step_compare.py measurements/h200-step-llama-3-8b.csv measurements/h200-step-qwen3-30b-a3b.csv

For every decode_step row: rooflab.step.step_report for the file's model on the H200 at the row's batch and
context, as the measured layer runs (Deployment(fused_elementwise=False), page 16, the row's dtype, CUDA graphs for
impl torch_graph and eager for torch_eager; memory not checked). Per component: the eager instrumented step's
seconds (the file's components_<context>x<batch> metadata) against the step model's rows, eager and graph.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: rooflab.step's row labels -> the measured components (rooflab.bench.step_bench.COMPONENTS).
def component_of(row) -> str:
    if row.label.startswith("attention projections"):
        return "projections"
    if row.label.startswith("attention"):
        return "attention"
    if row.label.startswith(("MLP", "MoE", "shared experts")):
        return "mlp"
    if row.label.startswith("logits"):
        return "logits"
    return "elementwise"


def predicted(model, gpu, batch: int, context: int, dtype: str, graphs: bool):
    from rooflab.deployment import Deployment
    from rooflab.step import step_report
    from rooflab.units import DType

    dep = Deployment(fused_elementwise=False, cuda_graphs=graphs, dtype=DType.of(dtype, "dtype"), page_size=16)
    report = step_report(model, gpu, batch=batch, context_len=context, deployment=dep, check_memory=False)
    parts: dict = {}
    for row in report.rows:
        parts[component_of(row)] = parts.get(component_of(row), 0.0) + (row.t_predicted_s or float("nan"))
    return report.t_predicted_s, parts


def compare_files(paths) -> str:
    from rooflab import load_gpu, load_model
    from rooflab.fit.records import read_measurements

    gpu = load_gpu("h200-sxm")
    steps = ["| model | batch | context | graph measured | predicted | error | eager measured | predicted | error |",
             "| --- | --: | --: | --: | --: | --: | --: | --: | --: |"]
    parts = ["| model | batch x context | component | eager measured | eager predicted | error | graph predicted |",
             "| --- | --- | --- | --: | --: | --: | --: |"]
    errors: dict = {}
    for path in paths:
        meta, rows = read_measurements(Path(path))
        if meta.get("gpu_spec") != "h200-sxm":
            continue
        model = load_model(meta["model"])
        cases: dict = {}
        for m in rows:
            b, c = m.batch, int(m.context_lens.split("x")[0])
            cases.setdefault((b, c), {})[m.impl] = m
        for (b, c), by in sorted(cases.items()):
            cells = []
            for impl, graphs in (("torch_graph", True), ("torch_eager", False)):
                m = by.get(impl)
                if m is None:
                    cells += ["-", "-", "-"]
                    continue
                t_pred, _ = predicted(model, gpu, b, c, m.dtype, graphs)
                err = t_pred / m.time_s - 1
                errors.setdefault((meta["model"], impl), []).append(abs(err))
                cells += [f"{m.time_s * 1e3:.3f} ms", f"{t_pred * 1e3:.3f} ms", f"{err:+.1%}"]
            steps.append(f"| {meta['model']} | {b} | {c:,} | " + " | ".join(cells) + " |")
            measured = meta.get(f"components_{c}x{b}")
            if measured is None or "torch_eager" not in by:
                continue
            measured = json.loads(measured)
            _, eager = predicted(model, gpu, b, c, by["torch_eager"].dtype, False)
            _, graph = predicted(model, gpu, b, c, by["torch_eager"].dtype, True)
            for name in ("projections", "attention", "mlp", "moe_routing", "elementwise", "logits", "total"):
                got = measured.get(name, 0.0)
                if name == "moe_routing" and not got:
                    continue
                want = sum(eager.values()) if name == "total" else eager.get(name)
                gr = sum(graph.values()) if name == "total" else graph.get(name)
                err = f"{want / got - 1:+.1%}" if want and got else "(not modelled)"
                parts.append(f"| {meta['model']} | {b} x {c:,} | {name} | {got * 1e3:.3f} ms | "
                             + (f"{want * 1e3:.3f} ms" if want else "-") + f" | {err} | "
                             + (f"{gr * 1e3:.3f} ms" if gr else "-") + " |")
    summary = [f"{model} {impl}: median {sorted(e)[len(e) // 2]:.1%}, worst {max(e):.1%} ({len(e)} rows)"
               for (model, impl), e in sorted(errors.items())]
    return "\n".join(steps + [""] + parts + [""] + summary)


if __name__ == "__main__":
    print(compare_files(sys.argv[1:]))
