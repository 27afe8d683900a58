"""`rooflab serve` (the throughput-interactivity curve, a simulated benchmark run, an SLO search) and
`rooflab plot serve` (the curve as a chart): parse -> call rooflab.serve -> render. No arithmetic here.

Options keep the engines' and the benchmark harnesses' names: vLLM's --max-num-seqs and
--max-num-batched-tokens, SGLang's --max-running-requests, --chunked-prefill-size and --enable-mixed-chunk,
vllm bench serve's --max-concurrency, --request-rate, --burstiness, --num-prompts, --random-range-ratio.
"""


import inspect
import math
from typing import Annotated, Optional

import typer

from ..limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from ..output import Format
from . import FormatOpt, GpuOpt, ModelOpt, fail, friendly, params, parse_lengths
from .charts import DataOpt, GpusOpt, _inputs, _names, _output_opt, _save
from . import deployment_options as dopt
from .deployment_options import EngineVersionOpt, QuantizationOpt, WeightDTypeOpt
from .options import ExpertParallelOpt
from .report import report as _report
from .serve_replica import parallel_of, replica_of

#: The speculative options are `report --phase step`'s, declared once there: (annotation, default) by name.
_R = {n: p for n, p in inspect.signature(_report).parameters.items()}

MAX_PROMPTS = 10_000_000


def _rate(text: str) -> float:
    """--request-rate: a positive number of requests/s, or inf."""
    if isinstance(text, float):
        return text
    if str(text).strip().lower() in ("inf", "infinity"):
        return math.inf
    return params.number(0, 1e9, lo_open=True)(text)


def _slo(text: str) -> float:
    """An SLO in seconds, or with a unit: 200ms, 0.2s, 30ms."""
    if isinstance(text, float):
        return text
    raw = str(text).strip().lower()
    scale = 1e-3 if raw.endswith("ms") else 1.0
    number = raw[:-2] if raw.endswith("ms") else raw[:-1] if raw.endswith("s") else raw
    if not number.strip():
        raise typer.BadParameter(f"{text!r} is not a time (200ms, 0.2s, 0.2)")
    try:
        float(number)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a time (200ms, 0.2s, 0.2)") from None
    return params.number(0, 1e6, lo_open=True)(number) * scale


EngineOpt = Annotated[str, typer.Option("--engine", metavar="vllm|sglang|tensorrt-llm",
                                        help="Whose scheduler and defaults: vllm (V1; V0 at an --engine-version before 0.8), sglang or "
                                             "tensorrt-llm.")]
TpOpt = Annotated[int, typer.Option("--tensor-parallel-size", "-tp", "--tp", "--tp-size",
                                    parser=params.count(1, MAX_GPUS), metavar="N", help="Tensor-parallel GPUs.")]
InOpt = Annotated[int, typer.Option("--input-len", "--random-input-len", parser=params.count(1, MAX_TOKENS),
                                    metavar="N", help="Prompt tokens (1k = 1,000, 1K = 1,024).")]
OutOpt = Annotated[int, typer.Option("--output-len", "--random-output-len", parser=params.count(1, MAX_TOKENS),
                                     metavar="N", help="Output tokens a request.")]
RatioOpt = Annotated[float, typer.Option("--random-range-ratio", parser=params.number(0, 1), metavar="R",
                                         help="Lengths uniform around --input-len / --output-len (see --lengths).")]
StyleOpt = Annotated[str, typer.Option("--lengths", metavar="vllm|inferencex",
                                       help="How --random-range-ratio draws: vllm ([L(1-R), L(1+R)], vllm bench "
                                            "serve) or inferencex ([L R, L], InferenceX and SGLang bench_serving).")]
PageOpt = Annotated[int, typer.Option("--block-size", "--page-size", parser=params.count(1, MAX_PAGE_SIZE),
                                      metavar="N", help="Tokens per KV page.")]
UtilOpt = Annotated[float, typer.Option("--gpu-memory-utilization", "--mem-fraction-static",
                                        parser=params.number(0, 1, lo_open=True), metavar="X",
                                        help="Share of device memory for weights and KV cache.")]
SeqsOpt = Annotated[Optional[int], typer.Option("--max-num-seqs", "--max-running-requests", "--max_batch_size",
                                                parser=params.count(1, MAX_TOKENS), metavar="N",
                                                help="Requests running at once (default: the engine's).")]
TokensOpt = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", "--chunked-prefill-size",
                                                  "--max_num_tokens", parser=params.count(1, MAX_TOKENS),
                                                  metavar="N", help="Tokens a step holds (default: the engine's).")]
MixedOpt = Annotated[bool, typer.Option("--enable-mixed-chunk/--no-mixed-chunk",
                                        help="SGLang: prefill chunks share steps with decodes (vLLM and "
                                             "TensorRT-LLM always mix).")]
