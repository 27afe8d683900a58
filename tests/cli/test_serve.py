"""`rooflab serve` (rooflab/cli/serve.py): every option's bad values are usage errors (exit 2) whose first line names
the option; the curve, a simulated run and an SLO search print strict JSON; options that do not go together are
refused; the predictions' provenance is printed (and why there are none on a GPU without fits)."""

import json
import re

import pytest
from typer.testing import CliRunner

from rooflab.cli import app

runner = CliRunner()

#: A small, fast case: Llama-3-8B on one H200 (fitted), a short table (concurrency up to 8).
BASE = ["serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--input-len", "512", "--output-len", "64",
        "--max-concurrency", "8"]
HUGE = "9" * 30

#: Values every numeric option refuses (exceptions below: those where the value is valid).
BAD_NUMBERS = ["0", "-1", "nan", "inf", "1e300", "", HUGE]
NUMERIC = ["--tp", "--input-len", "--output-len", "--random-range-ratio", "--request-rate", "--burstiness",
           "--num-prompts", "--seed", "--ttft-slo", "--tpot-slo", "--target-rate", "--block-size",
           "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens", "--prefix-cache-hit-rate",
           "--max-concurrency"]
VALID = {("--random-range-ratio", "0"), ("--request-rate", "inf"), ("--seed", "0"),
         ("--prefix-cache-hit-rate", "0")}
TEXT = {"--engine": ["", "tgi"], "--lengths": ["", "sharegpt"], "--quantization": ["", "awq"],
        "--kv-cache-dtype": ["", "fp7"], "--model": ["", "no-such-model"], "--gpu": ["", "no-such-gpu"],
        "--format": ["", "xml"]}
CASES = [(o, v) for o in NUMERIC for v in BAD_NUMBERS if (o, v) not in VALID]
CASES += [(o, v) for o, values in TEXT.items() for v in values]
CASES += [("--random-range-ratio", "1.5"), ("--prefix-cache-hit-rate", "1"), ("--ttft-slo", "ms"),
          ("--tpot-slo", "30xs"), ("--max-concurrency", ","), ("--max-concurrency", "4,,8")]


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("option, value", CASES)
def test_a_bad_value_is_a_usage_error_naming_the_option(option, value):
    r = runner.invoke(app, BASE + [option, value])
    first = r.output.strip().splitlines()[0] if r.output.strip() else ""
    assert r.exit_code == 2, (option, value, r.output)
    assert "Traceback" not in r.output and first.startswith("error"), r.output
    named = option if option not in ("--model", "--gpu") else option.lstrip("-")
    assert named in first or (option == "--format" and "format" in r.output), r.output


@pytest.mark.parametrize("extra, message", [
    (["--request-rate", "2", "--max-concurrency", "16"], "takes one value"),
    (["--simulate", "--max-concurrency", "16"], "takes one value"),
    (["--simulate", "--tpot-slo", "30ms"], "not with --request-rate or --simulate"),
    (["--request-rate", "2", "--ttft-slo", "1"], "not with --request-rate or --simulate"),
    (["--num-prompts", "100"], "--num-prompts goes with"),
    (["--burstiness", "0.5"], "--burstiness goes with"),
    (["--simulate", "--burstiness", "0.5"], "--burstiness goes with --request-rate"),
    (["--target-rate", "10"], "--target-rate goes with"),
])
def test_options_that_do_not_go_together(extra, message):
    r = runner.invoke(app, BASE + extra)
    assert r.exit_code == 2 and message in r.output, r.output


def test_simulate_needs_a_concurrency():
    r = runner.invoke(app, ["serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--simulate"])
    assert r.exit_code == 2 and "--simulate takes one --max-concurrency" in r.output


