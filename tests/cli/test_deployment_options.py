"""Every spelling of a deployment setting on every command that takes it (rooflab/deployment_words.py's table):
rooflab's name and the engines' give the same output; two names with two values are an error naming both; a bad
value is a usage error naming the option."""

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.deployment_words import DeploymentWords
from rooflab.engines.vocab import Engine
from rooflab.errors import InputError
from rooflab.units import DType, WeightFormat

runner = CliRunner()

#: The commands and a fixed workload each (JSON output where the command has one; plots write --data).
COMMANDS = {
    "capacity": ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "-f", "json"],
    "capacity-engine": ["capacity", "-m", "qwen2.5-7b", "-g", "h100-sxm", "--engine", "vllm", "-f", "json"],
    "report-decode": ["report", "--phase", "decode", "-m", "llama-3-8b", "-L", "4096", "-f", "json"],
    "report-step": ["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h100-sxm", "-L", "4096", "-f", "json"],
    "explain": ["explain", "-v", "paged", "-m", "llama-3-8b", "-L", "4096"],
    "plot-decode": ["plot", "decode", "-m", "llama-3-8b", "--lengths", "1000,4000"],
    "plot-capacity": ["plot", "capacity", "-m", "qwen2.5-7b", "--lengths", "1000,4000"],
}

#: (commands, rooflab's spelling, the engines' spelling, a third spelling or None).
SPELLINGS = [
    (("capacity", "capacity-engine", "plot-capacity"), ["--tp", "2"], ["-tp", "2"], ["--tp-size", "2"]),
    (("capacity", "capacity-engine", "plot-capacity"), ["--tensor-parallel", "2"], ["--tensor-parallel-size", "2"],
     None),
    (("report-step",), ["--tp", "2"], ["-tp", "2"], ["--tensor-parallel-size", "2"]),
    (("capacity", "report-decode", "report-step", "explain", "plot-decode", "plot-capacity"),
     ["--kv-dtype", "fp8_e4m3"], ["--kv-cache-dtype", "fp8"], ["--kv-dtype", "fp8"]),
    # the engine mode echoes the KV-cache dtype by the name typed: fp8 and fp8_e4m3 are one dtype, two labels
    (("capacity-engine",), ["--kv-dtype", "fp8_e4m3"], ["--kv-cache-dtype", "fp8_e4m3"], None),
    (("capacity", "capacity-engine", "report-decode", "report-step", "explain", "plot-decode", "plot-capacity"),
     ["--page-size", "256"], ["--block-size", "256"], None),
    (("capacity", "capacity-engine", "report-decode", "explain", "plot-decode"),
     ["--dtype", "bf16"], ["--dtype", "bfloat16"], ["--dtype", "auto"]),
    (("report-decode", "explain"), ["--dtype", "fp16"], ["--dtype", "float16"], ["--dtype", "half"]),
    (("capacity", "plot-capacity"), ["--gpu-memory-utilization", "0.8"], ["--mem-fraction-static", "0.8"], None),
    (("report-step",), ["--gpu-memory-utilization", "0.8"], ["--mem-fraction-static", "0.8"], None),
    (("capacity", "capacity-engine"), ["--max-model-len", "4096"], ["--max-model-len", "4K"], None),
    (("capacity", "plot-capacity"), ["--weight-dtype", "fp8"], ["--quantization", "fp8"], ["-q", "fp8"]),
    (("report-step",), ["--weight-dtype", "fp8"], ["--quantization", "fp8"], ["-q", "fp8"]),
    (("capacity", "plot-capacity", "report-step"), ["--weight-dtype", "nvfp4"], ["--quantization", "nvfp4"],
     ["-q", "nvfp4"]),
]


