"""The published serving rows (measurements/published/serving/, read by rooflab.published) against rooflab's
serving floors and predictions. Nothing is fitted on these rows.

Each row becomes a replica: the bundled model of the same architecture (a Hugging Face id mapped below), the
row's GPU, TP, weight format (fp8: fp8 GEMMs and weights; a checkpoint that ships fp8, as DeepSeek-R1's block fp8
does, kept in its own format, as the engine loads it from its quantization_config) and KV dtype, the engine's scheduler with its
defaults at the row's engine version (which picks the experts' kernel: rooflab.step.engine_moe_kernel), and the workload the row's note states (the harness's uniform length ranges; fixed lengths for
trtllm-bench). Concurrency rows and request-rate rows are simulated (simulate.py) with the prompts the note
states (default: 10 x the concurrency, or 1,000), rate inf (every request at once) too where the note states how
many (sglang.bench_serving's offline runs: their medians include the queue); a rate-inf row that states none
(trtllm-bench throughput) is the steady state at the running limit (the closed form).

Where the source does not state the KV cache's dtype (the note says "KV dtype not set by the page": the TensorRT-LLM
tables, whose fp8 checkpoints may carry an fp8 cache), the floor is priced with an fp8 cache, which holds the most
requests and reads the fewest bytes: a floor must hold whichever the engine chose. The prediction keeps the row's
recorded dtype. A row rooflab cannot express
(expert parallelism, a model not bundled, a format the step does not price) is skipped with the reason.

A floor must not be beaten: latencies at least the floor's, throughputs at most the floor's (a rate row's
throughput is the offered rate's, not a bound, and is left out of the floor check).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from ..errors import RooflabError
from .replica import Replica
from .scheduler import Engine, Scheduler
from .simulate import simulate
from .steady import solve
from .workload import ClosedLoop, Lengths, RequestRate, Workload

#: Hugging Face ids of the rows -> the bundled model of the same architecture.
MODELS = {"meta-llama/Llama-3.3-70B-Instruct": "llama-3.3-70b", "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
          "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3"}
_RANGES = re.compile(r"input lengths uniform in \[(\d+), (\d+)\], output in \[(\d+), (\d+)\]")
_PROMPTS = re.compile(r"(\d+) prompts")
LATENCIES = ("ttft_s", "tpot_s", "itl_s", "e2e_s")
#: A note's words for a KV dtype the source does not state (the floor then takes the cache that holds the most).
KV_UNSTATED = "KV dtype not set by the page"


@dataclass(frozen=True)
class Comparison:
    """One published row beside rooflab's floor and prediction of the same metric and statistic."""

    source: str
    gpu: str
    model: str
    engine: str
    tp: int
    input_len: int
    output_len: int
    concurrency: Optional[int]
    request_rate: Optional[float]
    metric: str
    statistic: str
    measured: float
    floor: Optional[float]
    predicted: Optional[float]
    how: str                           # 'simulated' or 'closed form'
    skipped: str = ""

    @property
    def ratio(self) -> Optional[float]:
        """predicted / measured."""
        return None if self.predicted is None else self.predicted / self.measured

    @property
    def beats_floor(self) -> bool:
        if self.floor is None or (self.request_rate is not None and not math.isinf(self.request_rate)
                                  and self.metric not in LATENCIES):
            return False
        if self.metric in LATENCIES:
            return self.measured < self.floor * (1 - 1e-9)
        return self.measured > self.floor * (1 + 1e-9)


