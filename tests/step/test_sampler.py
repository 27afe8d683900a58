"""rooflab.step.sampler: what picks the tokens after the model's graph, by engine release (the facts read from the
wheels: vllm 0.7.3 and 0.11.2, sglang 0.4.3.post2 and 0.5.12), its floor bytes by hand, its measured times
(measurements/launch/h200-sampler.csv, benchmarks/sampler_device_run.py) read strictly and interpolated, and one
figure through step_report, explain, the StepTable and serve."""

import csv
import math

import pytest

from rooflab.deployment import Deployment, Speculative
from rooflab.errors import InputError
from rooflab.explain.step import explain_step
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.serve.steptime import step_times
from rooflab.step import engine_kernels, step_report
from rooflab.step.sampler import (SAMPLER_SEQUENCES, SAMPLING_VARIANT, SEQUENCE_OPS, Sampler, SamplerSequence,
                                  SamplerTiming, load_sampler_times, measured_sequence_time, sampler_fact,
                                  sampler_time, sequence_bytes)
from rooflab.step_table import StepTable

CSV = data_dir("measurements") / "launch" / "h200-sampler.csv"
H200, LLAMA = load_gpu("h200-sxm"), load_model("llama-3-8b")
BW = H200.measured.copy_bytes_per_s


def _csv_rows() -> dict:
    lines = [line for line in CSV.read_text().splitlines() if line and not line.startswith("#")]
    return {(r["sequence"], int(r["batch"]), int(r["vocab"]), r["timing"]): float(r["seconds"])
            for r in csv.DictReader(lines)}


def _sampling_rows(report):
    return [r for r in report.rows if r.variant == SAMPLING_VARIANT]


@pytest.mark.parametrize("engine, version, expected", [
    ("vllm", "0.7.3", Sampler.v0_random), ("vllm", "0.7.4.dev181+gf35f8e22", Sampler.v0_random),
    ("vllm", "v1 (0.11+)", Sampler.v1_random), ("vllm", "0.11.0", Sampler.v1_random),
    ("vllm", "0.9.0", Sampler.unpriced), ("vllm", "0.6.3", Sampler.unpriced),
    ("sglang", "0.4.3.post2", Sampler.greedy_argmax), ("sglang", "0.5", Sampler.greedy_argmax),
    ("sglang", "0.3.0", Sampler.unpriced), ("tensorrt-llm", "1.0", Sampler.unpriced),
    (None, None, Sampler.graphed_greedy),
])
def test_the_release_facts_pick_the_sampler(engine, version, expected):
    assert sampler_fact(engine, version)[0] is expected


def test_the_op_facts():
    """V0 computes log_softmax beside softmax and gathers the sampled rows (vllm 0.7.3 sampler.py:284, :719); V1 does
    neither without logprobs (v1/sample/sampler.py:79-84); both draw the exponential race eagerly after the graph;
    SGLang's fp32 cast is in the graph (logits_processor.py:248), its argmax after it; rooflab's own graphs both."""
    names = {seq: [op.name for op in ops] for seq, ops in SEQUENCE_OPS.items()}
    assert "log_softmax" in names[SamplerSequence.v0_random] and "gather rows" in names[SamplerSequence.v0_random]
    v1 = names[SamplerSequence.v1_random]
    assert "log_softmax" not in v1 and "gather rows" not in v1
    for seq in (SamplerSequence.v0_random, SamplerSequence.v1_random):
        assert names[seq][0] == "to fp32" and names[seq][-3:] == ["probs / q", "argmax", "tokens to host"]
    assert SAMPLER_SEQUENCES[Sampler.v0_random] == ((SamplerSequence.v0_random, False),
                                                    (SamplerSequence.v0_graph_inputs, False))
    assert SAMPLER_SEQUENCES[Sampler.greedy_argmax] == ((SamplerSequence.fp32_cast, True),
                                                        (SamplerSequence.greedy_argmax, False))
    assert all(graphed for _, graphed in SAMPLER_SEQUENCES[Sampler.graphed_greedy])
    assert len(SEQUENCE_OPS[SamplerSequence.v0_graph_inputs]) == 5