def _out(command: str, extra: list[str], tmp_path) -> str:
    args = COMMANDS[command] + extra
    if command.startswith("plot"):
        data = tmp_path / f"{command}.csv"
        r = runner.invoke(app, args + ["-o", str(tmp_path / "x.png"), "--data", str(data)])
        assert r.exit_code == 0, r.output
        return data.read_text()
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("command,ours,theirs,third", [(c, o, t, x) for cs, o, t, x in SPELLINGS for c in cs],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_every_spelling_gives_the_same_answer(command, ours, theirs, third, tmp_path):
    expected = _out(command, ours, tmp_path)
    assert _out(command, theirs, tmp_path) == expected
    if third is not None:
        assert _out(command, third, tmp_path) == expected
    if ours[0] != theirs[0] and ours[0] != "--dtype":   # the setting changes the answer (else it is not read)
        assert _out(command, [], tmp_path) != expected


@pytest.mark.parametrize("command,args,message", [
    ("capacity", ["--tp", "2", "-tp", "4"], "--tp 2 and --tensor-parallel-size 4"),
    ("capacity", ["--page-size", "16", "--block-size", "32"], "--page-size 16 and --block-size 32"),
    ("report-decode", ["--page-size", "16", "--block-size", "32"], "--page-size 16 and --block-size 32"),
    ("explain", ["--kv-dtype", "bf16", "--kv-cache-dtype", "fp8"], "--kv-dtype"),
    ("plot-capacity", ["--gpu-memory-utilization", "0.9", "--mem-fraction-static", "0.8"], "two values"),
    ("capacity", ["--weight-dtype", "bf16", "--quantization", "fp8"], "--weight-dtype"),
])
def test_two_values_of_one_setting_are_refused(command, args, message, tmp_path):
    extra = ["-o", str(tmp_path / "x.png")] if command.startswith("plot") else []
    r = runner.invoke(app, COMMANDS[command] + args + extra)
    assert r.exit_code == 2 and message in r.output, r.output


@pytest.mark.parametrize("args", [["--tp", "0"], ["-tp", "-1"], ["--tp-size", "1e300"], ["--block-size", "0"],
                                  ["--block-size", "99999999999999999999999"], ["--page-size", "nan"],
                                  ["--mem-fraction-static", "0"], ["--mem-fraction-static", "nan"],
                                  ["--gpu-memory-utilization", "inf"], ["--gpu-memory-utilization", "1e300"],
                                  ["--gpu-memory-utilization", "-0.5"], ["--kv-cache-dtype", ""],
                                  ["--kv-cache-dtype", "fp7"], ["--dtype", ""], ["--dtype", "x" * 1000],
                                  ["--quantization", ""], ["--quantization", "awq2"], ["--weight-dtype", ""],
                                  ["--max-model-len", "0"], ["--max-model-len", "1e300"],
                                  ["--max-model-len", "99999999999999999999999"]])
def test_bad_values_are_usage_errors_naming_the_option(args):
    r = runner.invoke(app, COMMANDS["capacity"] + args)
    assert r.exit_code == 2 and args[0] in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("command", [["report", "--phase", "step", "-m", "llama-3-8b"],
                                     ["explain", "--phase", "step", "-m", "llama-3-8b"],
                                     ["capacity", "-m", "llama-3-8b"], ["serve", "-m", "llama-3-8b"],
                                     ["plot", "capacity", "-m", "llama-3-8b", "-o", "x.png"],
                                     ["plot", "serve", "-m", "llama-3-8b", "-o", "x.png"]])
def test_every_command_refuses_a_weights_name_with_one_list(command, tmp_path, monkeypatch):
    """Issue 24 round 2 D1: report --phase step refused -q awq with the formats' list and nvfp4 with the methods'."""
    from rooflab.deployment_words import weights_name

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as exc:
        weights_name("awq2", "")
    r = runner.invoke(app, command + ["-q", "awq2"])
    assert r.exit_code == 2 and str(exc.value) in " ".join(r.output.split()), r.output


def test_sglang_refuses_fp8_from_the_command_line():
    """SGLang's --kv-cache-dtype choices exclude 'fp8' (server_args.py); rooflab's --kv-dtype fp8 is its own name."""
    base = ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", "--engine", "sglang"]
    r = runner.invoke(app, base + ["--kv-cache-dtype", "fp8"])
    assert r.exit_code == 2 and "not one SGLang takes" in r.output and "fp8_e4m3" in r.output
    assert runner.invoke(app, base + ["--kv-cache-dtype", "fp8_e4m3"]).exit_code == 0
    assert runner.invoke(app, base + ["--kv-dtype", "fp8"]).exit_code == 0
    assert runner.invoke(app, ["capacity", "-m", "llama-3-8b", "--engine", "vllm",
                               "--kv-cache-dtype", "fp8"]).exit_code == 0


def test_quantization_follows_the_checkpoint():
    """fp8 quantises an unquantised checkpoint at load (vLLM's Fp8Config); a method for a quantised checkpoint on
    an unquantised one is refused; on a quantised checkpoint the weights stay as shipped."""
    d, given, _ = DeploymentWords(quantization="fp8").resolve(checkpoint_quantized=False)
    assert d.weight_format is WeightFormat.fp8 and "weight_format" in given
    with pytest.raises(InputError, match="ships unquantised"):
        DeploymentWords(quantization="awq").resolve(checkpoint_quantized=False)
    d, given, _ = DeploymentWords(quantization="gptq_marlin").resolve(checkpoint_quantized=True)
    assert d.weight_format is None and "weight_format" in given
    r = runner.invoke(app, ["capacity", "-m", "gpt-oss-20b", "--quantization", "mxfp4", "-f", "json"])
    assert r.exit_code == 0 and r.stdout == runner.invoke(app, ["capacity", "-m", "gpt-oss-20b", "-f", "json"]).stdout


def test_words_resolve_checks_values_where_they_enter():
    for words in (DeploymentWords(tensor_parallel=0), DeploymentWords(block_size=True),
                  DeploymentWords(utilization=float("nan")), DeploymentWords(mem_fraction_static=1e300),
                  DeploymentWords(dtype=""), DeploymentWords(kv_cache_dtype=" "), DeploymentWords(page_size=10**30),
                  DeploymentWords(weight_dtype="x" * 100), DeploymentWords(max_model_len=-1)):
        with pytest.raises(InputError):
            words.resolve()
            words.max_model_len_checked
    d, given, kv = DeploymentWords(dtype="auto", kv_cache_dtype="auto").resolve(engine=Engine.sglang)
    assert d.dtype is None and d.kv_cache_dtype is None and given == {"dtype", "kv_cache_dtype"}
    d, _, _ = DeploymentWords(dtype="bfloat16", tensor_parallel_size=4).resolve()
    assert d.dtype is DType.bf16 and d.tensor_parallel == 4


def test_engine_mode_takes_dp_attention_and_expert_parallel():
    """SGLang --tp 8 --enable-dp-attention --dp 8 --ep 8 (DeepSeek-V3): every GPU holds all attention weights
    (attn_tp_size = tp / dp = 1) and 1/8 of the experts; vLLM --enable-expert-parallel: EP = TP x DP."""
    import json

    base = ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "-f", "json"]
    tp_only = json.loads(runner.invoke(app, base + ["--engine", "sglang"]).stdout)
    dp_attn = json.loads(runner.invoke(app, base + ["--engine", "sglang", "--enable-dp-attention", "--dp", "8",
                                                    "--ep", "8"]).stdout)
    assert dp_attn != tp_only and "DP attention" in json.dumps(dp_attn)
    r = runner.invoke(app, base + ["--engine", "vllm", "--enable-expert-parallel", "--ep", "8"])
    assert r.exit_code == 2 and "give one" in r.output
    r = runner.invoke(app, base + ["--engine", "sglang", "--enable-dp-attention", "--dp", "3"])
    assert r.exit_code == 2 and "must divide" in r.output


