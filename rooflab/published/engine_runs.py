"""Engine-run rows: a whole-model fixed-batch run (steps/*.csv, StepRow) and a run under a load (serving/*.csv,
ServingRow), with the deployment and workload columns both share (EngineRun)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import SpecError
from ..limits import MAX_BATCH, MAX_GPUS
from ..vocab import Engine
from .cells import _TOKENS, REQUIRED, _bool, _gpu, _model, _one_of, _positive_number, _release, _text, _whole
from .kinds import KV_CACHE_DTYPES, WEIGHT_FORMATS, ServingMetric, Statistic, StepMetric
from .sources import Source


@dataclass(frozen=True)
class EngineRun:
    """What every engine run states: its source, the deployment and the workload (the columns steps/ and serving/
    share)."""

    source: str
    gpu: str
    num_gpus: int
    engine: str
    engine_version: str
    model: str
    weight_format: str
    kv_cache_dtype: str
    tp: int
    pp: int
    dp: int
    ep: int
    dp_attention: bool
    speculative: str
    enforce_eager: bool
    batch: int
    input_len: int
    output_len: int


@dataclass(frozen=True)
class StepRow(EngineRun):
    """A whole-model engine run at a fixed batch: tokens per step and what the source measured."""

    metric: StepMetric
    value: float
    note: str
    where: str = ""


@dataclass(frozen=True)
class ServingRow(EngineRun):
    """An engine run under a load: exactly one of concurrency and request_rate (inf: every request at once)."""

    concurrency: int
    request_rate: float
    metric: ServingMetric
    value: float
    statistic: Optional[Statistic]
    note: str
    where: str = ""


#: Each column's reader, and the value an empty optional cell reads as (REQUIRED: it may not be empty).
_ENGINE_RUN: dict[str, tuple[Callable, object]] = {
    "source": (_text, REQUIRED), "gpu": (_gpu, REQUIRED), "num_gpus": (_whole(1, MAX_GPUS), REQUIRED),
    "engine": (_one_of(tuple(e.value for e in Engine)), REQUIRED), "engine_version": (_release, ""),
    "model": (_model, REQUIRED),
    "weight_format": (_one_of(WEIGHT_FORMATS), REQUIRED), "kv_cache_dtype": (_one_of(KV_CACHE_DTYPES), REQUIRED),
    "tp": (_whole(1, MAX_GPUS), 1), "pp": (_whole(1, MAX_GPUS), 1), "dp": (_whole(1, MAX_GPUS), 1),
    "ep": (_whole(1, MAX_GPUS), 1), "dp_attention": (_bool, False), "speculative": (_text, ""),
    "enforce_eager": (_bool, False),
    "batch": (_whole(1, MAX_BATCH), 0), "input_len": (_TOKENS, REQUIRED), "output_len": (_TOKENS, REQUIRED),
}
STEP_COLUMNS = {**_ENGINE_RUN, "metric": (_one_of(StepMetric), REQUIRED),
                "value": (_positive_number(1e12), REQUIRED), "note": (_text, "")}
SERVING_COLUMNS = {**_ENGINE_RUN, "concurrency": (_whole(1, MAX_BATCH), 0),
                   "request_rate": (_positive_number(1e9, inf=True), 0.0),
                   "metric": (_one_of(ServingMetric), REQUIRED), "value": (_positive_number(1e12), REQUIRED),
                   "statistic": (_one_of(Statistic), None), "note": (_text, "")}


def _check_engine_run(row: EngineRun, source: Source) -> None:
    if row.tp * row.pp > row.num_gpus:
        raise SpecError(row.where, "num_gpus", row.num_gpus, f"fewer than tp x pp = {row.tp * row.pp}")
    if row.dp_attention and row.tp % row.dp:
        raise SpecError(row.where, "dp", row.dp, f"must divide tp = {row.tp}: data-parallel attention splits the "
                                                 "tensor-parallel group (SGLang)")
    span = row.tp if row.dp_attention else row.tp * row.dp      # the GPUs an expert layer spans
    if span % row.ep:
        raise SpecError(row.where, "ep", row.ep, f"must divide {'tp' if row.dp_attention else 'tp x dp'} = {span}: "
                                                 "an expert layer spans those GPUs")


def _check_serving(row: ServingRow, source: Source) -> None:
    _check_engine_run(row, source)
    if bool(row.concurrency) == bool(row.request_rate):
        raise SpecError(row.where, "concurrency", row.concurrency or "",
                        "give exactly one of concurrency and request_rate")
    throughput = row.metric.value.startswith("output_tokens_per_s")
    if throughput != (row.statistic is None):
        raise SpecError(row.where, "statistic", row.statistic.value if row.statistic else "",
                        "a throughput has no statistic; a latency needs one" if throughput or row.statistic
                        else "a latency needs a statistic (mean, median, p90, p99)")


__all__ = ["SERVING_COLUMNS", "STEP_COLUMNS", "EngineRun", "ServingRow", "StepRow"]