def test_the_csv_loads_whole():
    times = load_sampler_times()
    assert times.batches == (1, 8, 32, 64, 100, 128, 256) and times.vocabs == (32000, 128256, 129280, 151936)
    assert times.meta["device_name"] == "NVIDIA H200" and times.meta["date"].startswith("2026-12-03")
    assert times.seconds[(SamplerSequence.v0_graph_inputs, SamplerTiming.queued)].shape == (7, 1)
    assert times.seconds[(SamplerSequence.v0_random, SamplerTiming.wall)].shape == (7, 4)


@pytest.mark.parametrize("edit, named", [
    (lambda t: t.replace("sequence,batch,vocab,timing", "sequence,batch,vocabulary,timing"), "header"),
    (lambda t: t.replace("v1_random,8,32000,queued", "v2_random,8,32000,queued"), "sequence"),
    (lambda t: t.replace("fp32_cast,8,32000,graph", "fp32_cast,8,32000,queued"), "timing"),
    (lambda t: t.replace("v1_random,8,32000,queued,", "v1_random,8,32000,queued,-"), "seconds"),
    (lambda t: t.replace("v1_random,8,32000,queued", "v1_random,8x,32000,queued"), "batch"),
    (lambda t: t + t.splitlines()[-1] + "\n", "repeats"),
    (lambda t: "\n".join(x for x in t.splitlines() if not x.startswith("v1_random,8,32000,wall")) + "\n", "no row"),
])
def test_the_csv_is_read_strictly(tmp_path, edit, named):
    bad = tmp_path / "h200-sampler.csv"
    bad.write_text(edit(CSV.read_text()))
    with pytest.raises(InputError, match=named):
        load_sampler_times(bad)


def test_floor_bytes_by_hand():
    """Each launch reads its input once and writes its output once (sequence_bytes): V0 at 8 x 128,256 moves, a
    logit, cast 2 + 4, temperature 4 + 4, softmax 4 + 4, log_softmax 4 + 4, gather 4 + 4, the draw 4, probs / q
    8 + 4, argmax 4 = 58 bytes; a row, the int32 -> int64 indices 4 + 8 and the token to the host 8 = 20 bytes;
    and the graph inputs' 5 copies, read and written, 2 x (8 + 8 + 8 + 4 + 512 x 4) = 4,152 bytes a row."""
    rows, vocab = 8, 128256
    assert sequence_bytes(SamplerSequence.v0_random, rows, vocab) == rows * vocab * 58 + rows * 20
    assert sequence_bytes(SamplerSequence.v0_graph_inputs, rows, vocab) == rows * 4152
    report = step_report(LLAMA, H200, rows, 96, engine="vllm", engine_version="0.7.3")
    (row,) = _sampling_rows(report)
    assert row.hbm_bytes == rows * vocab * 58 + rows * 20 + rows * 4152
    assert row.t_memory_s == pytest.approx(row.hbm_bytes / H200.hbm_bandwidth_bytes_per_s, rel=1e-12)
    assert row.t_floor_s <= row.t_predicted_s and row.calls == 15 and row.part == "sequences"


def test_the_interpolation_at_a_grid_point_is_the_csv_row():
    times, rows = load_sampler_times(), _csv_rows()
    for (seq, b, v, timing), seconds in rows.items():
        got = measured_sequence_time(times, SamplerSequence(seq), SamplerTiming(timing), b, v or 32000, BW)
        assert got == pytest.approx(seconds, rel=1e-12), (seq, b, v, timing)


def test_between_and_past_the_grid():
    """Between grid points the time lies between its neighbours; past the last batch the extra bytes stream at the
    copy bandwidth."""
    times, rows = load_sampler_times(), _csv_rows()
    seq, timing = SamplerSequence.v0_random, SamplerTiming.queued
    mid = measured_sequence_time(times, seq, timing, 48, 128256, BW)
    lo, hi = rows[(seq.value, 32, 128256, "queued")], rows[(seq.value, 64, 128256, "queued")]
    assert min(lo, hi) < mid < max(lo, hi)
    past = measured_sequence_time(times, seq, timing, 512, 128256, BW)
    extra = sequence_bytes(seq, 512, 128256) - sequence_bytes(seq, 256, 128256)
    assert past == pytest.approx(rows[(seq.value, 256, 128256, "queued")] + extra / BW, rel=1e-12)


