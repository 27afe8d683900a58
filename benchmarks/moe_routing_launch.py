"""DeepSeek-V3's expert routing (biased grouped top-k) as the engines ran it in early 2025, timed on one GPU.

The routing between a MoE layer's router GEMM and its expert GEMMs: sigmoid scores, the correction bias, each
expert group scored by its two best experts, the best `topk_group` groups kept, the best `top_k` experts of those,
their unbiased scores gathered and renormalised (DeepSeek-V3 technical report, section 2.1.2 and 2.1.3;
config.json: n_routed_experts 256, n_group 8, topk_group 4, num_experts_per_tok 8, norm_topk_prob true). Two ways:

    grouped_topk            the sequence as eager PyTorch ops, one kernel each: vLLM 0.7.3's grouped_topk with
                            e_score_correction_bias (vllm/model_executor/layers/fused_moe/fused_moe.py), which the
                            V0 engine runs as written
    grouped_topk_compiled   the same function under torch.compile(dynamic=True): SGLang 0.4.3.post2's
                            biased_grouped_topk is decorated so (sglang/srt/layers/moe/topk.py)

Each timed as benchmarks/eager_launch.py times the small kernels: `graph` N calls captured in one CUDA graph,
replayed, wall time / N; `eager` N calls issued back to back from Python, one synchronize, wall time / N. Medians
of 7 repeats of N = 200, at batch (tokens) 1, 8, 64 and 256. The routing's result is checked against a float64
loop over each token (the chosen experts' sets and weights).

    python benchmarks/moe_routing_launch.py --out DIR     # writes DIR/h200-moe-routing.csv
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess
import time
from pathlib import Path

EXPERTS, GROUPS, TOPK_GROUP, TOP_K = 256, 8, 4, 8
BATCHES = (1, 8, 64, 256)
CALLS, REPEATS = 200, 7


def grouped_topk(gating, bias, top_k: int = TOP_K, groups: int = GROUPS, topk_group: int = TOPK_GROUP):
    """(weights, ids) of each token's experts: the biased grouped top-k (the module docstring), one op a step."""
    import torch

    scores = gating.sigmoid()
    n = scores.shape[0]
    biased = scores + bias.unsqueeze(0)
    group_scores = biased.view(n, groups, -1).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(n, groups, scores.shape[-1] // groups).reshape(n, -1)
    masked = biased.masked_fill(~score_mask.bool(), float("-inf"))
    ids = torch.topk(masked, k=top_k, dim=-1, sorted=False)[1]
    weights = scores.gather(1, ids)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(torch.float32), ids.to(torch.int32)


def reference(gating, bias):
    """The same routing per token in float64 Python: {token: {expert: weight}}."""
    out = {}
    g = gating.double().cpu().tolist()
    b = bias.double().cpu().tolist()
    per = EXPERTS // GROUPS
    for t, row in enumerate(g):
        s = [1 / (1 + pow(2.718281828459045, -x)) for x in row]
        biased = [x + y for x, y in zip(s, b)]
        group_score = [sum(sorted(biased[i * per:(i + 1) * per])[-2:]) for i in range(GROUPS)]
        keep = sorted(range(GROUPS), key=lambda i: group_score[i])[-TOPK_GROUP:]
        pool = [e for i in keep for e in range(i * per, (i + 1) * per)]
        chosen = sorted(pool, key=lambda e: biased[e])[-TOP_K:]
        total = sum(s[e] for e in chosen)
        out[t] = {e: s[e] / total for e in chosen}
    return out


def check(fn, torch) -> float:
    """The largest weight error against `reference` at 16 tokens (the expert sets must match exactly)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    gating = torch.randn((16, EXPERTS), device="cuda", dtype=torch.bfloat16, generator=gen)
    bias = torch.randn((EXPERTS,), device="cuda", dtype=torch.float32, generator=gen) * 0.1
    weights, ids = fn(gating.float(), bias)
    ref = reference(gating.float(), bias)
    worst = 0.0
    for t, row in ref.items():
        got = dict(zip(ids[t].tolist(), weights[t].tolist()))
        if set(got) != set(row):
            raise SystemExit(f"token {t}: experts {sorted(got)} != reference {sorted(row)}")
        worst = max(worst, max(abs(got[e] - w) for e, w in row.items()))
    return worst


def timed(fn, torch) -> tuple[float, float]:
    """(eager, graph) seconds a call: medians of REPEATS of CALLS."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    eager = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
        eager.append((time.perf_counter() - t0) / CALLS)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    replays = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        replays.append((time.perf_counter() - t0) / CALLS)
    return statistics.median(eager), statistics.median(replays)


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    compiled = torch.compile(grouped_topk, dynamic=True)
    errors = {"grouped_topk": check(grouped_topk, torch), "grouped_topk_compiled": check(compiled, torch)}
    rows = []
    for b in BATCHES:
        gating = torch.randn((b, EXPERTS), device="cuda", dtype=torch.bfloat16)     # the router GEMM's output
        bias = (torch.randn((EXPERTS,), device="cuda") * 0.1).to(torch.bfloat16)   # a bf16 parameter in vLLM
        for name, fn in (("grouped_topk", grouped_topk), ("grouped_topk_compiled", compiled)):
            eager, graph = timed(lambda fn=fn: fn(gating, bias), torch)
            rows += [(name, b, "eager", eager), (name, b, "graph", graph)]
            print(f"{name:22s} b={b:4d}  eager {eager * 1e6:7.2f} us  graph {graph * 1e6:7.2f} us", flush=True)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parents[1]).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    clocks = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": commit, "calls": CALLS, "repeats": REPEATS,
            "clocks_sm_mem_max_at_end": clocks,
            "routing": f"E {EXPERTS}, {GROUPS} groups, top {TOPK_GROUP} groups, top {TOP_K} experts, bf16 gating and bias (checked in float32)",
            "max_weight_error_vs_float64": ", ".join(f"{k} {v:.2e}" for k, v in errors.items()),
            "command": "python benchmarks/moe_routing_launch.py --out $OUT"}
    lines = [f"# {k}: {v}" for k, v in meta.items()] + ["op,batch,timing,seconds,repeats"]
    lines += [f"{op},{b},{timing},{s:.4e},{REPEATS}" for op, b, timing, s in rows]
    (args.out / "h200-moe-routing.csv").write_text("\n".join(lines) + "\n")
    print(f"errors vs float64: {errors}")


if __name__ == "__main__":
    main()