def _deployment(row, model=None):
    """The row's deployment for `model` (a ModelSpec; None: the row's format taken as a quantisation at load): fp8
    rows quantise a 16-bit checkpoint to per-tensor fp8, and keep a checkpoint that ships fp8 (fp8 or block fp8:
    DeepSeek-R1-0528's [128, 128] blocks, which SGLang serves block-scaled) in its own format; bf16 and fp16 rows
    keep a 16-bit checkpoint as shipped, and price a checkpoint shipped in another format (DeepSeek-V3's block
    fp8, gpt-oss's mxfp4 experts) in the row's 16-bit format, weights and GEMMs, as the row says it ran. An fp8
    row of a checkpoint shipped partly in another format (gpt-oss's mxfp4 experts) is refused: per-tensor fp8 over
    every component would price experts the row does not say it requantised."""
    from ..deployment import Deployment
    from ..specs.model import QUANTIZABLE
    from ..units import DType, WeightFormat

    gemm = {"fp8": DType.fp8_e4m3, "bf16": None, "fp16": None}
    if row.weight_format not in gemm:
        raise RooflabError(f"weight format {row.weight_format}: this check maps fp8, bf16 and fp16 rows only (the step "
                           "prices more; not yet checked against serving rows)")
    servable(row)
    kv = DType.of(row.kv_cache_dtype)
    fmt = gemm[row.weight_format]
    if fmt is not None and model is not None and \
            model.weight_format("attention") in (WeightFormat.fp8, WeightFormat.fp8_block):
        fmt = None                                 # the checkpoint's own fp8 (its GEMMs fp8 on an fp8 GPU)
    elif fmt is None and model is not None and any(
            model.weight_format(c) not in (WeightFormat.bf16, WeightFormat.fp16) for c in QUANTIZABLE):
        fmt = DType(row.weight_format)             # a 16-bit row of a checkpoint shipped in another format
    elif fmt is not None and model is not None and any(
            model.weight_format(c) not in (WeightFormat.bf16, WeightFormat.fp16, WeightFormat.fp8,
                                           WeightFormat.fp8_block) for c in QUANTIZABLE):
        shipped = sorted({model.weight_format(c).value for c in QUANTIZABLE})
        raise RooflabError(f"{getattr(row, 'model', None) or 'the row'}: weight_format {row.weight_format}: the checkpoint ships {', '.join(shipped)} (its experts "
                           "or others neither 16-bit nor fp8); which of its weights the row ran in fp8 is not said, "
                           "so this check does not price it")
    return Deployment(tensor_parallel=row.tp, gemm_dtype=fmt, weight_format=fmt, dtype=kv, kv_cache_dtype=kv)


def _workload(row) -> Workload:
    m = _RANGES.search(row.note)
    if m:
        a, b, c, d = map(int, m.groups())
        return Workload(Lengths(a, b), Lengths(c, d))
    return Workload.fixed(row.input_len, row.output_len)


def servable(row) -> None:
    """A RooflabError naming what the row ran that this check does not serve: an eager run, or expert, data,
    pipeline or attention-data parallelism (compare checks the row itself; its cached replicas are keyed by TP,
    formats and lengths only)."""
    if getattr(row, "enforce_eager", False):
        raise RooflabError("enforce_eager: this check serves replicas with CUDA graphs (the step prices eager runs: "
                           "report --phase step --enforce-eager)")
    if (getattr(row, "ep", 1) or 1) > 1 or (getattr(row, "dp", 1) or 1) > 1 or (getattr(row, "pp", 1) or 1) > 1 \
            or getattr(row, "dp_attention", False):
        raise RooflabError("expert, data, pipeline or attention-data parallelism: this check serves one TP replica "
                           "(the serving model's Replica does not deal requests over ranks)")


@lru_cache(maxsize=None)
def _replica(model: str, gpu: str, tp: int, weight_format: str, kv: str, engine: str, ranges: tuple,
             version: str = "") -> Replica:
    from ..load import load_gpu, load_model

    class _Row:                                    # the fields _deployment reads
        pass

    row = _Row()
    row.tp, row.weight_format, row.kv_cache_dtype, row.ep, row.dp, row.pp, row.dp_attention = \
        tp, weight_format, kv, 1, 1, 1, False
    g = load_gpu(gpu)
    workload = Workload(Lengths(*ranges[:2]), Lengths(*ranges[2:]))
    spec = load_model(model)
    eng = Engine.of(engine)
    at = dict(version=version, max_model_len=spec.max_context_len,
              chunkable=Scheduler.v0_chunkable(spec, gpu=g)) if eng is Engine.vllm else {}     # V0's defaults at a V0 row
    scheduler = Scheduler.default(eng, g.cuda_visible_bytes or g.hbm_capacity_bytes, **at)
    if version:                                    # the row's engine version: it picks the expert kernel
        scheduler = scheduler.replace(version=version)
    return Replica.build(spec, g, _deployment(row, spec), workload, scheduler)