@pytest.mark.parametrize("engine, version", [("vllm", "0.7.3"), ("vllm", None), ("sglang", "0.4.3.post2"),
                                             (None, None)])
def test_report_explain_table_and_serve_agree(engine, version):
    """One figure through the single aggregator: the step's sampling row is sampler_time's sum of its measured
    sequences; explain derives the same; a StepTable and serve's step times at a grid point equal step_report."""
    dep = Deployment()
    kernels = engine_kernels(LLAMA, H200, dep, engine, version)
    report = step_report(LLAMA, H200, 8, 1024, deployment=dep, engine=engine, engine_version=version,
                         check_memory=False)
    (row,) = _sampling_rows(report)
    expected = sampler_time(kernels.sampler, H200, 8, LLAMA.vocab_size, False, None)
    assert row.t_predicted_s == pytest.approx(expected.t_s, rel=1e-12)
    assert row.predicted_from == "measured on this GPU" or row.predicted_from == expected.provenance
    explained = explain_step(LLAMA, H200, 8, 1024, deployment=dep, engine=engine, engine_version=version)
    assert explained.report.t_predicted_s == pytest.approx(report.t_predicted_s, rel=1e-12)
    table = StepTable.build(LLAMA, H200, dep, max_decodes=64, max_context=8192, max_prefill=2048,
                            moe_kernel=kernels.moe_kernel, decode_attention=kernels.decode_attention,
                            sampler=kernels.sampler)
    d = int(sorted(set(table.decodes_grid) & set(table.sequences_grid) & set(table.tokens_grid))[2])
    length = float(table.context_grid[4])
    r = step_report(LLAMA, H200, d, int(length), deployment=dep, engine=engine, engine_version=version,
                    check_memory=False)
    assert _sampling_rows(r)
    _, pred = table.time_s(d, d * length, 0)
    assert float(pred) == pytest.approx(r.t_predicted_s, rel=1e-9)
    serve = step_times(LLAMA, H200, dep, 64, int(table.context_grid[0]), 8192, 2048, moe_kernel=kernels.moe_kernel,
                       decode_attention=kernels.decode_attention, sampler=kernels.sampler)
    assert serve.predicted_s(d, d * length, 0).item() == pytest.approx(r.t_predicted_s, rel=1e-9)
    if kernels.sampler is not Sampler.graphed_greedy:
        assert f"sampler {kernels.sampler.value}" in serve.provenance


def test_unpriced_speculative_and_other_vendors():
    """TensorRT-LLM's sampler is not read: no row; drafts verified by a rejection sampler: no row, noted; an AMD GPU
    gets no sampler time transferred (the missing note names it)."""
    assert not _sampling_rows(step_report(LLAMA, H200, 8, 96, engine="tensorrt-llm"))
    spec = step_report(LLAMA, H200, 8, 96, deployment=Deployment(speculative=Speculative("eagle", 3, 0.7)))
    assert not _sampling_rows(spec) and any("rejection sampler" in n for n in spec.notes)
    amd = sampler_time(Sampler.v0_random, load_gpu("mi300x"), 8, 128256, False, None)
    assert amd.t_s is None and "mi300x" in amd.note


def test_another_nvidia_gpu_takes_the_h200s_times_with_its_slower_hbm():
    a100 = load_gpu("a100-sxm-80gb")
    here = sampler_time(Sampler.v1_random, H200, 64, 128256, False, None)
    there = sampler_time(Sampler.v1_random, a100, 64, 128256, False, None)
    nbytes = sequence_bytes(SamplerSequence.v1_random, 64, 128256)
    extra = nbytes / a100.hbm_bandwidth_bytes_per_s - nbytes / H200.hbm_bandwidth_bytes_per_s
    assert there.t_s == pytest.approx(here.t_s + extra, rel=1e-12) and extra > 0
    assert there.provenance == "transferred from h200-sxm" and "transferred" in there.note
    assert not math.isnan(there.t_s)