@pytest.mark.parametrize("extra", [
    [],
    ["--max-concurrency", "1,2,4"],
    ["--simulate", "--num-prompts", "40"],
    ["--request-rate", "4", "--num-prompts", "60", "--burstiness", "0.5"],
    ["--request-rate", "inf", "--num-prompts", "30"],
    ["--tpot-slo", "30ms", "--ttft-slo", "0.5s", "--target-rate", "12"],
    ["--ttft-slo", "1e-6"],                          # nothing meets it: nulls, not NaN
    ["--engine", "sglang", "--enable-mixed-chunk", "--prefix-cache-hit-rate", "0.5"],
    ["--engine", "tensorrt-llm", "--max-num-seqs", "4", "--max-num-batched-tokens", "1024"],
])
def test_json_is_strict(extra):
    r = runner.invoke(app, BASE + extra + ["-f", "json"])
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)
    source = doc["predicted_from"]             # the engine's kernels in brackets where they differ; its sampler measured
    assert re.fullmatch(r"rooflab's step model \(rooflab report --phase step\) (\(.*\) )?fitted on h200-sxm"
                        r"(; sampler \w+ measured on h200-sxm \(measurements/launch/h200-sampler\.csv\))?",
                        source), source


def test_the_curve_has_floors_and_predictions_and_names_its_source():
    r = runner.invoke(app, BASE + ["--max-concurrency", "1,8", "-f", "json"])
    points = _strict(r.stdout)["points"]
    assert {(p["concurrency"], p["estimate"]) for p in points} == {(c, e) for c in (1, 8)
                                                                   for e in ("floor", "predicted")}
    for c in (1, 8):
        floor, predicted = (next(p for p in points if p["concurrency"] == c and p["estimate"] == e)
                            for e in ("floor", "predicted"))
        assert floor["tpot_s"] <= predicted["tpot_s"]
        assert floor["output_tokens_per_s_per_gpu"] >= predicted["output_tokens_per_s_per_gpu"]