HitOpt = Annotated[float, typer.Option("--prefix-cache-hit-rate", parser=params.number(0, 0.999), metavar="X",
                                       help="Share of prompt tokens found in the prefix cache, in [0, 1).")]


def _num(x, digits=3):
    return "" if x is None else f"{x:,.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def _ms(x):
    return "" if x is None else f"{x * 1e3:,.2f}"


def sweep_frame(sweep):
    from ..output import Column, Frame

    rec = sweep.records()
    cols = (Column("concurrency", "concurrency"), Column("estimate", "estimate"),
            Column("ttft_s", "TTFT ms", lambda r: _ms(r["ttft_s"])),
            Column("tpot_s", "TPOT ms", lambda r: _ms(r["tpot_s"])),
            Column("e2e_s", "E2E s", lambda r: _num(r["e2e_s"])),
            Column("output_tokens_per_s_per_gpu", "tok/s/GPU", lambda r: _num(r["output_tokens_per_s_per_gpu"])),
            Column("output_tokens_per_s_per_user", "tok/s/user", lambda r: _num(r["output_tokens_per_s_per_user"])),
            Column("running", "running", lambda r: f"{r['running']:,.0f}" + (" KV" if r["kv_bound"] else "")))
    notes = (f"KV cache: {sweep.kv_limit:,} requests at the mean context; running limit {sweep.running_limit:,}",
             "floor: every step at its physical floor under this schedule; predicted: rooflab's fitted step. "
             "TPOT excludes the first token; tok/s/user = 1 / TPOT.",
             f"predicted: {sweep.provenance}")
    doc = {"replica": sweep.label, "kv_limit": sweep.kv_limit, "running_limit": sweep.running_limit,
           "predicted_from": sweep.provenance, "points": rec}
    return Frame(cols, tuple(rec), doc=doc, title=sweep.label, notes=notes)


def simulation_frame(label, sims, provenance=""):
    from ..output import Column, Frame

    rec = []
    for sim in sims:
        rec += sim.to_frame().to_dict(orient="records")
    cols = (Column("estimate", "estimate"), Column("metric", "metric"), Column("statistic", "statistic"),
            Column("value", "value", lambda r: _ms(r["value"]) + " ms" if r["metric"].endswith("_s")
                   else _num(r["value"])))
    notes = tuple(f"{s.estimate}: {s.num_requests:,} requests over {s.duration_s:,.1f} s, {s.steps:,} steps, "
                  f"{s.preemptions:,} preemptions" for s in sims) + (f"predicted: {provenance}",)
    doc = {"replica": label, "predicted_from": provenance, "runs": [s.to_dict() for s in sims]}
    return Frame(cols, tuple(rec), doc=doc, title=f"{label}; {sims[0].load}", notes=notes)


def slo_frame(label, answers, provenance=""):
    from ..output import Column, Frame

    rec = []
    for a in answers:
        r = a.to_frame().to_dict(orient="records")[0]
        rec.append(r)
    cols = (Column("estimate", "estimate"), Column("concurrency", "largest concurrency",
                                                   lambda r: "none" if r["concurrency"] is None else
                                                   f"{r['concurrency']:,}"),
            Column("binding", "binds"), Column("replicas", "replicas", lambda r: "" if r["replicas"] is None
                                               else f"{r['replicas']:,}"),
            Column("gpus", "GPUs", lambda r: "" if r["gpus"] is None else f"{r['gpus']:,}"),
            Column("at_ttft_s", "TTFT ms", lambda r: _ms(r.get("at_ttft_s"))),
            Column("at_tpot_s", "TPOT ms", lambda r: _ms(r.get("at_tpot_s"))),
            Column("at_requests_per_s", "req/s a replica", lambda r: _num(r.get("at_requests_per_s"))))
    return Frame(cols, tuple(rec), doc={"replica": label, "predicted_from": provenance, "answers": rec},
                 title=label, notes=("mean TTFT and TPOT of the closed form against the SLOs",
                                     f"predicted: {provenance}"))


ConcurrencyOpt = Annotated[Optional[list[str]], typer.Option(
    "--max-concurrency", metavar="N[,N...]", help="Closed-loop concurrencies (default: 1, 2, 4, ... to the KV "
                                                   "limit).")]

#: Concurrencies one serve call sweeps at most (each is a closed-form steady state; a curve needs a few dozen).
MAX_CONCURRENCIES = 1024


def _concurrencies(values: Optional[list[str]]) -> Optional[list[int]]:
    """--max-concurrency's values (comma lists and repeats), at most MAX_CONCURRENCIES of them; None: the default."""
    found = parse_lengths(values, "--max-concurrency") or None
    if found is not None and len(found) > MAX_CONCURRENCIES:
        fail(f"--max-concurrency: {len(found):,} values; a sweep takes at most {MAX_CONCURRENCIES:,}")
    return found