def test_an_explicit_sampler_and_its_refusals():
    """step_report(sampler=) picks one for rooflab's own step ("unpriced": no row); one that contradicts the named
    engine's is refused, naming both; an unknown name is refused naming the option."""
    assert not _sampling_rows(step_report(LLAMA, H200, 8, 96, sampler="unpriced"))
    (row,) = _sampling_rows(step_report(LLAMA, H200, 8, 96, sampler="v1_random"))
    assert row.label.startswith("sampling after the graph (vLLM V1")
    with pytest.raises(InputError, match="sampler v1_random contradicts vllm 0.7.3"):
        step_report(LLAMA, H200, 8, 96, engine="vllm", engine_version="0.7.3", sampler="v1_random")
    with pytest.raises(InputError, match="sampler must be one of"):
        step_report(LLAMA, H200, 8, 96, sampler="top_k")


def test_an_eager_deployment_prices_the_wall_time():
    """Without CUDA graphs the host issues every launch: the eager sequences at their `wall` times, V0 copies
    nothing into a graph's buffers, and SGLang's cast is never below the host's issue time a launch."""
    dep = Deployment(cuda_graphs=False)
    (row,) = _sampling_rows(step_report(LLAMA, H200, 8, 96, deployment=dep, engine="vllm", engine_version="0.7.3"))
    rows = _csv_rows()
    assert row.t_predicted_s == pytest.approx(rows[("v0_random", 8, 128256, "wall")], rel=1e-12)
    assert row.calls == len(SEQUENCE_OPS[SamplerSequence.v0_random])
    (row,) = _sampling_rows(step_report(LLAMA, H200, 8, 96, deployment=dep, engine="sglang",
                                        engine_version="0.4.3.post2"))
    host = H200.measured.launch.eager_host_s
    assert row.t_predicted_s == pytest.approx(max(rows[("fp32_cast", 8, 128256, "graph")], host)
                                              + rows[("greedy_argmax", 8, 128256, "wall")], rel=1e-12)


@pytest.mark.parametrize("step, chunk, batch, context", [("prefill", 0, 8, 2048), ("decode", 512, 8, 2048),
                                                         ("decode", 0, 257, 128), ("decode", 0, 8, 8192)])
def test_v0_runs_eagerly_outside_a_graphed_decode(step, chunk, batch, context):
    """vLLM V0 replays its graph only for a decode-only batch of at most 256 sequences of at most 8,192 tokens
    (model_runner.py _use_captured_graph): a prefill, a mixed step, batch 257 and a 8,193-token sequence run the model
    eagerly: the sampler's row has no graph-input copies, its time is v0_random's `wall` and its impl eager; batch 256
    at 8,191 tokens of context is still graphed."""
    report = step_report(LLAMA, H200, batch, context, step=step, prefill_tokens=chunk, engine="vllm",
                         engine_version="0.7.3", check_memory=False)
    (row,) = _sampling_rows(report)
    rows = report.batch + (1 if chunk else 0)
    times = load_sampler_times()
    wall = measured_sequence_time(times, SamplerSequence.v0_random, SamplerTiming.wall, rows, LLAMA.vocab_size, BW)
    assert row.t_predicted_s == pytest.approx(wall, rel=1e-12)
    assert "copies into the graph's inputs" not in row.label and "the model eager" in row.label
    assert row.predicted_impl == "torch_eager" and row.calls == len(SEQUENCE_OPS[SamplerSequence.v0_random])
    (graphed,) = _sampling_rows(step_report(LLAMA, H200, 256, 8191, engine="vllm", engine_version="0.7.3",
                                            check_memory=False))
    assert "5 copies into the graph's inputs" in graphed.label and "the model eager" not in graphed.label


