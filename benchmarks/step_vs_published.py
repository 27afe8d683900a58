"""The whole-model step as deployed, against the published fixed-batch engine runs (measurements/published/steps/),
fitted on by nothing; and the issue's three named cases, per component.

A static-batch run of B sequences, input I, output O tokens on N GPUs (TensorRT-LLM's gptSessionBenchmark: the
time includes the context phase) takes

    T = t_prefill(B prompts of I) + sum_{j=1..O-1} t_decode(B at context I + j)
      ~ t_prefill + (O - 1) t_decode(B at I + O / 2)      (a decode step is close to affine in its context)

and its output tokens per GPU are B O / (T N), its TPOT (O - 1) t_decode / (O - 1). Floors (the step's t_floor_s,
everything overlapped) and predictions (t_predicted_s) are put through the same formula; a row whose measured time
is below its floor beats it. The deployment: TP and PP as the row states, the weights in the row's format
(fp8 rows: fp8 weights, fp8 GEMMs), the KV cache in its dtype, CUDA graphs and fused elementwise work (the engines'
own kernels), utilisation 0.9, memory checked by rooflab.capacity; decode attention as the row's engine and version
run it and the experts as the kernel the row's engine and version run (rooflab.step.engine_kernels, the resolver
`report --phase step --engine E --engine-version V` uses: TensorRT-LLM 0.5-0.9's masked MHA reads a GQA group's KV
once per query head where XQA does not apply; a tuned fused expert kernel where the release shipped a tuned config
for the shape, torch's grouped GEMM as measured otherwise). A row states its run as a throughput (output or
total tokens per second) or as the run's wall time (batch_latency_s: vllm bench latency's batch of B; batch1_latency_s:
a batch of one), all put back to T.

    python benchmarks/step_vs_published.py            # the table RESULTS.md holds, and the named cases
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from rooflab.deployment import Deployment, Speculative
from rooflab.deployment_words import DeploymentWords
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.published import load_published
from rooflab.render_step import render_step
from rooflab.step import step_report
from rooflab.units import DType

#: A published row's model -> the bundled model priced for it (None: not bundled, skipped). An alias is the same
#: architecture under another checkpoint name: Llama 3.1 8B has Llama 3 8B's layers, heads and widths (only its RoPE
#: scaling and context differ, which a 160-token run never reaches); DeepSeek-R1 is DeepSeek-V3's architecture.
MODELS = {"meta-llama/Llama-2-13b-hf": None,
          "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3-8b",
          "deepseek-ai/DeepSeek-R1": "deepseek-v3"}
#: Metrics that are the wall time of the whole static-batch run as the row states it.
RUN_TIMES = ("batch_latency_s", "batch1_latency_s")
#: An eager row (enforce_eager: vLLM --enforce-eager, SGLang --disable-cuda-graph) is priced without graphs, its
#: elementwise work fused as both engines' eager kernels are (rooflab.deployment's table).
#: A row's weights in the engines' --quantization words: fp8 as vLLM's `--quantization fp8` means it (DeploymentWords:
#: a bf16 checkpoint quantised per tensor at load; an fp8 checkpoint, DeepSeek-R1's 128 x 128 blocks, as shipped).
WEIGHTS = {"fp8": "fp8", "fp16": None, "bf16": None}
KV = {"fp8_e4m3": DType.fp8_e4m3, "fp8_e5m2": DType.fp8_e5m2, "fp16": DType.fp16, "bf16": DType.bf16}


def run_time(model, gpu, dep, batch, input_len, output_len, engine=None, version=None):
    """(floor, predicted, what binds) seconds of the whole static-batch run, or None where it does not fit; the
    kernels `engine` runs at `version` (rooflab.step.engine_kernels, as `report --phase step --engine E
    --engine-version V` prices them)."""
    pre = step_report(model, gpu, batch, input_len, "prefill", deployment=dep, check_memory=False, engine=engine,
                      engine_version=version)
    dec = step_report(model, gpu, batch, input_len + max(output_len // 2, 1), "decode", deployment=dep,
                      engine=engine, engine_version=version)
    steps = output_len - 1
    floor = pre.t_floor_s + steps * dec.t_floor_s
    pred = None if pre.t_predicted_s is None or dec.t_predicted_s is None else \
        pre.t_predicted_s + steps * dec.t_predicted_s
    if pred is None:
        return floor, None, "no prediction for this deployment on this GPU (a floor only)"
    share = steps * dec.t_predicted_s / pred
    phase, report = ("decode", dec) if share >= 0.5 else ("prefill", pre)
    heavy = max(report.rows, key=lambda r: r.t_predicted_s or 0)
    return floor, pred, f"decode {share:.0%} of the run; the {phase}'s largest row: {heavy.label.split(' (')[0]}"


def measured_time(row):
    """The run's time from what the source states."""
    tokens = row.batch * row.output_len
    if row.metric.value in RUN_TIMES:
        return row.value
    if row.metric.value == "total_tokens_per_s":
        return row.batch * (row.input_len + row.output_len) / row.value
    if row.metric.value == "output_tokens_per_s_per_gpu":
        return tokens / (row.value * row.num_gpus)
    if row.metric.value == "output_tokens_per_s":
        return tokens / row.value
    return None