def test_a_gpu_without_fits_shows_transferred_predictions_or_says_why_not():
    """The H100 has no fits of its own: its kernels' and GEMMs' predictions transfer from the H200 (rooflab.transfer,
    with their error band); collectives are fitted per interconnect and do not, so TP > 1 prints floors and why."""
    r = runner.invoke(app, ["serve", "-m", "llama-3-8b", "-g", "h100-sxm", "--max-concurrency", "1,4", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)
    assert "transferred from h200-sxm: error band" in doc["predicted_from"]
    assert {p["estimate"] for p in doc["points"]} == {"floor", "predicted"}
    r = runner.invoke(app, ["serve", "-m", "llama-3-8b", "-g", "h100-sxm", "--tp", "2", "--max-concurrency", "1,4"])
    assert r.exit_code == 0, r.output
    assert "predicted: no prediction for" in r.stdout and "no prediction for all_reduce" in r.stdout
    assert " predicted " not in r.stdout


def test_the_slo_search_answers_replicas_and_gpus():
    r = runner.invoke(app, ["serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--tp", "2", "--input-len", "512",
                            "--output-len", "64", "--max-concurrency", "32", "--tpot-slo", "1s",
                            "--target-rate", "1000", "-f", "json"])
    assert r.exit_code == 0, r.output
    for answer in _strict(r.stdout)["answers"]:
        assert answer["concurrency"] == 32 and answer["binding"] == "max concurrency"
        assert answer["gpus"] == 2 * answer["replicas"]
        assert answer["replicas"] * answer["at_requests_per_s"] >= 1000


def test_max_concurrency_takes_at_most_a_bounded_sweep():
    """The hostile round (issue 24): 5,001 --max-concurrency values ran past its 120 s watchdog."""
    from rooflab.cli.serve import MAX_CONCURRENCIES

    result = CliRunner().invoke(app, ["serve", "--max-concurrency", ",".join(map(str, range(1, MAX_CONCURRENCIES + 2)))])
    assert result.exit_code == 2 and "a sweep takes at most 1,024" in result.stderr


def _kv_limit(words):
    """serve's KV limit for gpt-oss-20b (mxfp4 experts) on an H200 under `words`; 'refused' for exit 2."""
    r = runner.invoke(app, ["serve", "-m", "gpt-oss-20b", "-g", "h200-sxm", "--input-len", "512", "--output-len",
                            "64", "--max-concurrency", "8", *words, "-f", "json"])
    assert r.exit_code in (0, 2) and "Traceback" not in r.output, r.output
    return _strict(r.stdout)["kv_limit"] if r.exit_code == 0 else ("refused", r.stderr)


def test_q_names_the_checkpoints_method_as_capacity_reads_it():
    """Hostile round 3's D26: -q resolves as in capacity and the step (DeploymentWords.resolve(checkpoint=...)):
    mxfp4, gpt-oss's own method, is as shipped; fp8 is a method mismatch, refused as vLLM refuses it; the fp8
    format is --weight-dtype fp8, whose heavier weights leave less room for KV."""
    shipped = _kv_limit([])
    assert _kv_limit(["-q", "mxfp4"]) == shipped
    refused, why = _kv_limit(["-q", "fp8"])
    assert refused == "refused" and "-q" in why and "mxfp4" in why
    assert _kv_limit(["--weight-dtype", "fp8"]) < shipped
    r = runner.invoke(app, ["capacity", "-m", "gpt-oss-20b", "-g", "h200-sxm", "-q", "fp8"])
    assert r.exit_code == 2


def _sweep_json(args):
    r = runner.invoke(app, [*args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return _strict(r.stdout)


def _api_sweep(model, gpu, deployment, engine, concurrency, input_len, output_len):
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu, load_model
    from rooflab.serve import Replica, Scheduler, Workload, concurrency_sweep

    g = load_gpu(gpu)
    dep = Deployment(**deployment)
    drafts = {} if engine != "sglang" or dep.speculative is None else {"speculative": dep.speculative.method.value}
    replica = Replica.build(load_model(model), g, dep, Workload.fixed(input_len, output_len),
                            Scheduler.default(engine, g.cuda_visible_bytes or g.hbm_capacity_bytes, **drafts),
                            max_concurrency=concurrency)
    return concurrency_sweep(replica, [concurrency]).records()


@pytest.mark.parametrize("args, deployment, engine", [
    (["--engine", "sglang", "--ep-size", "2"], dict(expert_parallel=2), "sglang"),
    (["--enable-expert-parallel"], dict(expert_parallel=2), "vllm"),           # vLLM's switch: EP = TP x DP = 2
    (["--enforce-eager"], dict(cuda_graphs=False), "vllm"),
    (["--engine", "sglang", "--disable-cuda-graph"], dict(cuda_graphs=False), "sglang"),
    (["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}'],
     dict(speculative=("eagle", 3, 0.7)), "vllm"),
    (["--engine", "sglang", "--speculative-algorithm", "EAGLE", "--speculative-num-draft-tokens", "4",
      "--acceptance-rate", "0.6"], dict(speculative=("eagle", 3, 0.6)), "sglang"),
])
def test_the_steps_parallelism_and_graphs_reach_the_replica(args, deployment, engine):
    """serve takes report --phase step's spellings of EP and graphs (serve.Parallel, deployment_options.
    parallel_degrees) and its figures are the API's for the same Deployment (one path): Mixtral-8x7B on two
    H200s, TP 2, concurrency 8, 256 in / 32 out."""
    base = ["serve", "-m", "mixtral-8x7b", "-g", "h200-sxm", "-tp", "2", "--input-len", "256", "--output-len", "32",
            "--max-concurrency", "8"]
    cli = _sweep_json(base + args)
    from rooflab.deployment import Speculative
    from rooflab.units import DType

    if "speculative" in deployment:
        deployment = dict(deployment, speculative=Speculative(*deployment["speculative"]))
    dep = dict(tensor_parallel=2, dtype=DType.bf16, kv_cache_dtype=DType.bf16, **deployment)
    api = _api_sweep("mixtral-8x7b", "h200-sxm", dep, engine, 8, 256, 32)
    rows = {r["estimate"]: r for r in cli["points"]}
    for record in api:
        assert rows[record["estimate"]]["tpot_s"] == pytest.approx(record["tpot_s"], rel=1e-9)
    plain = {r["estimate"]: r for r in _sweep_json(base + (["--engine", "sglang"] if engine == "sglang" else []))
             ["points"]}
    assert rows["predicted"]["tpot_s"] != plain["predicted"]["tpot_s"]       # the option changed the step


@pytest.mark.parametrize("args, words", [
    (["--pp", "2"], ["--pp 2", "report --phase step --pp 2"]),
    (["-tp", "2", "--dp", "2"], ["data-parallel replicas", "--data-parallel-size"]),
    (["-tp", "2", "--engine", "sglang", "--enable-dp-attention", "--simulate"], ["attention", "closed form"]),
    (["-tp", "2", "--ep", "2"], ["--ep 2", "--enable-expert-parallel"]),      # the default engine is vLLM
    (["-tp", "2", "--engine", "sglang", "--ep", "2", "--enable-expert-parallel"], ["vLLM's switch", "--ep-size"]),
    (["-tp", "2", "--acceptance-rate", "0.5"], ["--acceptance-rate", "--speculative-config"]),
    (["-tp", "2", "--engine", "sglang", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
     ["--speculative-config is vLLM's"]),
    (["-tp", "2", "--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}', "--simulate"],
     ["closed form"]),
    (["-tp", "2", "--engine", "sglang", "--kv-cache-dtype", "fp8"], ["not one SGLang takes", "fp8_e4m3"]),
    (["-tp", "2", "--kv-cache-dtype", "fp8_ds_mla"], ["fp8_ds_mla", "no MLA layer"]),
    (["-tp", "2", "--engine", "sglang", "--dp", "2"], ["--dp-size without --enable-dp-attention"]),
    (["-tp", "2", "--engine", "sglang", "--enable-dp-attention", "--dp", "2", "--max-num-seqs", "1"],
     ["--max-running-requests 1", "--dp 2"]),
    (["-tp", "2", "--speculative-algorithm", "EAGLE", "--speculative-num-draft-tokens", "4"],
     ["SGLang's", "--speculative-config"]),                 # the default engine is vLLM
])
def test_what_serve_does_not_model_is_refused_naming_it(args, words):
    r = runner.invoke(app, ["serve", "-m", "mixtral-8x7b", "-g", "h200-sxm", "--max-concurrency", "4", *args])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.stderr.strip().splitlines()) <= 2
    for w in words:
        assert w in r.stderr


def test_plot_serve_takes_the_same_options(tmp_path):
    out = tmp_path / "serve.png"
    r = runner.invoke(app, ["plot", "serve", "-m", "mixtral-8x7b", "-g", "h200-sxm", "-tp", "2",
                            "--enable-expert-parallel", "--enforce-eager", "--max-concurrency", "1,4", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0


def test_capacity_takes_sglangs_ep_size():
    a = runner.invoke(app, ["capacity", "-m", "mixtral-8x7b", "-g", "h200-sxm", "--tp", "2", "--ep-size", "2",
                            "-f", "json"])
    b = runner.invoke(app, ["capacity", "-m", "mixtral-8x7b", "-g", "h200-sxm", "--tp", "2", "--ep", "2",
                            "-f", "json"])
    assert a.exit_code == b.exit_code == 0, a.output
    assert _strict(a.stdout) == _strict(b.stdout)


def test_serve_takes_dcp():
    """--dcp N prices the step from a context of N pages (a page on each position rank): it was refused at any
    length (the provenance's one-page probe)."""
    r = runner.invoke(app, ["serve", "-m", "qwen3-30b-a3b", "-g", "h200-sxm", "-tp", "8", "--dcp", "2",
                            "--max-concurrency", "4", "-f", "json"])
    assert r.exit_code == 0, r.output
    assert "DCP 2" in _strict(r.stdout)["replica"]


def test_an_fp8_kv_cache_keeps_the_activations_16_bit():
    """--kv-cache-dtype fp8 on a bf16 checkpoint: the cache fp8, the activations and GEMMs bf16 (they were fp8)."""
    from rooflab.cli.serve_replica import replica_of as _replica
    from rooflab.deployment_words import DeploymentWords
    from rooflab.units import DType

    rep = _replica("llama-3-8b", "h200-sxm", "vllm", 1, DeploymentWords(), "fp8", 512, 64, 0.0, "vllm", 16, 0.9,
                   None, None, False, 0.0, 4)
    assert (rep.deployment.dtype, rep.deployment.kv_cache_dtype) == (DType.bf16, DType.fp8_e4m3)