@pytest.mark.parametrize("engine, version, cuda_graphs, impl", [
    ("vllm", "0.7.3", True, "torch_eager"), ("vllm", "0.11.2", True, "torch_eager"),
    ("sglang", "0.5.12", True, "torch_graph + torch_eager"), (None, None, True, "torch_graph"),
    ("vllm", "0.11.2", False, "torch_eager"), ("sglang", "0.5.12", False, "torch_eager"),
    (None, None, False, "torch_eager"),
])
def test_the_rows_impl_and_words_say_where_each_sequence_runs(engine, version, cuda_graphs, impl):
    """V0's and V1's samplers run eagerly after the graph, SGLang's cast in the graph and its argmax eagerly,
    rooflab's own both in the graph; without CUDA graphs everything is eager and the label says no graph."""
    dep = Deployment(cuda_graphs=cuda_graphs)
    (row,) = _sampling_rows(step_report(LLAMA, H200, 8, 96, deployment=dep, engine=engine, engine_version=version))
    assert row.predicted_impl == impl, (row.predicted_impl, row.label)
    assert ("in the graph" in row.label) is (cuda_graphs and "torch_graph" in impl), row.label


def test_serve_says_the_sampler_is_measured():
    """Serve's provenance says the sampler's times were measured, and where; the rest of the step fitted."""
    serve = step_times(LLAMA, H200, Deployment(), 16, 16, 1024, 512, sampler="v0_random")
    assert "sampler v0_random measured on h200-sxm (measurements/launch/h200-sampler.csv)" in serve.provenance
    assert "v0_random) fitted" not in serve.provenance and "fitted on h200-sxm" in serve.provenance


def test_speculative_decoding_names_no_sampler():
    """Under speculative decoding no sampler is priced: the kernels note names none beside the note that says so."""
    dep = Deployment(speculative=Speculative("eagle", 3, 0.7))
    for version in ("0.7.3", "0.11.2"):
        report = step_report(LLAMA, H200, 8, 96, deployment=dep, engine="vllm", engine_version=version)
        kernels = [n for n in report.notes if n.startswith("kernels:")]
        assert kernels and not any("sampling" in n or "random" in n for n in kernels), kernels
        assert any("rejection sampler" in n for n in report.notes) and not _sampling_rows(report)


def test_graph_replayed_is_v0s_capture_rule_at_its_edges_and_elementwise():
    """graph_replayed, the one rule: vLLM 0.7.3 worker/model_runner.py _use_captured_graph replays the graph for a
    decode-only step (no prefill token) of at most 256 rows (config.py max_capture_size at max_num_seqs 256), each
    sequence at most 8,192 tokens (arg_utils.py max_seq_len_to_capture); never without CUDA graphs; every other
    sampler's engine as the deployment says. On numpy arrays it is the same rule point by point (StepTable)."""
    import numpy as np

    from rooflab.step.sampler import graph_replayed, leaves_graph

    v0 = Sampler.v0_random
    assert graph_replayed(v0, True, 256, 0, 8192) and graph_replayed(v0, True, 1, 0, 0)
    for rows, prefill, longest in ((257, 0, 512), (8, 0, 8193), (8, 1, 512), (0, 512, 0)):
        assert not graph_replayed(v0, True, rows, prefill, longest), (rows, prefill, longest)
    assert not graph_replayed(v0, False, 8, 0, 512)
    for sampler in (Sampler.v1_random, Sampler.greedy_argmax, Sampler.graphed_greedy, Sampler.unpriced):
        assert graph_replayed(sampler, True, 4096, 512, 100_000) and not graph_replayed(sampler, False, 1, 0, 1)
    rows, prefill, longest = np.array([256, 257, 8, 8]), np.array([0, 0, 0, 1]), np.array([8192, 100, 8193, 100])
    assert graph_replayed(v0, True, rows, prefill, longest).tolist() == [True, False, False, False]
    assert leaves_graph(v0, True) and not leaves_graph(v0, False)
    assert not any(leaves_graph(s, True) for s in Sampler if s is not v0)
