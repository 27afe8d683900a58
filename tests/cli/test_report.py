"""Tests of rooflab/cli/report.py: `rooflab report` (prefill, decode, --phase step, --shape, --published-tflops):
output, the JSON contract, honest warnings (--must-fit), tables that fit the terminal, and bad input (stderr, exit 2)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import available, load_model
from rooflab.specs import ModelSpec
from rooflab.units import DType, GiB
from rooflab.vocab import LayerKind


runner = CliRunner()


# --- CLI ------------------------------------------------------------------------------

def _short_error(result, needle):
    assert result.exit_code == 2, result.output
    assert 1 <= len(result.stderr.strip().splitlines()) <= 2 and needle in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_decode_report_rows():
    r = runner.invoke(app, ["report", "--phase", "decode", "--context-len", "32768", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["phase"] == "decode" and doc["context_lens"] == [32768] and doc["batch"] == 1
    paged, split = doc["rows"]
    assert paged["variant"] == "paged" and split["variant"] == "split_kv"
    for row in (paged, split):
        for key in ("flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s", "t_floor_s",
                    "bound", "kv_bytes"):
            assert key in row
        assert row["intensity_flop_per_byte"] == pytest.approx(4.0, rel=1e-2)
    assert split["splits"] == doc["facts"]["recommended_splits"] == 17
    assert split["t_floor_s"] > paged["t_floor_s"]         # physical floors: splitting only adds traffic
    assert split["parallel_fraction"] == 1.0 and paged["parallel_fraction"] < 0.1   # the model's reason to split
    assert [k["kernel"] for k in split["kernels"]] == ["split_decode", "merge"]


def test_decode_report_ragged_and_options():
    r = runner.invoke(app, ["report", "--phase", "decode", "-L", "100,5000", "-L", "17", "--page-size", "32",
                            "--kv-dtype", "fp8_e4m3", "--splits", "4", "-f", "json"])
    doc = json.loads(r.stdout)
    assert doc["context_lens"] == [100, 5000, 17] and doc["page_size"] == 32 and doc["kv_dtype"] == "fp8_e4m3"
    assert doc["rows"][1]["splits"] == 4
    assert doc["rows"][0]["kv_bytes"] == (100 + 5000 + 17) * 2 * 8 * 128 * 1


def test_decode_report_table():
    out = runner.invoke(app, ["report", "--phase", "decode", "-L", "8192", "-b", "128"]).stdout
    assert "paged" in out and "split_kv" in out and "recommended split count: 1" in out


@pytest.mark.parametrize("args, needle", [
    (["-L", "0"], "--context-len"),
    (["-L", "-5"], "--context-len"),
    (["-L", "abc"], "not a whole number"),
    (["--page-size", "0"], "--page-size"),
    (["--page-size", "-4"], "--page-size"),
    (["--splits", "0"], "splits"),
    (["-L", "10,20", "-b", "3"], "disagrees"),
])
def test_decode_bad_input(args, needle):
    _short_error(runner.invoke(app, ["report", "--phase", "decode", *args]), needle)


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_report_no_causal_shows_the_chapter_figures():
    r = invoke("report", "--no-causal")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "Meta Llama 3 8B" in out and "H100 SXM" in out and "T=8192" in out and "fp16" in out
    assert "16.156 GiB" in out          # naive traffic per layer
    assert "4.7x left" in out and "22.1x right" in out
    assert "165.709 ms" in out          # 32 layers, memory-bound
    assert "35.561 ms" in out           # compute floor
    assert "S = 4.000 GiB" in out
    assert "6553.6" in out
    for kernel in ("qk", "softmax", "pv"):
        assert kernel in out


def test_report_is_causal_by_default_and_says_so():
    """Prefill is causal by default, as engines run decoders, and the header names the mask."""
    causal, chapter = invoke("report"), invoke("report", "--no-causal")
    assert causal.exit_code == 0 and chapter.exit_code == 0
    assert causal.stdout.splitlines()[0].endswith("fp16, causal, datasheet ceilings")
    assert chapter.stdout.splitlines()[0].endswith("fp16, non-causal, datasheet ceilings")
    assert "549.823 GFLOP" in causal.stdout and "1.100 TFLOP" in chapter.stdout   # T(T+1)/2 of T^2 pairs
    assert "16.156 GiB" in causal.stdout      # the naive kernels still write all of S and P


def test_report_json_contract():
    r = invoke("report", "--format", "json", "--no-causal")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    for key in ("model", "gpu", "seq_len", "batch", "dtype", "causal", "num_layers", "rows"):
        assert key in doc
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-8b", "h100-sxm", 8192, 1, "fp16", False)
    assert doc["num_layers"] == 32
    variants = {row["variant"]: row for row in doc["rows"]}
    assert set(variants) == {"naive", "flash"}
    for row in variants.values():
        for key in ("flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s",
                    "t_floor_s", "bound"):
            assert isinstance(row[key], (int, float, str)), key
        assert row["bound"] in ("compute", "memory")
    assert variants["naive"]["s_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["p_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["t_floor_s"] == pytest.approx(5.178e-3, rel=1e-3)


def test_report_options_change_the_workload():
    doc = json.loads(invoke("report", "-m", "llama-3-70b", "-g", "h200-sxm", "-T", "4096", "-b", "2",
                            "--dtype", "bf16", "--causal", "-f", "json").stdout)
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-70b", "h200-sxm", 4096, 2, "bf16", True)
    naive = doc["rows"][0]
    # 2 sequences x 64 heads x 4096^2 x 2 bytes
    assert naive["s_bytes"] == 2 * 64 * 4096 * 4096 * 2


def test_report_markdown_and_csv():
    md = invoke("report", "--format", "markdown").stdout
    assert md.startswith("## ") and "| naive" in md and "|---" in md.replace(" ", "")
    rows = list(csv.DictReader(io.StringIO(invoke("report", "--format", "csv").stdout)))
    assert [r["kernel"] for r in rows] == ["", "qk", "softmax", "pv", ""]
    assert float(rows[0]["hbm_bytes"]) / GiB == pytest.approx(16.156, rel=1e-4)


def test_report_says_when_naive_does_not_fit():
    out = invoke("report", "--seq-len", "32768").stdout
    assert "does NOT fit" in out


BUNDLED = available("models")


CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"


def _tp(m: ModelSpec) -> int:
    """A tensor-parallel size that splits the heads and fits the weights on H200s."""
    return next(tp for tp in (8, 4, 2, 1) if m.num_qo_heads % tp == 0)


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_model_through_the_cli(name):
    m = load_model(name)
    for args in (["report", "-m", name, "-T", "4096"], ["report", "-m", name, "--phase", "decode"],
                 ["capacity", "-m", name, "-g", "h200-sxm", "--tp", str(_tp(m))]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"


def test_a_config_json_through_the_cli():
    path = CONFIGS / "gpt-oss-20b.json"
    if not path.is_file():
        pytest.skip("gpt-oss-20b.json not collected")
    result = runner.invoke(app, ["report", "-m", str(path)])
    assert result.exit_code == 0, result.output
    assert "20.91 B parameters derived; published 20.90 B as bundled 'gpt-oss-20b'" in result.stdout
    assert load_model(str(path)).kv_bytes_per_token(DType.bf16) == 24 * 8 * 64 * 2 * 2
    assert [t.kind for t in load_model(str(path)).layer_types.values()] == [LayerKind.sliding, LayerKind.full]


def test_table_warns_and_must_fit_errors():
    args = ["report", "--phase", "decode", "-m", "llama-3-70b", "-g", "h100-sxm", "-b", "64"]
    warned = runner.invoke(app, args)
    assert warned.exit_code == 0
    line = next(x for x in warned.stdout.splitlines() if x.startswith("WARNING"))
    assert "does not fit" in line and "160.312 GiB" in line and "79.647 GiB" in line
    refused = runner.invoke(app, args + ["--must-fit"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert "--must-fit" in refused.stderr and "64 sequences" in refused.stderr and len(refused.stderr.splitlines()) <= 2
    ok = runner.invoke(app, ["report", "--phase", "decode", "-b", "8", "--must-fit", "-f", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["fits"] is True


def test_must_fit_is_a_decode_option():
    r = runner.invoke(app, ["report", "--must-fit"])
    assert r.exit_code == 2 and "--must-fit" in r.stderr and "decode" in r.stderr


# ------------------------------------------------------------------ the CLI

def _run(args, capsys):
    with pytest.raises(SystemExit) as done:
        app(args)
    out = capsys.readouterr()
    return done.value.code or 0, out.out, out.err


def test_report_phase_step(capsys):
    code, out, _ = _run(["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm", "-b", "8", "-L", "32K",
                         "--tp", "2", "-f", "json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["tp"] == 2 and d["context_len"] == 32768 and d["t_predicted_s"] > d["t_floor_s"] > 0
    code, out, _ = _run(["report", "--phase", "step", "-g", "h200-sxm", "--kvp", "2", "-L", "128K", "-b", "8"], capsys)
    assert code == 0 and "on 2 x" in out and "KVP 2" in out and "t_predicted" in out
    code, out, _ = _run(["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8", "-dcp", "8",
                         "-L", "32K", "-b", "8"], capsys)
    assert code == 0 and "on 8 x" in out and "(TP 8, DCP 8)" in out
    code, out, _ = _run(["report", "--phase", "step", "-g", "h200-sxm", "--step", "prefill", "--cp", "2", "-L", "32K"],
                        capsys)
    assert code == 0 and "ring over 2 GPUs" in out


@pytest.mark.parametrize("args, says", [
    (["--phase", "step", "--tp", "3"], "3 does not divide the 32 query heads"),
    (["--phase", "step", "--kvp", "9", "-L", "128"], "larger than the context in pages"),
    (["--phase", "step", "--tp", "8", "--dcp", "3"], "--dcp 3 must divide --tp 8"),
    (["--phase", "step", "-m", "llama-3-70b", "--tp", "8", "--dcp", "8"], "DCP <= TP / H_kv"),
    (["--phase", "step", "-L", "32K", "-b", "64", "-g", "h200-sxm"], "does not fit"),
    (["--phase", "decode", "--tp", "2"], "--tp applies to --phase step only"),
    (["--phase", "step", "--splits", "4"], "--splits applies to --phase prefill or decode only"),
    (["--phase", "step", "-L", "1k,2k"], "one --context-len"),
])
def test_report_step_bad_input_exits_2(args, says, capsys):
    code, _, err = _run(["report", *args], capsys)
    assert code == 2 and says in err


def _words(text: str) -> set[str]:
    """The words of a rendered table, its rules of dashes aside."""
    return {w for w in text.split() if set(w) != {"-"}}


@pytest.mark.parametrize("args", [["report"], ["report", "--phase", "decode"], ["capacity"], ["list", "gpus"]])
def test_cli_tables_fit_columns_80(monkeypatch, args):
    monkeypatch.delenv("COLUMNS", raising=False)
    full = runner.invoke(app, args)
    assert full.exit_code == 0, full.output
    monkeypatch.setenv("COLUMNS", "80")
    narrow = runner.invoke(app, args)
    assert narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert _words(narrow.stdout) == _words(full.stdout)      # the same words, only laid out again
    assert narrow.stdout != full.stdout or max(len(line) for line in full.stdout.splitlines()) <= 80


# --- report --shape: a bare attention shape for kernel engineers (rooflab/shape.py) -------------------------------

def _rows_json(args: list[str]) -> list[dict]:
    r = runner.invoke(app, ["report", *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return [{k: v for k, v in row.items() if k not in ("num_layers", "model_t_floor_s")}
            for row in json.loads(r.stdout)["rows"]]


@pytest.mark.parametrize("phase", [[], ["--no-causal"], ["--phase", "decode"]])
def test_report_shape_equals_the_model_per_layer(phase):
    # Llama-3-8B (32 query heads, 8 KV heads, d 128) at T 8192: --shape 1,32,8,8192,128 is one of its layers
    model = ["-m", "llama-3-8b"] + (["-L", "8192"] if "decode" in phase else ["-T", "8192"])
    assert _rows_json(["--shape", "1,32,8,8192,128", *phase]) == _rows_json([*model, *phase])


def test_report_shape_text_names_the_shape_and_no_weights():
    r = runner.invoke(app, ["report", "--shape", "2,16,16,4096,192,128", "-g", "h200-sxm"])
    assert r.exit_code == 0, r.output
    assert "attention H 16, H_kv 16, d 192, d_v 128 (one layer, no model)" in r.stdout
    assert "T=4096, batch 2" in r.stdout and "next to 0 B of weights" in r.stdout


@pytest.mark.parametrize("value, says", [
    ("0,32,8,8192,128", "B (sequences in the batch) = 0"), ("-4,32,8,8192,128", "B"), ("nan,32,8,8192,128", "nan"),
    ("1,32,8,184467440737095516160,128", "T"), ("1,32,6,8192,128", "multiple of H_kv"), ("", "--shape"),
    ("1,32,8,8192", "4 fields"), ("1,32,8,8192,128,128,1", "7 fields"), ("1,32,8,,128", "T"),
])
def test_report_shape_refuses_bad_values_naming_shape(value, says):
    r = runner.invoke(app, ["report", "--shape", value])
    assert r.exit_code == 2 and "--shape" in r.output and says in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("extra", [["-m", "llama-3-8b"], ["--model", "qwen3-8b"], ["-T", "4096"], ["-b", "2"],
                                   ["--phase", "decode", "-L", "4096"], ["--phase", "step"]])
def test_report_shape_refuses_what_it_replaces(extra):
    r = runner.invoke(app, ["report", "--shape", "1,32,8,8192,128", *extra])
    assert r.exit_code == 2 and "--shape" in r.output


def test_report_published_rate_against_the_floor():
    # 169.3 TFLOP/s: FlashAttention-2 on an RTX 4090 at T 2048, d 128, fp16, non-causal (the figure, as
    # measurements/published/ records it); here it is only an argument to convert under the fa convention
    r = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "--no-causal", "-g", "rtx-4090",
                            "--published-tflops", "169.3", "--convention", "fa"])
    assert r.exit_code == 0, r.output
    assert "published 169.3 TFLOP/s under the fa convention" in r.stdout and "BEATS" not in r.stdout
    fast = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "--no-causal", "-g", "rtx-4090",
                               "--published-tflops", "5000", "-f", "json"])
    out = json.loads(fast.stdout)["published"]
    assert out["beats_floor"] is True and out["convention"] == "fa"
    text = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "-g", "rtx-4090", "--published-tflops",
                               "5000"]).stdout
    assert "BEATS THE FLOOR" in text


@pytest.mark.parametrize("args, says", [
    (["--published-tflops", "100"], "--shape"), (["--convention", "fa"], "--shape"),
    (["--shape", "1,32,8,2048,128", "--convention", "fa_no_half"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "0"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "nan"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "100", "--convention", "time"], "--convention"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "100", "--convention", "x"], "--convention"),
])
def test_report_published_rate_refused(args, says):
    r = runner.invoke(app, ["report", *args])
    assert r.exit_code == 2 and says in r.output


@pytest.mark.parametrize("extra, message", [
    (["--acceptance-rate", "0.9"], "--acceptance-rate is the drafts' acceptance"),
    (["--enable-dp-attention"], "--enable-dp-attention under --tp 1 is one attention rank"),
    (["--step", "prefill", "--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}'],
     "--step prefill prices a prefill"),
    (["--expert-imbalance", "3"], "applies to MoE layers"),
    (["-b", "4", "--micro-batches", "4"], "give --pp N"),
])
@pytest.mark.parametrize("command", ["report", "explain"])
def test_step_options_that_need_another_are_refused(command, extra, message):
    """Options whose effect needs another option were taken silently (the output identical without them)."""
    r = runner.invoke(app, [command, "--phase", "step", "-m", "llama-3-8b", *extra])
    assert r.exit_code == 2 and message in " ".join(r.stderr.split()), r.stderr


# --- the weights' options: report --phase step reads --weight-dtype and -q as capacity does (one resolution,
# DeploymentWords.resolve(checkpoint=...)); hostile round 3's D24 --------------------------------------------------

#: A small Llama shipped in fp8 with 128 x 128 blocks (as DeepSeek-V3's quantization_config gives them).
_TINY_FP8_BLOCK = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
                   "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
                   "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": False,
                   "attention_bias": False, "intermediate_size": 1024, "torch_dtype": "bfloat16",
                   "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                           "activation_scheme": "dynamic"}}
#: Its linears a layer: q, o 512 x 512, k, v 512 x 128, MLP 3 x 512 x 1,024 = 2,228,224 parameters, x 4 layers =
#: 8,912,896; the rest (embeddings and head 2 x 1,000 x 512, norms 4 x 1,024 + 512 = 1,028,608) stay bf16:
#: 2,057,216 bytes. --weight-dtype fp8 (the format: one byte a weight, a scale a tensor) 8,912,896 + 2,057,216;
#: -q fp8 (the checkpoint's method, as shipped) adds an fp32 scale a 128 x 128 block (q 16, k 4, v 4, o 16, gate,
#: up, down 32 each: 136 a layer): + 4 x 136 x 4 bytes.
_TINY_FP8_FORMAT, _TINY_FP8_SHIPPED = 8_912_896 + 2_057_216, 8_912_896 + 4 * 136 * 4 + 2_057_216


def _weight_bytes(model: list[str], words: list[str]) -> tuple[object, object]:
    """(capacity's weights_bytes, the step's weight_bytes_per_gpu) for the same options; 'refused' for exit 2."""
    got = []
    for cmd, field in ((["capacity"], "weights_bytes"), (["report", "--phase", "step"], "weight_bytes_per_gpu")):
        r = runner.invoke(app, [*cmd, *model, "-g", "h200-sxm", *words, "-f", "json"])
        assert r.exit_code in (0, 2) and "Traceback" not in r.output, r.output
        got.append(json.loads(r.stdout)[field] if r.exit_code == 0 else "refused")
    return tuple(got)


@pytest.mark.parametrize("words, expect", [(["--weight-dtype", "fp8"], _TINY_FP8_FORMAT),
                                           (["-q", "fp8"], _TINY_FP8_SHIPPED), ([], _TINY_FP8_SHIPPED)])
def test_weight_options_on_a_block_fp8_checkpoint_as_capacity(tmp_path, words, expect):
    (tmp_path / "config.json").write_text(json.dumps(_TINY_FP8_BLOCK))
    assert _weight_bytes(["-m", str(tmp_path)], words) == (expect, expect)


@pytest.mark.parametrize("model, format_words, method_words", [
    (["-m", "deepseek-v3", "--tp", "8"], ["--weight-dtype", "fp8"], ["-q", "fp8"]),
    (["-m", "gpt-oss-20b"], ["--weight-dtype", "mxfp4"], ["-q", "mxfp4"]),
])
def test_weight_dtype_is_a_format_and_q_the_method_in_both_commands(model, format_words, method_words):
    """--weight-dtype prices every linear layer in the format (a what-if); -q names the checkpoint's own method (as
    shipped: DeepSeek-V3's fp8 blocks' scales, gpt-oss's attention in bf16): capacity and the step agree on each, and
    the two differ."""
    capacity_format, step_format = _weight_bytes(model, format_words)
    capacity_method, step_method = _weight_bytes(model, method_words)
    assert capacity_format == step_format and capacity_method == step_method
    assert capacity_format < capacity_method
    assert _weight_bytes(model, []) == (capacity_method, step_method)


def test_weight_dtype_fp8_is_priced_where_q_fp8_is_refused_in_both_commands():
    """gpt-oss-20b ships mxfp4: -q fp8 is a method mismatch (vLLM refuses it) in both; --weight-dtype fp8 is the
    format, priced alike in both."""
    capacity, step = _weight_bytes(["-m", "gpt-oss-20b"], ["--weight-dtype", "fp8"])
    assert isinstance(capacity, (int, float)) and capacity == step
    assert _weight_bytes(["-m", "gpt-oss-20b"], ["-q", "fp8"]) == ("refused", "refused")


@pytest.mark.parametrize("command", [["report"], ["explain"]])
def test_the_steps_kv_cache_dtype_takes_the_engines_refusals(command):
    """`--kv-cache-dtype fp8` is vLLM's name (e4m3); SGLang's server_args refuses it (engines.vocab.
    parse_kv_cache_dtype), so under --engine sglang the step refuses it as capacity does, naming SGLang's spelling;
    under --engine vllm it is e4m3."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    runner = CliRunner()
    args = [*command, "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm", "--kv-cache-dtype", "fp8"]
    refused = runner.invoke(app, [*args, "--engine", "sglang"])
    assert refused.exit_code == 2 and "not one SGLang takes" in refused.stderr and "fp8_e4m3" in refused.stderr
    assert runner.invoke(app, [*args, "--engine", "vllm"]).exit_code == 0
    assert runner.invoke(app, [*args[:-1], "fp8_e4m3", "--engine", "sglang"]).exit_code == 0


