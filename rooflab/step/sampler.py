"""What an engine runs after the model's CUDA graph to pick the next tokens, as a closed set of priced models
(Sampler), the facts, read from the engines' shipped source, that pick one for an engine at a release, and its row
in the step priced at its time measured on the H200.

    unpriced        nothing priced: TensorRT-LLM (its sampler is not read here) and every release whose line was not
                    read (vLLM 0.6.x, 0.8-0.10; SGLang before 0.4)
    v0_random       vLLM's V0 engine at temperature 1.0, top_p 1.0 (benchmark_latency.py's and benchmark_throughput.py's
                    SamplingParams): eager after the graph: the bf16 logits to fp32, divided by the temperatures,
                    softmax and log_softmax in fp32, the sample indices to int64, the probabilities gathered at them, an
                    exponential draw q, probs / q, argmax (the exponential race: token i with probability p_i), the
                    tokens copied to the host (a sync); before the replay, five copies of the step's inputs into the
                    graph's static buffers
    v1_random       vLLM's V1 engine, the same parameters: eager after the graph: fp32, the temperature divide,
                    softmax, exponential draw, probs / q, argmax, the tokens to the host (no log_softmax: no logprobs
                    are asked)
    greedy_argmax   SGLang at temperature 0 (bench_one_batch's and bench_offline_throughput's): the fp32 cast of the
                    logits inside the logits processor, in the graph, then argmax eager after it
    graphed_greedy  rooflab's own step (no engine named): greedy decoding with everything in the graph, the fp32 cast
                    and the argmax; the least any engine does to pick a token, chosen so that rooflab's own step counts
                    the token's pick without assuming an engine's sampler

The sampling parameters are the published harnesses' (the step is priced for the engines' own benchmarks, not for a
request's top-k / top-p, penalties or logprobs, which add sorts and gathers not priced here). Speculative decoding
verifies drafts with a rejection sampler that is not read: no sampler is priced there (noted).

Facts (SAMPLER_FACTS), each read at one release and assumed kept within its minor line, not beyond:
  vLLM 0.7.3 (V0): model_executor/layers/sampler.py:270-271 logits.to(torch.float), div_ by the temperatures; :261
    penalties only `if do_penalties`; :282, :284 softmax and log_softmax in fp32; :681 sample_indices.long(); :719
    probs[long_sample_indices] into _multinomial, :524-536 q = empty_like, q.exponential_(), probs.div_(q).argmax;
    :485 random_samples.cpu() (the sync); :892 the logprob gather and rank only if logprobs are asked;
    worker/model_runner.py:1772, :1782 compute_logits and sample after model_executable (eager: CUDAGraphRunner.forward
    :1985-1997 copies input_ids, positions, slot_mapping and, attention/backends/utils.py:383-386, seq_lens_tensor and
    block_tables into the static buffers, then :2020 graph.replay()).
  vLLM 0.11.2 (V1): v1/sample/sampler.py:87 logits.to(torch.float32); :79-84 logprobs only if asked; :158
    all_random skips the greedy argmax; :129-139 apply_temperature div_; v1/sample/ops/topk_topp_sampler.py:95 no
    top-k / top-p -> forward_native, :81 softmax fp32, :220-241 random_sample (exponential_, div_, argmax);
    v1/worker/gpu_model_runner.py:2833-2834 compute_logits after the graph, :2484 _to_list (the tokens to the host).
  SGLang 0.4.3.post2: bench_one_batch.py:169, :208 and bench_offline_throughput.py:210 temperature 0;
    srt/layers/logits_processor.py:248 logits[:, :vocab_size].float() inside the model's forward (captured:
    srt/model_executor/cuda_graph_runner.py:449 replay); srt/layers/sampler.py:59-61 is_all_greedy -> torch.argmax,
    :150 .to(torch.int32).
  SGLang 0.5.12: bench_one_batch.py:356, :403 and bench_offline_throughput.py:231 temperature 0;
    srt/layers/logits_processor.py:996 .float(); srt/layers/sampler.py:121-123 torch.argmax (returned as int64, no
    cast: the measured sequence's int32 cast, one small launch, is kept: priced the same).
Not priced (noted here, one small launch each): V0's and V1's gather of the sampled rows' hidden states before the
lm_head (model_executor/layers/logits_processor.py _prune_hidden_states; V1 gpu_model_runner.py:2833), and V0's
host-to-device copies of the step's inputs and sampling tensors before the copies above.

Times (measurements/launch/h200-sampler.csv, benchmarks/sampler_device_run.py: our own torch functions of these
op sequences on one H200, batch 1 .. 256 x vocab 32,000 .. 151,936): `queued` the device time issued eagerly with
the host ahead (as while the graph runs), `wall` from an idle GPU to the tokens on the host (host-issue bound: the
price of an eager deployment), `graph` in a CUDA graph. Interpolated linearly in vocab, then in log(batch); past the
last batch or vocab, the time at the edge plus the extra floor bytes at the H200's copy bandwidth. Another NVIDIA GPU
takes the H200's time plus the floor bytes' extra time at its slower HBM, nothing where its HBM is faster (a
transfer, said so); other vendors get no prediction. vLLM V0 runs the model eagerly outside a decode-only batch of
at most 256 sequences of at most 8,192 tokens (graph_replayed, the one rule the whole step is timed by): no
graph-input copies there, and its sequences at their `wall` times. The floor counts one read of each op's input and
one write of its output, [batch, vocab] each, at the datasheet HBM bandwidth.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..cost.common import KernelCost
from ..errors import InputError, shown
from ..load import data_dir
from ..predict import MEASURED_HERE
from ..vocab import Pipe, _Named, engine_name, engine_release, fact_of_line


class Sampler(_Named):
    """How the step prices the token pick after the model's graph (a model of the engine's sampler)."""

    unpriced = "unpriced"              # not read (TensorRT-LLM, lines not read): no row
    v0_random = "v0_random"            # vLLM V0 (0.7.x), temperature 1.0: eager after the graph
    v1_random = "v1_random"            # vLLM V1 (0.11.x), temperature 1.0: eager after the graph
    greedy_argmax = "greedy_argmax"    # SGLang (0.4.x, 0.5.x), temperature 0: cast in the graph, argmax eager
    graphed_greedy = "graphed_greedy"  # rooflab's own step: cast and argmax in the graph


class SamplerSequence(_Named):
    """A measured op sequence (measurements/launch/h200-sampler.csv's `sequence`)."""

    v0_random = "v0_random"
    v1_random = "v1_random"
    greedy_argmax = "greedy_argmax"
    fp32_cast = "fp32_cast"
    v0_graph_inputs = "v0_graph_inputs"


class SamplerTiming(_Named):
    """How a sequence was timed (the CSV's `timing`; the module docstring)."""

    queued = "queued"
    wall = "wall"
    graph = "graph"


@dataclass(frozen=True)
class SamplerOp:
    """One launch of a sequence: the bytes it reads and writes a logit (a [batch, vocab] element), or a row where
    `per_row` (vocab-independent work)."""

    name: str
    read_bytes: float
    write_bytes: float
    per_row: bool = False


#: vLLM V0 (0.7.3) replays its CUDA graph only for a decode-only batch (a prompt in the step sets decode_only False,
#: worker/model_runner.py:735-737) of at most its largest captured batch, every sequence at most
#: max_seq_len_to_capture long (:762-770 _use_captured_graph; :1680 `prefill_meta is None and
#: decode_meta.use_cuda_graph` picks the graph runner, else the model runs eagerly): the largest captured batch is
#: the first of [1, 2, 4, 8, 16, ...] at least max_num_seqs (config.py:3368-3392, :3075 max_capture_size), 256 at V0's
#: default max_num_seqs 256 (engine/arg_utils.py:224); max_seq_len_to_capture defaults to 8192 (arg_utils.py:137).
V0_MAX_CAPTURED_BATCH = 256
V0_MAX_CAPTURED_SEQ_LEN = 8192
#: vLLM V0's graph inputs a decode row: input ids, positions and slot mapping (int64), the sequence length (int32)
#: and a block-table row of 8192 / 16 int32 entries (max_seq_len_to_capture / block_size: the graph's table width).
V0_GRAPH_INPUT_BYTES_PER_ROW = 3 * 8 + 4 + (V0_MAX_CAPTURED_SEQ_LEN // 16) * 4
#: Each sequence's launches, in order (the module docstring's facts; bytes a logit: bf16 2, fp32 4, int64 per row).
SEQUENCE_OPS = {
    SamplerSequence.v0_random: (SamplerOp("to fp32", 2, 4), SamplerOp("temperature divide", 4, 4),
                                SamplerOp("softmax", 4, 4), SamplerOp("log_softmax", 4, 4),
                                SamplerOp("sample indices to int64", 4, 8, True), SamplerOp("gather rows", 4, 4),
                                SamplerOp("exponential draw", 0, 4), SamplerOp("probs / q", 8, 4),
                                SamplerOp("argmax", 4, 0), SamplerOp("tokens to host", 8, 0, True)),
    SamplerSequence.v1_random: (SamplerOp("to fp32", 2, 4), SamplerOp("temperature divide", 4, 4),
                                SamplerOp("softmax", 4, 4), SamplerOp("exponential draw", 0, 4),
                                SamplerOp("probs / q", 8, 4), SamplerOp("argmax", 4, 0),
                                SamplerOp("tokens to host", 8, 0, True)),
    SamplerSequence.greedy_argmax: (SamplerOp("argmax", 4, 0), SamplerOp("ids to int32", 8, 4, True)),
    SamplerSequence.fp32_cast: (SamplerOp("to fp32", 2, 4),),
    SamplerSequence.v0_graph_inputs: tuple(SamplerOp(n, b, b, True) for n, b in (
        ("input ids", 8), ("positions", 8), ("slot mapping", 8), ("seq lens", 4),
        ("block tables", V0_GRAPH_INPUT_BYTES_PER_ROW - 28))),
}
#: Each sampler's sequences and whether the engine runs each in the graph (True) or eagerly (False).
SAMPLER_SEQUENCES = {
    Sampler.unpriced: (),
    Sampler.v0_random: ((SamplerSequence.v0_random, False), (SamplerSequence.v0_graph_inputs, False)),
    Sampler.v1_random: ((SamplerSequence.v1_random, False),),
    Sampler.greedy_argmax: ((SamplerSequence.fp32_cast, True), (SamplerSequence.greedy_argmax, False)),
    Sampler.graphed_greedy: ((SamplerSequence.fp32_cast, True), (SamplerSequence.greedy_argmax, True)),
}
#: What each sampler runs, in the row's label.
SAMPLER_WORDS = {
    Sampler.v0_random: "vLLM V0: fp32, temperature, softmax, log-softmax, exponential sampling, eager",
    Sampler.v1_random: "vLLM V1: fp32, temperature, softmax, exponential sampling, eager",
    Sampler.greedy_argmax: "SGLang greedy: fp32 cast in the graph, argmax eager",
    Sampler.graphed_greedy: "rooflab's own: fp32 cast and greedy argmax in the graph",
}
#: The same without CUDA graphs (the model, and so every sequence, issued eagerly).
EAGER_SAMPLER_WORDS = {
    Sampler.v0_random: SAMPLER_WORDS[Sampler.v0_random],
    Sampler.v1_random: SAMPLER_WORDS[Sampler.v1_random],
    Sampler.greedy_argmax: "SGLang greedy: fp32 cast and argmax, eager (no CUDA graph)",
    Sampler.graphed_greedy: "rooflab's own: fp32 cast and greedy argmax, eager (no CUDA graph)",
}
#: The sampler row's variant (rooflab explain reads the row by it).
SAMPLING_VARIANT = "sampling"
#: The GPU the sampler's times were measured on (the CSV's device_name NVIDIA H200).
SAMPLER_GPU = "h200-sxm"
SAMPLER_CSV = ("launch", "h200-sampler.csv")
#: The CSV's columns, in order.
COLUMNS = ("sequence", "batch", "vocab", "timing", "seconds", "repeats")
#: The timings each sequence was measured in (benchmarks/sampler_device_run.py TIMINGS).
MEASURED_TIMINGS = {
    SamplerSequence.v0_random: (SamplerTiming.queued, SamplerTiming.wall),
    SamplerSequence.v1_random: (SamplerTiming.queued, SamplerTiming.wall),
    SamplerSequence.greedy_argmax: (SamplerTiming.queued, SamplerTiming.wall, SamplerTiming.graph),
    SamplerSequence.fp32_cast: (SamplerTiming.graph,),
    SamplerSequence.v0_graph_inputs: (SamplerTiming.queued, SamplerTiming.wall),
}


@dataclass(frozen=True)
class SamplerFact:
    """An engine line's sampler for its benchmarks' sampling parameters, read at `version` from its wheel."""

    engine: str
    version: str
    sampler: Sampler
    source: str


SAMPLER_FACTS = (
    SamplerFact("vllm", "0.7.3", Sampler.v0_random,
                "vllm 0.7.3 wheel on PyPI: model_executor/layers/sampler.py:270-284 fp32, temperature, softmax, "
                "log_softmax; :719, :524-536 _multinomial; :485 .cpu(); worker/model_runner.py:1772-1782 after "
                ":2020 graph.replay(), :1985-1997 graph-input copies"),
    SamplerFact("vllm", "0.11.2", Sampler.v1_random,
                "vllm 0.11.2 wheel on PyPI: v1/sample/sampler.py:87, :129-139, :158; v1/sample/ops/"
                "topk_topp_sampler.py:95, :81, :220-241 random_sample; v1/worker/gpu_model_runner.py:2834, :2484"),
    SamplerFact("sglang", "0.4.3.post2", Sampler.greedy_argmax,
                "sglang 0.4.3.post2 wheel on PyPI: bench_one_batch.py:169 temperature=0; srt/layers/"
                "logits_processor.py:248 .float() in the graph; srt/layers/sampler.py:59-61 torch.argmax, :150"),
    SamplerFact("sglang", "0.5.12", Sampler.greedy_argmax,
                "sglang 0.5.12 wheel on PyPI: bench_one_batch.py:356 temperature=0; srt/layers/"
                "logits_processor.py:996 .float() in the graph; srt/layers/sampler.py:121-123 torch.argmax"),
)
#: vLLM's V1 generation word (rooflab.vocab.ENGINE_RELEASES 'v1 (0.11+)', 'v1'): the newest V1 line read.
_V1_FACT = SAMPLER_FACTS[1]


def sampler_fact(engine, version) -> tuple[Sampler, str]:
    """(the sampler `engine` at `version` runs for its benchmarks' sampling parameters, why). No engine: rooflab's
    own graphed greedy pick; vLLM's generation word v1: the newest V1 line read; a release whose line was not read,
    and TensorRT-LLM: unpriced."""
    name = engine_name(engine)
    if not name:
        return Sampler.graphed_greedy, "rooflab's own step: greedy argmax of the fp32 logits in the graph"
    if name == "tensorrt-llm":
        return Sampler.unpriced, "TensorRT-LLM's sampler not read: not priced"
    at = engine_release(version) if version else None
    if name == "vllm" and at is None and str(version or "").strip().lower().startswith("v1"):
        return _V1_FACT.sampler, (f"{_V1_FACT.sampler.value}, read at vllm {_V1_FACT.version} for V1 "
                                  f"({_V1_FACT.source})")
    fact = fact_of_line(SAMPLER_FACTS, name, version)
    if fact is not None:
        return fact.sampler, f"{fact.sampler.value}, read at {name} {fact.version} ({fact.source})"
    return Sampler.unpriced, f"{name} {version}'s sampler not read: not priced"


@dataclass(frozen=True)
class SamplerTimes:
    """The measured grid: seconds[(sequence, timing)] is [batch, vocab] (vocab-independent sequences: one column)."""

    batches: tuple[int, ...]
    vocabs: tuple[int, ...]
    seconds: dict
    meta: dict


def _fail(path: Path, line: int, field: str, value, why: str):
    raise InputError(f"{path.name} line {line}: {field} {shown(value)} {why}")


@functools.lru_cache(maxsize=4)
def load_sampler_times(path: Optional[Path] = None) -> SamplerTimes:
    """The CSV read strictly: its columns exactly COLUMNS, each sequence and timing a known one, whole positive batch
    and vocab, seconds in (0, 1), and every (sequence, timing) of MEASURED_TIMINGS at every batch and vocab once
    (v0_graph_inputs at vocab 0), else an InputError naming the line, field and value."""
    path = Path(path) if path is not None else data_dir("measurements").joinpath(*SAMPLER_CSV)
    text = path.read_text(encoding="utf-8").splitlines()
    meta = dict(line[2:].split(": ", 1) for line in text if line.startswith("# "))
    body = [(i + 1, line) for i, line in enumerate(text) if line and not line.startswith("#")]
    header = tuple(next(csv.reader([body[0][1]])))
    if header != COLUMNS:
        _fail(path, body[0][0], "header", ",".join(header), f"is not {','.join(COLUMNS)}")
    cells = {}
    for number, line in body[1:]:
        row = dict(zip(COLUMNS, next(csv.reader([line]))))
        if len(row) != len(COLUMNS) or any(v is None for v in row.values()):
            _fail(path, number, "row", line, f"does not have the {len(COLUMNS)} columns")
        seq = SamplerSequence.of(row["sequence"], f"{path.name} line {number}: sequence")
        timing = SamplerTiming.of(row["timing"], f"{path.name} line {number}: timing")
        if timing not in MEASURED_TIMINGS[seq]:
            _fail(path, number, "timing", timing.value, f"is not one {seq.value} is measured in")
        batch, vocab = (_whole(path, number, k, row[k]) for k in ("batch", "vocab"))
        seconds = _seconds(path, number, row["seconds"])
        key = (seq, timing, batch, vocab)
        if key in cells:
            _fail(path, number, "row", line, "repeats an earlier row's sequence, timing, batch and vocab")
        cells[key] = seconds
    batches = tuple(sorted({k[2] for k in cells}))
    vocabs = tuple(sorted({k[3] for k in cells if k[3]}))
    seconds = {}
    for seq, timings in MEASURED_TIMINGS.items():
        cols = (0,) if seq is SamplerSequence.v0_graph_inputs else vocabs
        for timing in timings:
            missing = [(b, v) for b in batches for v in cols if (seq, timing, b, v) not in cells]
            if missing:
                raise InputError(f"{path.name}: {seq.value} {timing.value} has no row at batch {missing[0][0]}, "
                                 f"vocab {missing[0][1]}")
            seconds[(seq, timing)] = np.array([[cells[(seq, timing, b, v)] for v in cols] for b in batches])
    if len(cells) != sum(a.size for a in seconds.values()):
        raise InputError(f"{path.name}: rows outside the grid of batches {batches} and vocabs {vocabs}")
    return SamplerTimes(batches, vocabs, seconds, meta)


def _whole(path: Path, number: int, field: str, value: str) -> int:
    if not value.isdigit() or (field == "batch" and int(value) < 1):
        _fail(path, number, field, value, "is not a whole number" + (" of at least 1" if field == "batch" else ""))
    return int(value)


def _seconds(path: Path, number: int, value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        t = math.nan
    if not 0 < t < 1:
        _fail(path, number, "seconds", value, "is not a time in (0, 1) s")
    return t


def sequence_bytes(seq: SamplerSequence, rows: int, vocab: int) -> float:
    """HBM bytes of `seq` over [rows, vocab] logits: each launch's input read once and output written once
    (SEQUENCE_OPS): sum over ops of rows x (read + write) x (vocab, or 1 for per-row work)."""
    return float(sum(rows * (op.read_bytes + op.write_bytes) * (1 if op.per_row else vocab)
                     for op in SEQUENCE_OPS[seq]))


def measured_sequence_time(times: SamplerTimes, seq: SamplerSequence, timing: SamplerTiming, rows: int, vocab: int,
                           bw: float) -> float:
    """Seconds of `seq` timed as `timing` at `rows` x `vocab`: the measured grid interpolated linearly in vocab
    (clamped below the smallest: launch-bound there), then in log(rows); past the last batch or vocab, the edge's
    time plus the extra floor bytes (sequence_bytes) at `bw` bytes per second."""
    table = times.seconds[(seq, timing)]
    cols = (0,) if seq is SamplerSequence.v0_graph_inputs else times.vocabs
    v = min(max(vocab, cols[0]), cols[-1])
    b = min(rows, times.batches[-1])
    at_vocab = [float(np.interp(v, cols, row)) if len(cols) > 1 else float(row[0]) for row in table]
    t = float(np.interp(np.log(b), np.log(times.batches), at_vocab))
    extra = sequence_bytes(seq, rows, max(vocab, v)) - sequence_bytes(seq, b, v)
    return t + max(extra, 0.0) / bw


def graph_replayed(sampler: Sampler, cuda_graphs: bool, rows, prefill_tokens=0, longest=0):
    """Whether the engine replays its CUDA graph for a step of `rows` decode rows (decodes x their query tokens)
    beside `prefill_tokens` prefill tokens, its longest sequence `longest` tokens (context + query tokens; 0: not
    known): the one rule every step path times the step's launches by (graph launch times and collectives where
    True, eager where False: step_report and explain through work.step_graphed, rooflab.step_table per step).
    Never without CUDA graphs; under vLLM V0 (v0_random) only for a decode-only step of at most
    V0_MAX_CAPTURED_BATCH rows, each sequence at most V0_MAX_CAPTURED_SEQ_LEN tokens (the constants' comment cites
    model_runner.py _use_captured_graph); the other samplers' steps as the deployment says (their engines' eager
    prefills are not read here). Elementwise on numpy arrays (StepTable's steps: `&`, not `and`)."""
    if not cuda_graphs:
        return False
    if sampler is Sampler.v0_random:
        return (prefill_tokens == 0) & (rows <= V0_MAX_CAPTURED_BATCH) & (longest <= V0_MAX_CAPTURED_SEQ_LEN)
    return True


def leaves_graph(sampler: Sampler, cuda_graphs: bool) -> bool:
    """Whether graph_replayed is False for some step of a deployment with `cuda_graphs` (a StepTable then prices
    its parts eagerly too): asked of the step furthest outside any capture (a prefill token, unbounded rows and
    length), since a step further outside is never graphed where a nearer one is not."""
    return bool(cuda_graphs) and not bool(graph_replayed(sampler, cuda_graphs, math.inf, 1, math.inf))


def outside_graph_words() -> str:
    """Why a step of a V0 deployment with CUDA graphs runs eagerly (the sampler row's label, the step's note)."""
    return (f"V0 replays its graph for a decode-only batch of at most {V0_MAX_CAPTURED_BATCH} sequences, each at "
            f"most {V0_MAX_CAPTURED_SEQ_LEN:,} tokens")


def sampler_impl(sampler: Sampler, cuda_graphs: bool) -> str:
    """The row's predicted_impl: each sequence's (sampler_sequences) torch_graph where it runs in the graph,
    torch_eager where eagerly, in order, once each, joined by ' + '."""
    return " + ".join(dict.fromkeys("torch_graph" if graphed and cuda_graphs else "torch_eager"
                                    for _, graphed in sampler_sequences(sampler, cuda_graphs)))


def sampler_words(sampler: Sampler, cuda_graphs: bool) -> str:
    """What the sampler runs, in the row's label (SAMPLER_WORDS, EAGER_SAMPLER_WORDS without CUDA graphs)."""
    return (SAMPLER_WORDS if cuda_graphs else EAGER_SAMPLER_WORDS)[sampler]


def sampler_sequences(sampler: Sampler, cuda_graphs: bool) -> tuple:
    """The sampler's (sequence, graphed) pairs as a deployment runs them: SAMPLER_SEQUENCES, less V0's copies into
    the graph's static buffers without CUDA graphs (no graph: model_runner.py runs the model eagerly, no
    CUDAGraphRunner)."""
    return tuple((seq, graphed) for seq, graphed in SAMPLER_SEQUENCES[sampler]
                 if cuda_graphs or seq is not SamplerSequence.v0_graph_inputs)


def sampler_kernels(sampler: Sampler, rows: int, vocab: int, cuda_graphs: bool = True) -> list[KernelCost]:
    """The sampler's launches over [rows, vocab] logits (sampler_sequences), one KernelCost each (SEQUENCE_OPS): an
    operation an element on the vector pipe, sequence_bytes' bytes."""
    kernels = []
    for seq, _ in sampler_sequences(sampler, cuda_graphs):
        for op in SEQUENCE_OPS[seq]:
            elements = rows * (1 if op.per_row else vocab)
            kernels.append(KernelCost(op.name, np.float64(elements),
                                      np.float64(elements * (op.read_bytes + op.write_bytes)), Pipe.vector))
    return kernels


@dataclass(frozen=True)
class SamplerTime:
    """The sampler's predicted seconds (None: no prediction), each sequence's share (sequence, timing, seconds),
    where they come from and the note that says how."""

    t_s: Optional[float]
    parts: tuple = ()
    provenance: Optional[str] = None
    note: str = ""


def sampler_time(sampler: Sampler, gpu, rows: int, vocab: int, eager: bool,
                 eager_host_s: Optional[float]) -> SamplerTime:
    """Seconds of `sampler` over [rows, vocab] logits on `gpu` (a GpuSpec): the sum of its sequences
    (sampler_sequences; `eager`: no CUDA graphs), each at its
    measured time (measured_sequence_time), eager ones `queued` under CUDA graphs and `wall` without them (`eager`),
    graphed ones at their graph time (eager: never below `eager_host_s` a launch), all of it the H200's (past the
    grid extrapolated at the H200's copy bandwidth); another NVIDIA GPU adds max(floor bytes / its HBM bandwidth -
    floor bytes / the H200's, 0) (a transfer); other vendors: no prediction (the module docstring)."""
    if (gpu.vendor or "").lower() != "nvidia":
        return SamplerTime(None, note=f"no sampler times transfer to {gpu.vendor or 'this vendor'}'s {gpu.name} "
                                      f"(measured on {SAMPLER_GPU}, an NVIDIA GPU)")
    times, ref = load_sampler_times(), _reference_gpu()
    bw = ref.measured.copy_bytes_per_s if ref.measured else ref.hbm_bandwidth_bytes_per_s   # the H200's time first
    parts = []
    for seq, graphed in sampler_sequences(sampler, not eager):
        timing = SamplerTiming.graph if graphed else (SamplerTiming.wall if eager else SamplerTiming.queued)
        t = measured_sequence_time(times, seq, timing, rows, vocab, bw)
        if graphed and eager and eager_host_s is not None:
            t = max(t, len(SEQUENCE_OPS[seq]) * eager_host_s)
        if gpu.name != SAMPLER_GPU:
            nbytes = sequence_bytes(seq, rows, vocab)
            t += max(nbytes / gpu.hbm_bandwidth_bytes_per_s - nbytes / ref.hbm_bandwidth_bytes_per_s, 0.0)
        parts.append((seq, timing, t))
    total = sum(t for _, _, t in parts)
    if gpu.name == SAMPLER_GPU:
        return SamplerTime(total, tuple(parts), MEASURED_HERE)
    added = ("the extra time of its slower HBM over the floor bytes added"
             if gpu.hbm_bandwidth_bytes_per_s < ref.hbm_bandwidth_bytes_per_s else
             f"nothing added for its HBM, no slower than {SAMPLER_GPU}'s")
    return SamplerTime(total, tuple(parts), f"transferred from {SAMPLER_GPU}",
                       f"sampling after the graph: {SAMPLER_GPU}'s measured times transferred to {gpu.name}, "
                       f"{added} (launches and host issue assumed the same)")


@functools.lru_cache(maxsize=1)
def _reference_gpu():
    from ..load import load_gpu
    return load_gpu(SAMPLER_GPU)


def sampler_of(value) -> Sampler:
    """`value` as a Sampler (a member or its name), else an InputError naming `sampler`."""
    return Sampler.of(value, "sampler")


__all__ = ["EAGER_SAMPLER_WORDS", "MEASURED_TIMINGS", "SAMPLER_FACTS", "SAMPLER_GPU", "SAMPLER_SEQUENCES",
           "SAMPLING_VARIANT", "SEQUENCE_OPS", "V0_GRAPH_INPUT_BYTES_PER_ROW", "V0_MAX_CAPTURED_BATCH",
           "V0_MAX_CAPTURED_SEQ_LEN", "graph_replayed", "leaves_graph", "load_sampler_times", "measured_sequence_time",
           "outside_graph_words", "Sampler",
           "sampler_fact", "sampler_impl", "sampler_kernels", "sampler_of", "sampler_sequences", "sampler_time",
           "sampler_words", "SamplerFact", "SamplerOp", "SamplerSequence", "SamplerTime", "SamplerTimes",
           "SamplerTiming", "sequence_bytes"]