@friendly
def serve(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = ["h100-sxm"],
    engine: EngineOpt = "vllm",
    engine_version: EngineVersionOpt = None,
    tp: TpOpt = 1,
    dcp: dopt.DecodeContextParallelOpt = 1,
    data_parallel: dopt.DataParallelOpt = None,
    enable_dp_attention: dopt.EnableDpAttentionOpt = False,
    ep: ExpertParallelOpt = 1,
    enable_expert_parallel: dopt.EnableExpertParallelOpt = False,
    pp: dopt.PipelineParallelOpt = 1,
    eager: dopt.EagerOpt = False,
    speculative_config: _R["speculative_config"].annotation = None,
    speculative_algorithm: _R["speculative_algorithm"].annotation = None,
    speculative_tokens: _R["speculative_tokens"].annotation = None,
    speculative_steps: _R["speculative_steps"].annotation = None,          # read by sglang_draft_tokens
    speculative_topk: _R["speculative_topk"].annotation = None,
    draft_model: _R["draft_model"].annotation = None,
    acceptance: _R["acceptance"].annotation = _R["acceptance"].default,
    weight_dtype: WeightDTypeOpt = None,
    quantization: QuantizationOpt = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    input_len: InOpt = 1024,
    output_len: OutOpt = 1024,
    range_ratio: RatioOpt = 0.0,
    style: StyleOpt = "vllm",
    max_concurrency: ConcurrencyOpt = None,
    request_rate: Annotated[Optional[float], typer.Option("--request-rate", parser=_rate, metavar="R|inf",
                                                          help="Simulate requests arriving at R/s instead.")] = None,
    burstiness: Annotated[Optional[float], typer.Option("--burstiness", parser=params.number(0, 1e6, lo_open=True),
                                                        metavar="B", help="With --request-rate: the gamma shape of "
                                                                          "the arrival gaps (default 1: Poisson).")] = None,
    num_prompts: Annotated[Optional[int], typer.Option("--num-prompts", parser=params.count(1, MAX_PROMPTS),
                                                       metavar="N", help="Requests to simulate (default 1,000 at a "
                                                                         "rate, 10 x the concurrency with "
                                                                         "--simulate).")] = None,
    simulate_: Annotated[bool, typer.Option("--simulate", help="Simulate the --max-concurrency run (one value) "
                                                               "instead of the closed form.")] = False,
    seed: Annotated[int, typer.Option("--seed", parser=params.count(0, 2**31), metavar="N")] = 0,
    ttft_slo: Annotated[Optional[float], typer.Option("--ttft-slo", parser=_slo, metavar="T",
                                                      help="Mean TTFT SLO (200ms, 0.2s).")] = None,
    tpot_slo: Annotated[Optional[float], typer.Option("--tpot-slo", parser=_slo, metavar="T",
                                                      help="Mean TPOT SLO (30ms).")] = None,
    target_rate: Annotated[Optional[float], typer.Option("--target-rate", parser=params.number(0, 1e12, lo_open=True),
                                                         metavar="R", help="With an SLO: requests/s to serve; "
                                                                           "answers replicas and GPUs.")] = None,
    page_size: PageOpt = 16,
    utilization: UtilOpt = 0.9,
    max_num_seqs: SeqsOpt = None,
    max_tokens: TokensOpt = None,
    mixed: MixedOpt = False,
    hit_rate: HitOpt = 0.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Serving under load: the throughput-interactivity curve (closed form), a simulated benchmark run at a
    request rate (or --simulate at one concurrency), or the largest concurrency an SLO allows."""
    from ..deployment_words import DeploymentWords
    from ..errors import InputError
    from ..output import render
    from ..serve import ClosedLoop, RequestRate, concurrency_sweep, simulate, slo_search

    concurrencies = _concurrencies(max_concurrency)
    simulated = request_rate is not None or simulate_
    slo = ttft_slo is not None or tpot_slo is not None
    if simulated and concurrencies and len(concurrencies) != 1:
        raise InputError("--max-concurrency: a simulated run (--request-rate or --simulate) takes one value, got "
                         f"{len(concurrencies):,}")
    if simulate_ and request_rate is None and not concurrencies:
        raise InputError("--simulate takes one --max-concurrency (or give --request-rate)")
    if slo and simulated:
        raise InputError("--ttft-slo / --tpot-slo search the closed form over concurrency: not with "
                         "--request-rate or --simulate")
    if not simulated and (num_prompts is not None or burstiness is not None):
        raise InputError(f"{'--num-prompts' if num_prompts is not None else '--burstiness'} goes with "
                         "--request-rate or --simulate")
    if burstiness is not None and request_rate is None:
        raise InputError("--burstiness goes with --request-rate")
    if target_rate is not None and not slo:
        raise InputError("--target-rate goes with --ttft-slo or --tpot-slo")
    top = max(concurrencies) if concurrencies else None
    weight_words = DeploymentWords(weight_dtype=weight_dtype, quantization=quantization)
    parallel = parallel_of(ctx, engine, dcp, data_parallel, enable_dp_attention, ep, enable_expert_parallel, pp, eager,
                         speculative_config, speculative_algorithm, speculative_tokens, draft_model, acceptance)
    replica = replica_of(model, gpu[0], engine, tp, weight_words, kv_cache_dtype, input_len, output_len, range_ratio,
                       style, page_size, utilization, max_num_seqs, max_tokens, mixed, hit_rate, top, engine_version,
                       parallel)
    provenance = replica.steps.provenance
    if slo:
        answers = [a for a in (slo_search(replica, ttft_slo, tpot_slo, target_rate, e, top)
                               for e in ("floor", "predicted")) if a is not None]
        typer.echo(render(slo_frame(replica.describe(), answers, provenance), fmt), nl=False)
        return
    if simulated:
        load = RequestRate(request_rate, 1.0 if burstiness is None else burstiness, top) \
            if request_rate is not None else ClosedLoop(top)
        sims = [s for s in (simulate(replica, load, num_prompts, seed, e) for e in ("floor", "predicted"))
                if s is not None]
        typer.echo(render(simulation_frame(replica.describe(), sims, provenance), fmt), nl=False)
        return
    typer.echo(render(sweep_frame(concurrency_sweep(replica, concurrencies)), fmt), nl=False)


@friendly
def plot_serve(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    engine: EngineOpt = "vllm",
    engine_version: EngineVersionOpt = None,
    tp: Annotated[Optional[list[str]], typer.Option("--tensor-parallel-size", "-tp", "--tp", metavar="N[,N...]",
                                                    help="Tensor-parallel GPUs; several: one curve each.")] = None,
    dcp: dopt.DecodeContextParallelOpt = 1,
    data_parallel: dopt.DataParallelOpt = None,
    enable_dp_attention: dopt.EnableDpAttentionOpt = False,
    ep: ExpertParallelOpt = 1,
    enable_expert_parallel: dopt.EnableExpertParallelOpt = False,
    pp: dopt.PipelineParallelOpt = 1,
    eager: dopt.EagerOpt = False,
    speculative_config: _R["speculative_config"].annotation = None,
    speculative_algorithm: _R["speculative_algorithm"].annotation = None,
    speculative_tokens: _R["speculative_tokens"].annotation = None,
    speculative_steps: _R["speculative_steps"].annotation = None,          # read by sglang_draft_tokens
    speculative_topk: _R["speculative_topk"].annotation = None,
    draft_model: _R["draft_model"].annotation = None,
    acceptance: _R["acceptance"].annotation = _R["acceptance"].default,
    weight_dtype: WeightDTypeOpt = None,
    quantization: QuantizationOpt = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    input_len: InOpt = 1024,
    output_len: OutOpt = 1024,
    range_ratio: RatioOpt = 0.0,
    style: StyleOpt = "vllm",
    max_concurrency: ConcurrencyOpt = None,
    page_size: PageOpt = 16,
    utilization: UtilOpt = 0.9,
    max_num_seqs: SeqsOpt = None,
    max_tokens: TokensOpt = None,
    mixed: MixedOpt = False,
    hit_rate: HitOpt = 0.0,
    output: _output_opt("serve.png") = None,
    data: DataOpt = None,
) -> None:
    """The throughput-interactivity curve: output tokens/s per GPU against tokens/s per user, floors beside
    predictions; one curve per GPU and TP degree."""
    from ..deployment_words import DeploymentWords
    from ..plot.serve import serve_chart, sweeps_frame
    from ..serve import concurrency_sweep

    concurrencies = _concurrencies(max_concurrency)
    tps = parse_lengths(tp, "--tp", MAX_GPUS) or [1]
    weight_words = DeploymentWords(weight_dtype=weight_dtype, quantization=quantization)
    parallel = parallel_of(ctx, engine, dcp, data_parallel, enable_dp_attention, ep, enable_expert_parallel, pp, eager,
                         speculative_config, speculative_algorithm, speculative_tokens, draft_model, acceptance)
    sweeps = []
    for name in _names(gpu, "h100-sxm"):
        for degree in tps:
            replica = replica_of(model, name, engine, degree, weight_words, kv_cache_dtype, input_len, output_len,
                               range_ratio, style, page_size, utilization, max_num_seqs, max_tokens, mixed,
                               hit_rate, max(concurrencies) if concurrencies else None, engine_version, parallel)
            sweeps.append(concurrency_sweep(replica, concurrencies))
    _save(serve_chart(sweeps), output, "serve.png", lambda: sweeps_frame(sweeps), data,
          _inputs(model, _names(gpu, "h100-sxm")))