# --- one attention rank (hostile round session12: D40) --------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8"],
    ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--engine", "sglang"],
    ["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8", "--engine", "sglang"],
    ["explain", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8"],
])
def test_dp_attention_over_one_rank_is_refused_by_capacity_and_the_step_alike(command):
    """D40: --enable-dp-attention --dp 1 is plain TP: SGLang v0.5.2 - v0.5.10 turn DP attention off at dp_size 1,
    v0.4.5 - v0.5.1 assert dp_size > 1, v0.4.3.post2 - v0.4.4 set dp_size = tp_size (server_args.py at each
    release). Capacity planned it and the step refused it; both refuse it now with one message (parallel_degrees,
    the one mapping of the switches), naming --dp and --enable-dp-attention."""
    r = runner.invoke(app, command + ["--enable-dp-attention", "--dp", "1"])
    assert r.exit_code == 2 and "--enable-dp-attention --dp 1 is one attention rank, plain TP" in r.output
    assert len(r.output.strip().splitlines()) <= 2


def test_dp_attention_without_dp_is_dp_equal_to_tp_on_capacity_and_the_step():
    """D40: without --dp, --enable-dp-attention is DP = TP on both (SGLang's recipes), so the step's weights are
    capacity's for DeepSeek-V3 TP 8 DP 8 (capacity.gpu_weight_bytes, the newest layout read)."""
    import json

    from rooflab.capacity import gpu_weight_bytes
    from rooflab.load import load_model

    step = runner.invoke(app, ["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8",
                               "--enable-dp-attention", "-b", "8", "-L", "1024", "-f", "json"])
    cap = runner.invoke(app, ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--enable-dp-attention",
                              "-L", "1024", "-f", "json"])
    assert step.exit_code == 0 and cap.exit_code == 0
    expect = gpu_weight_bytes(load_model("deepseek-v3"), None, 8, 1, 8)
    assert json.loads(step.stdout)["weight_bytes_per_gpu"] == json.loads(cap.stdout)["weights_bytes"] == expect
    r = runner.invoke(app, ["report", "--phase", "step", "-m", "llama-3-8b", "--enable-dp-attention"])
    assert r.exit_code == 2 and "--enable-dp-attention under --tp 1 is one attention rank" in r.output