@pytest.mark.parametrize("command", [["report", "--phase", "step"], ["capacity"]])
def test_vllms_expert_parallel_switch_is_refused_under_sglang(command):
    """SGLang sets the EP size (--ep-size, sglang 0.5.12 server_args.py:5986-5987); vLLM's --enable-expert-parallel
    under --engine sglang is refused naming it, as --ep N is under --engine vllm."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    r = CliRunner().invoke(app, [*command, "-m", "mixtral-8x7b", "-g", "h200-sxm", "--tp", "2", "--engine", "sglang",
                                 "--enable-expert-parallel"])
    assert r.exit_code == 2 and "--ep-size" in r.stderr and "Traceback" not in r.output


@pytest.mark.parametrize("command", [["report", "--phase", "step"], ["explain", "--phase", "step"], ["serve"]])
def test_sglangs_draft_depth_sets_the_verified_tokens(command):
    """SGLang's --speculative-num-steps N at --speculative-eagle-topk 1 verifies N + 1 tokens a sequence whatever
    --speculative-num-draft-tokens says (sglang 0.5.12 srt/server_args.py:3828-3835): N 3 gives k 3 (2.533 tokens a
    step at a 0.7), the same as --speculative-num-draft-tokens 4 alone; a tree (topk > 1) is refused."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    runner = CliRunner()
    base = [*command, "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "sglang", "--speculative-algorithm", "EAGLE"]
    extra = ["--max-concurrency", "2", "-f", "json"] if command == ["serve"] else ["-f", "json"]
    if command[0] == "explain":
        extra = ["--json"]
    a = runner.invoke(app, [*base, "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                            "--speculative-num-draft-tokens", "8", *extra])
    b = runner.invoke(app, [*base, "--speculative-num-draft-tokens", "4", *extra])
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert a.stdout == b.stdout
    tree = runner.invoke(app, [*base, "--speculative-num-steps", "3", "--speculative-eagle-topk", "4", *extra])
    assert tree.exit_code == 2 and "tree" in tree.stderr