_RUNS: dict = {}


def _run(replica: Replica, concurrency: Optional[int], rate: Optional[float], prompts: int, estimate: str):
    key = (id(replica), concurrency, rate, prompts, estimate)
    if key not in _RUNS:
        _RUNS[key] = _run_once(replica, concurrency, rate, prompts, estimate)
    return _RUNS[key]


def _run_once(replica: Replica, concurrency: Optional[int], rate: Optional[float], prompts: Optional[int],
              estimate: str):
    if rate is not None and math.isinf(rate) and prompts is None:
        return solve(replica, max(1, replica.running_limit), estimate)
    load = ClosedLoop(concurrency) if concurrency else RequestRate(rate)
    return simulate(replica, load, num_requests=prompts, estimate=estimate)


def _value(result, metric: str, statistic: str) -> Optional[float]:
    if result is None:
        return None
    if hasattr(result, "ttft"):                    # a Simulation
        if metric in LATENCIES:
            dist = getattr(result, metric[:-2])
            return dist.p50_s if statistic in ("median", "p50") else getattr(dist, f"{statistic}_s", dist.mean_s)
        return getattr(result, metric) if metric != "output_tokens_per_s_per_user" else 1.0 / result.tpot.mean_s
    return getattr(result, metric)                 # a Steady: means only


def compare(rows=None) -> list[Comparison]:
    """Every serving row beside rooflab's floor and prediction (skipped rows carry the reason)."""
    from ..published import load_published

    rows = load_published().serving if rows is None else rows
    out = []
    for row in rows:
        metric, stat = row.metric.value, row.statistic.value if row.statistic else ""
        rate = row.request_rate if row.request_rate and not math.isnan(row.request_rate) else None
        conc = row.concurrency or None
        base = dict(source=row.source, gpu=row.gpu, model=row.model, engine=row.engine, tp=row.tp,
                    input_len=row.input_len, output_len=row.output_len, concurrency=conc, request_rate=rate,
                    metric=metric, statistic=stat, measured=row.value)
        try:
            servable(row)
            workload = _workload(row)
            ranges = (workload.input.low, workload.input.high, workload.output.low, workload.output.high)
            model = MODELS.get(row.model, row.model)
            version = row.engine_version or ""
            replica = _replica(model, row.gpu, row.tp, row.weight_format, row.kv_cache_dtype, row.engine, ranges,
                               version)
            floor_kv = "fp8_e4m3" if KV_UNSTATED in row.note else row.kv_cache_dtype
            floored = _replica(model, row.gpu, row.tp, row.weight_format, floor_kv, row.engine, ranges, version)
            m = _PROMPTS.search(row.note)
            prompts = int(m.group(1)) if m else (10 * conc if conc else None if rate and math.isinf(rate) else 1000)
            floor = _value(_run(floored, conc, rate, prompts, "floor"), metric, stat)
            predicted = _value(_run(replica, conc, rate, prompts, "predicted"), metric, stat)
        except RooflabError as exc:
            out.append(Comparison(**base, floor=None, predicted=None, how="", skipped=str(exc).splitlines()[0]))
            continue
        how = "closed form" if rate is not None and math.isinf(rate) and prompts is None else "simulated"
        out.append(Comparison(**base, floor=floor, predicted=predicted, how=how))
    return out


def to_frame(comparisons: list[Comparison]):
    import dataclasses

    import pandas as pd

    rows = []
    for c in comparisons:
        row = dataclasses.asdict(c)
        row.update(ratio=c.ratio, beats_floor=c.beats_floor)
        rows.append(row)
    return pd.DataFrame(rows)