def table():
    pub = load_published()
    out, errors = [], defaultdict(list)
    for row in pub.steps:
        priced = MODELS.get(row.model, row.model)
        if priced is None or row.speculative:
            continue
        try:
            model, gpu = load_model(priced), load_gpu(row.gpu)
        except Exception:
            continue
        t = measured_time(row)
        if t is None:
            continue
        try:
            dep = DeploymentWords(quantization=WEIGHTS.get(row.weight_format)).resolve(
                checkpoint=model, tensor_parallel=row.tp, pipeline_parallel=row.pp,
                kv_cache_dtype=KV.get(row.kv_cache_dtype), cuda_graphs=not row.enforce_eager)[0]
            floor, pred, binds = run_time(model, gpu, dep, row.batch, row.input_len, row.output_len, row.engine,
                                          row.engine_version or None)
        except InputError as exc:
            out.append((row, t, None, None, f"not expressed: {str(exc)[:90]}"))
            continue
        out.append((row, t, floor, pred, binds))
        if pred is not None and row.gpu == "h200-sxm":
            errors[row.engine].append((abs(pred / t - 1), row, binds, pred / t - 1))
    return out, errors


def main() -> None:
    out, errors = table()
    print("| source | GPU | model | TP | batch | in / out | measured run | floor | predicted | pred / measured | binds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    beaten = 0
    for row, t, floor, pred, binds in out:
        if floor is not None and t < floor:
            beaten += 1
        ratio = f"{pred / t:.2f}" if pred else "-"
        print(f"| {row.source} | {row.gpu} | {row.model} | {row.tp} | {row.batch} | {row.input_len} / {row.output_len} "
              f"| {t:.2f} s | {floor:.2f} s | " if floor is not None else
              f"| {row.source} | {row.gpu} | {row.model} | {row.tp} | {row.batch} | {row.input_len} / {row.output_len} "
              f"| {t:.2f} s | - | ", end="")
        print(f"{pred:.2f} s | {ratio} | {binds} |" if pred else f"- | - | {binds} |")
    rows = sum(1 for r in out if r[2] is not None)
    print(f"\nrows priced: {rows} of {len(out)}; rows beating their floor: {beaten}")
    for engine, errs in errors.items():
        worst = max(errs, key=lambda e: e[0])
        print(f"H200 {engine}: {len(errs)} rows, median |error| {statistics.median(e[0] for e in errs):.1%}, signed "
              f"median {statistics.median(e[3] for e in errs):+.1%}; worst {worst[3]:+.1%}: {worst[1].model} TP "
              f"{worst[1].tp} batch {worst[1].batch} {worst[1].input_len}/{worst[1].output_len} ({worst[2]})")
    named()


def named() -> None:
    """The issue's three named cases, per component."""
    h200 = load_gpu("h200-sxm")
    cases = [
        ("DeepSeek-V3 fp8 on 8 x H200, EP 8, attention DP 8 (SGLang --tp 8 --enable-dp-attention --dp 8 --ep 8)",
         load_model("deepseek-v3"), Deployment(tensor_parallel=8, attention_data_parallel=8, expert_parallel=8), 256,
         4096),
        ("Mixtral-8x7B TP 2", load_model("mixtral-8x7b"), Deployment(tensor_parallel=2), 64, 2048),
        ("Llama-3-70B fp8, a 3-token EAGLE draft at acceptance 0.7",
         load_model("llama-3-70b"), Deployment(weight_format="fp8", kv_cache_dtype="fp8_e4m3",
                                               speculative=Speculative("eagle", 3, 0.7)), 32, 4096),
    ]
    for title, model, dep, batch, length in cases:
        print(f"\n### {title}: decode, batch {batch} x context {length}\n")
        sys.stdout.write(render_step(step_report(model, h200, batch, length, deployment=dep)))


if __name__ == "__main__":
    main()
