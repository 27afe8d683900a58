"""Issue 24's hostile round: generate every input of the round, run each against rooflab, check every invariant.

    python benchmarks/hostile_round.py              # the whole round (about 6,600 inputs, a few minutes on two cores)
    python benchmarks/hostile_round.py --class api  # one class
    python benchmarks/hostile_round.py --list       # the classes and their input counts, running nothing

Classes: hf_config (config.json files exported by rooflab.hf.export_hf_config from bundled models, then mutated),
yaml_spec (GPU and model YAML with fields that contradict each other or the datasheet), options (combinations of
report / capacity / explain / serve / plot serve options, this session's vLLM/SGLang spellings included), files
(long names, folders, FIFOs, symlinks, read-only folders, /dev/full), streams (stdout full, closed, a broken pipe:
real processes), signals (SIGTERM / SIGHUP during a write: real processes), engine_logs (adversarial, huge, wrapped
lines), environment (PYTHONWARNINGS=error, MPLBACKEND, PYTHONIOENCODING, LANG=C, COLUMNS=1: real processes), api
(wrong types, NaN, inf, 0, negative, huge integers, NumPy scalars, complex), numbers (figures checked against ones
derived by hand here, each with its formula).
Round 2 (session 10, what sessions 8-10 added): options2 (capacity's engine / PP / LoRA / Mamba / memory options,
report --phase step's engine, speculative and parallel options, --shape with --published-tflops, serve's
--engine-version, validate --published, --impl on every GPU), hf_config2 (the session 8-9 families' real config.json
files mutated; quantisation blocks), api2 (step_report, engine_kernels, Scheduler, step_times, plan_capacity,
engine_capacity, explain_step, the published loaders, cudnn_kernel: each argument with each wrong kind), numbers2
(61 figures against hand-derived ones), classic2 (streams, signals, environment and files on the new commands).
Round 3 (session 10, what the D1-D20 fixes touched): quant3 (-q / --quantization / --weight-dtype on every command
against checkpoints with and without a quantization_config; TINY's bytes in each format by hand), sizes3 (memory
sizes with and without units), step3 (--engine-version on the step and serve, step options that need another),
memory3 (draft models, --pp step = capacity, fp8_ds_mla), hybrid3 (Jamba and Bamba configs, state and KV by hand),
amd3 (t_exp unknown without an exp rate), plot3 (no text outside a chart).
The closing re-run (session 10, after D21-D26): closing4 (-q / --weight-dtype with each --engine, TINY's step
weights by hand under each; both names at once; serve --weight-dtype in every format on four checkpoints; explain
--phase step with each new option; serve --engine-version's odd spellings; plot --data in odd cases; Jamba, Bamba,
Granite 4.0-H, NemotronH and FalconH1 config.json files that contradict themselves, Mamba-2 state and KV by hand).
The closing re-run after D27-D28 (session 11): closing5 (D28's siblings: every command that writes a file pointed
at one of its own inputs by name, another spelling, a symlink or a hard link; D27's siblings: non-ASCII digits and
signs in each numeric option class, each either refused naming the option or read as the ASCII spelling is).
A second tester's closing5 siblings (_siblings5): plot's image (-o) onto the chart's inputs through a link, the GPU
YAML a campaign names as validate's / fit's / plot validation's input, $COLUMNS in non-ASCII digits, float options'
non-ASCII separators, int<b>_g<group> in non-ASCII digits.
Session 12: session12 (--engine-version as a release or a label on capacity, the step, serve and explain, --vllm-use-v1,
the labels against their newest releases, a logged release against the option, SGLang's DP-attention weights by
release on capacity and the step (three hand figures), the step's fp8 GEMM fit on seven GPUs, Ctrl-C during `rooflab
bench` (the GPU stubbed) and between plot's image and --data).

Invariants (tests/fuzz_support.py: problems_of): no traceback; exit 0 or 2 only; on 2 one or two lines on stderr,
'error:' first, naming the option, file, field or value; strict JSON; no file left but the requested output; no
input changed; every in-process call under a 120 s alarm and RLIMIT_AS of 2 GiB above the process, every child
process under a 60 s timeout and RLIMIT_AS of 2 GiB. Only this machine: no network is touched.

The kept subset runs in CI as tests/test_fuzz_hostile.py (a few cases of each class).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fuzz_support as fs  # noqa: E402

CHILD_TIMEOUT_S = 60.0
CHILD_MEMORY_BYTES = 2 << 30


@dataclasses.dataclass
class Input:
    """One input of the round: a CLI case (run in-process in a scratch folder), or a callable that returns
    the problems it found (a list of sentences; empty means it passed)."""

    klass: str
    label: str
    case: Optional[fs.Case] = None
    setup: Optional[Callable[[Path], None]] = None      # writes the files the case reads, in its scratch folder
    check: Optional[Callable[[Path], list[str]]] = None


def cli(klass, args, idents=(), expect=None, json_out=False, setup=None, outputs=(), label=None) -> Input:
    case = fs.Case(list(map(str, args)), list(idents), expect, list(outputs), [], json_out, not json_out)
    return Input(klass, label or " ".join(map(str, args))[:120], case=case, setup=setup)


# --- hf_config --------------------------------------------------------------------------------------------------

HF_MODELS = ["llama-3-8b", "qwen3-30b-a3b", "deepseek-v3", "gemma-2-9b", "mixtral-8x7b", "qwen2.5-7b",
             "gpt-oss-20b", "mistral-7b"]
BAD_VALUES = [0, -1, -128, 1.5, "32", "", None, True, [], {}, 10 ** 30, 1e308, 3.0, [32]]


def _export(name: str) -> dict:
    from rooflab.hf import export_hf_config
    from rooflab.load import load_model
    return export_hf_config(load_model(name))


def _write_config(doc, raw: Optional[str] = None) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        sub = folder / "cfg"
        sub.mkdir()
        (sub / "config.json").write_text(raw if raw is not None else json.dumps(doc))
    return setup


def hf_inputs() -> Iterator[Input]:
    for name in HF_MODELS:
        base = _export(name)
        where = {"deepseek-v3": ["-g", "h200-sxm", "--tp", "8"], "mixtral-8x7b": ["-g", "h200-sxm"]}.get(
            name, ["-g", "h100-sxm"])          # where the exported model's weights fit
        # the export itself must load and price
        yield cli("hf_config", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"], expect=0,
                  json_out=True, setup=_write_config(base), label=f"{name} exported as is")
        keys = [k for k, v in base.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        for k_index, key in enumerate(keys):
            for bad in [BAD_VALUES[(k_index + j) % len(BAD_VALUES)] for j in range(0, len(BAD_VALUES), 3)]:
                doc = copy.deepcopy(base)
                doc[key] = bad
                yield cli("hf_config", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"],
                          idents=["config.json", key], json_out=True, setup=_write_config(doc),
                          label=f"{name} {key}={bad!r:.20}")
            doc = copy.deepcopy(base)
            del doc[key]
            yield cli("hf_config", ["report", "-m", "cfg", "-f", "json"], idents=["config.json", key, "cfg"],
                      json_out=True, setup=_write_config(doc), label=f"{name} without {key}")
    base = _export("llama-3-8b")
    quirky = {
        "kv heads above heads": {**base, "num_key_value_heads": 64},
        "heads not a multiple of kv heads": {**base, "num_key_value_heads": 5},
        "hidden not heads x head_dim, no head_dim": {k: v for k, v in {**base, "hidden_size": 4097}.items()
                                                    if k != "head_dim"},
        "unknown architecture": {**base, "architectures": ["FrobnicatorForCausalLM"], "model_type": "frob"},
        "architectures a string": {**base, "architectures": "LlamaForCausalLM"},
        "architectures empty": {**base, "architectures": []},
        "torch_dtype weird": {**base, "torch_dtype": "float7"},
        "torch_dtype float32": {**base, "torch_dtype": "float32"},
        "quant gptq 4 bit": {**base, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}},
        "quant gptq 0 bit": {**base, "quantization_config": {"quant_method": "gptq", "bits": 0, "group_size": 128}},
        "quant gptq bits string": {**base, "quantization_config": {"quant_method": "gptq", "bits": "four"}},
        "quant awq": {**base, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}},
        "quant awq group 0": {**base, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 0}},
        "quant unknown": {**base, "quantization_config": {"quant_method": "zebra"}},
        "quant not a dict": {**base, "quantization_config": "fp8"},
        "quant fp8": {**base, "quantization_config": {"quant_method": "fp8"}},
        "quant bnb 4bit": {**base, "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}},
        "rope_scaling junk": {**base, "rope_scaling": {"type": "yarn", "factor": -4}},
        "rope_scaling string": {**base, "rope_scaling": "yarn"},
        "sliding_window 0": {**base, "sliding_window": 0},
        "sliding_window negative": {**base, "sliding_window": -4096},
        "sliding_window huge": {**base, "sliding_window": 10 ** 20},
        "sliding_window string": {**base, "sliding_window": "4096"},
        "text_config nested only": {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                                    "text_config": {k: v for k, v in base.items() if k not in ("architectures",)}},
        "text_config not a dict": {**base, "text_config": 5},
        "max_position_embeddings 1": {**base, "max_position_embeddings": 1},
        "vocab 1": {**base, "vocab_size": 1},
        "tie string": {**base, "tie_word_embeddings": "false"},
        "layers 1e6": {**base, "num_hidden_layers": 1_000_000},
        "hidden 1e9": {**base, "hidden_size": 10 ** 9},
        "unicode keys": {**base, "\u00e9\u0000": 1},
        "layer_types wrong length": {**base, "layer_types": ["full_attention"] * 3},
        "layer_types unknown": {**base, "layer_types": ["quantum_attention"] * 32},
    }
    moe = _export("qwen3-30b-a3b")
    quirky.update({
        "moe top-k above experts": {**moe, "num_experts_per_tok": 256},
        "moe 0 experts": {**moe, "num_experts": 0},
        "moe top-k 0": {**moe, "num_experts_per_tok": 0},
        "moe sparse step 0": {**moe, "decoder_sparse_step": 0},
        "moe every layer mlp-only": {**moe, "mlp_only_layers": list(range(48))},
        "moe mlp_only out of range": {**moe, "mlp_only_layers": [99, -1]},
        "moe mlp_only strings": {**moe, "mlp_only_layers": ["a"]},
    })
    ds = _export("deepseek-v3")
    quirky.update({
        "mla kv_lora_rank 0": {**ds, "kv_lora_rank": 0},
        "mla rope dim negative": {**ds, "qk_rope_head_dim": -64},
        "mla first_k_dense past layers": {**ds, "first_k_dense_replace": 100},
        "mla moe_layer_freq 0": {**ds, "moe_layer_freq": 0},
        "mla fp8 block size 0": {**ds, "quantization_config": {"quant_method": "fp8", "weight_block_size": [0, 0]}},
    })
    for label, doc in quirky.items():
        for cmd in (["capacity", "-m", "cfg/config.json", "-f", "json"], ["report", "-m", "cfg/config.json"]):
            yield cli("hf_config", cmd, idents=["config.json"], json_out="json" in cmd, setup=_write_config(doc),
                      label=f"{label}: {cmd[0]}")
    raws = {
        "empty file": "", "BOM": "\ufeff" + json.dumps(base), "trailing comma": json.dumps(base)[:-1] + ",}",
        "NaN": json.dumps({**base, "hidden_size": float("nan")}), "Infinity": json.dumps(base).replace("8192", "Infinity"),
        "a list": "[1,2,3]", "a string": '"llama"', "null": "null", "truncated": json.dumps(base)[:40],
        "duplicate keys": json.dumps(base)[:-1] + ', "num_hidden_layers": 0}', "binary": "\x00\xff\xfe" * 100,
        "deep nesting": "[" * 100_000 + "]" * 100_000, "huge number": json.dumps(base).replace("32,", "1" + "0" * 5000 + ",", 1),
        "comments": "// a comment\n" + json.dumps(base), "latin-1": json.dumps(base).replace("llama", "ll\u00e4ma"),
    }
    for label, raw in raws.items():
        yield cli("hf_config", ["capacity", "-m", "cfg/config.json", "-f", "json"], idents=["config.json"],
                  json_out=True, setup=_write_config(None, raw), label=f"raw: {label}")
    # a bundled name shadowed by a folder (issue 24 item 1) and a folder that looks like a path
    def shadow(folder: Path) -> None:
        (folder / "llama-3-8b").mkdir()
        (folder / "llama-3-8b" / "config.json").write_text(json.dumps({**base, "num_hidden_layers": 2}))
    yield cli("hf_config", ["capacity", "-m", "llama-3-8b", "-f", "json"], idents=["llama-3-8b"], json_out=True,
              setup=shadow, label="bundled name shadowed by a local folder")
    yield cli("hf_config", ["capacity", "-m", "./llama-3-8b", "-f", "json"], expect=0, json_out=True, setup=shadow,
              label="./ names the local folder")


# --- yaml_spec --------------------------------------------------------------------------------------------------

def _yaml_setup(src: Path, replace: Callable[[str], str], name: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / name).write_text(replace(src.read_text()))
    return setup


def _set_field(field: str, value: str) -> Callable[[str], str]:
    import re

    def replace(text: str) -> str:
        pattern = re.compile(rf"^{re.escape(field)}:.*$", re.MULTILINE)
        if pattern.search(text):
            return pattern.sub(f"{field}: {value}", text, count=1)
        return text + f"\n{field}: {value}\n"
    return replace


def yaml_inputs() -> Iterator[Input]:
    gpu = fs.HARDWARE / "h100-sxm.yaml"
    gpu_fields = ["hbm_capacity_bytes", "cuda_visible_bytes", "hbm_bandwidth_bytes_per_s", "num_sms",
                  "smem_per_sm_bytes", "l2_bytes", "boost_clock_hz", "max_sm_clock_hz", "exp_per_s",
                  "vector_fp32_flop_per_s", "interconnect_bytes_per_s", "compute_capability", "architecture",
                  "vendor", "name", "register_file_per_sm_bytes"]
    values = ["0", "-1", ".nan", ".inf", "1e400", "'lots'", "[]", "{}", "null", "true", "1e-30", "2.5"]
    for field in gpu_fields:
        for value in values:
            yield cli("yaml_spec", ["report", "-g", "g.yaml", "-f", "json"], idents=["g.yaml", field],
                      json_out=True, setup=_yaml_setup(gpu, _set_field(field, value), "g.yaml"),
                      label=f"gpu {field}={value}")
    contradictions = {
        "visible above capacity": _set_field("cuda_visible_bytes", "95520809984"),
        "max clock below boost": _set_field("max_sm_clock_hz", "1.0e9"),
        "bandwidth 1000x datasheet-like": _set_field("hbm_bandwidth_bytes_per_s", "3.35e15"),
        "1 SM": _set_field("num_sms", "1"),
        "1e6 SMs": _set_field("num_sms", "1000000"),
        "capacity 1 byte": _set_field("hbm_capacity_bytes", "1"),
        "duplicate key": lambda t: t + "\nnum_sms: 7\n",
        "tabs": lambda t: t.replace("  tf32", "\ttf32", 1),
        "anchor bomb": lambda t: t + "\nbomb: &a [" + ",".join(["x"] * 50) + "]\nb2: &b [" + ",".join(["*a"] * 50)
                                 + "]\nb3: [" + ",".join(["*b"] * 50) + "]\n",
        "python tag": lambda t: t + "\nevil: !!python/object/apply:os.system ['echo hi']\n",
        "not a mapping": lambda t: "- 1\n- 2\n",
        "empty": lambda t: "",
        "fp16 rate 0": lambda t: t.replace("fp16: 989.4e12", "fp16: 0", 1),
        "fp16 rate negative": lambda t: t.replace("fp16: 989.4e12", "fp16: -989.4e12", 1),
        "fp8 above 100x": lambda t: t.replace("fp8: 1978.9e12", "fp8: 1978.9e16", 1),
        "unknown dtype rate": lambda t: t.replace("tf32: 494.7e12", "fp3: 494.7e12", 1),
        "gpus_per_node 0": lambda t: t.replace("gpus_per_node: 8", "gpus_per_node: 0", 1),
        "link bandwidth nan": lambda t: t.replace("link_bytes_per_s: 4.5e+11", "link_bytes_per_s: .nan", 1),
        "aliases not a list": _set_field("aliases", "5"),
        "alias of another gpu": _set_field("aliases", "['H200 SXM']"),
    }
    for label, fn in contradictions.items():
        yield cli("yaml_spec", ["report", "-g", "g.yaml", "-f", "json"], idents=["g.yaml"], json_out=True,
                  setup=_yaml_setup(gpu, fn, "g.yaml"), label=f"gpu: {label}")
        yield cli("yaml_spec", ["capacity", "-g", "g.yaml", "-f", "json"], idents=["g.yaml"], json_out=True,
                  setup=_yaml_setup(gpu, fn, "g.yaml"), label=f"gpu: {label} (capacity)")
    model = fs.MODELS / "llama-3-8b.yaml"
    model_fields = ["num_layers", "hidden_size", "num_qo_heads", "num_kv_heads", "head_dim", "ffn_size",
                    "vocab_size", "max_context_len", "num_parameters", "tie_word_embeddings"]
    for field in model_fields:
        for value in values:
            yield cli("yaml_spec", ["capacity", "-m", "m.yaml", "-f", "json"], idents=["m.yaml", field],
                      json_out=True, setup=_yaml_setup(model, _set_field(field, value), "m.yaml"),
                      label=f"model {field}={value}")
    model_contra = {
        "kv heads above heads": _set_field("num_kv_heads", "64"),
        "heads not multiple": _set_field("num_kv_heads", "5"),
        "params 10x the count": _set_field("num_parameters", "80302612480"),
        "params 1": _set_field("num_parameters", "1"),
        "dense_ffn_size on a dense model": lambda t: t + "\ndense_ffn_size: 1000\n",
        "moe fields with 0 experts": lambda t: t + "\nnum_experts: 0\nnum_experts_per_token: 2\n",
        "top-k above experts": lambda t: t + "\nnum_experts: 8\nnum_experts_per_token: 16\nmoe_ffn_size: 1024\n",
        "unknown field": lambda t: t + "\nfrobnicate: 3\n",
        "name empty": _set_field("name", "''"),
        "max_context_len 0": _set_field("max_context_len", "0"),
    }
    for label, fn in model_contra.items():
        for cmd in ("capacity", "report"):
            yield cli("yaml_spec", [cmd, "-m", "m.yaml", "-f", "json"], idents=["m.yaml"], json_out=True,
                      setup=_yaml_setup(model, fn, "m.yaml"), label=f"model: {label} ({cmd})")


# --- options ----------------------------------------------------------------------------------------------------

def option_inputs() -> Iterator[Input]:
    import random
    rng = random.Random(24)
    par_values = ["1", "2", "3", "4", "8", "16", "0", "-2", "1.5", "x", "", "1e30"]
    par_opts = ["--tp", "-tp", "--tensor-parallel-size", "--dcp", "--kv-parallel", "--pcp", "--dp", "--ep"]
    models = ["llama-3-8b", "qwen3-30b-a3b", "deepseek-v3", "gemma-2-9b", "llama-3-70b", "mixtral-8x7b",
              "qwen3-next-80b-a3b", "gpt-oss-20b"]
    extra = [["--kv-cache-dtype", "fp8"], ["--kv-cache-dtype", "fp8_e5m2"], ["--kv-cache-dtype", "auto"],
             ["--kv-cache-dtype", "int3"], ["--block-size", "16"], ["--block-size", "0"], ["--block-size", "7"],
             ["--block-size", "1048577"], ["--dtype", "auto"], ["--dtype", "bfloat16"], ["--dtype", "half"],
             ["--dtype", "float64"], ["--quantization", "fp8"], ["--quantization", "awq"], ["--quantization", "nope"],
             ["--enable-dp-attention"], ["--enable-expert-parallel"], ["--enforce-eager"],
             ["--speculative-config", '{"method":"eagle","num_speculative_tokens":3}'],
             ["--speculative-config", "{bad json"], ["--speculative-config", '{"num_speculative_tokens":-1}'],
             ["--speculative-config", "[]"], ["--gpu-memory-utilization", "0.95"], ["--gpu-memory-utilization", "nan"],
             ["--max-model-len", "1k"], ["--max-model-len", "99999999"], ["-L", "4k"]]
    for i in range(260):
        cmd = rng.choice(["report", "capacity", "explain", "report --phase decode", "report --phase step"])
        args = cmd.split() + ["-m", rng.choice(models), "-g", rng.choice(["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb"])]
        for _ in range(rng.randint(0, 2)):
            args += [rng.choice(par_opts), rng.choice(par_values)]
        for _ in range(rng.randint(0, 2)):
            args += rng.choice(extra)
        if rng.random() < 0.5:
            args += ["-f", "json"]
        yield cli("options", args, json_out="json" in args, label=f"combo {i}: " + " ".join(args))
    serve = [["serve", "-m", "llama-3-8b", "-g", "h100-sxm"],
             ["serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--tp", "2", "--max-concurrency", "1,8"],
             ["plot", "serve", "-m", "llama-3-8b", "-g", "h200-sxm", "-o", "s.png"]]
    serve_extra = [["--request-rate", "0"], ["--request-rate", "nan"], ["--request-rate", "inf"],
                   ["--request-rate", "-1"], ["--input-len", "0"], ["--output-len", "0"], ["--input-len", "1e12"],
                   ["--num-prompts", "0"], ["--num-prompts", "100000000"], ["--simulate"], ["--seed", "-1"],
                   ["--tpot-slo", "0"], ["--ttft-slo", "1e300"], ["--tpot-slo", "50ms"], ["--prefix-cache-hit-rate", "1.5"],
                   ["--prefix-cache-hit-rate", "1"], ["--random-range-ratio", "2"], ["--burstiness", "0"],
                   ["--engine", "tensorrt"], ["--engine", "sglang", "--enable-mixed-chunk"],
                   ["--max-concurrency", ""], ["--max-concurrency", "0"], ["--max-concurrency", "1," * 5000 + "1"],
                   ["--lengths", "sharegpt"], ["--lengths", "nope"], ["--kv-cache-dtype", "fp8"],
                   ["--quantization", "fp8"], ["--chunked-prefill-size", "0"], ["--max-num-seqs", "1"],
                   ["--target-rate", "5"], ["--data", "d.csv"], ["-f", "json"]]
    for i in range(60):
        base = list(rng.choice(serve))
        for _ in range(rng.randint(1, 2)):
            base += rng.choice(serve_extra)
        if base[0] == "plot" and "-f" in base:
            continue
        outputs = ["s.png"] if "s.png" in base else []
        if "--data" in base:
            outputs.append("d.csv")
        yield cli("options", base, json_out="json" in base, outputs=outputs, label=f"serve {i}: " + " ".join(base))
    yield cli("options", ["validate", "--published", "-f", "json"], json_out=True, label="validate --published json")
    yield cli("options", ["validate", "--published", "x.csv"], label="validate --published with a file")
    for shape in ["1,32,8,8192,128", "0,32,8,8192,128", "1,32,5,8192,128", "1,32,8,8192", "1,32,8,8192,128,64,1",
                  "1,32,8,nan,128", "1,32,8,8192,128,0", " ", "1;32;8;8192;128", "1,32,8,1e30,128"]:
        yield cli("options", ["report", "--shape", shape, "-f", "json"], idents=["--shape"], json_out=True,
                  label=f"report --shape {shape}")
        yield cli("options", ["explain", "--shape", shape], idents=["--shape"], label=f"explain --shape {shape}")


# --- files ------------------------------------------------------------------------------------------------------

def file_inputs() -> Iterator[Input]:
    csv = fs.MEASUREMENTS / "h200-splits.csv"
    plot_cmds = [["plot", "roofline"], ["plot", "memory"], ["plot", "capacity"], ["plot", "decode"], ["plot", "time"]]
    targets = {
        "long name": ("o" * 300) + ".png",
        "long path": "/".join(["d" * 200] * 30) + "/x.png",
        "a folder": "adir",
        "a folder with a slash": "adir/",
        "fifo": "fifo.png",
        "dangling symlink": "dangling.png",
        "symlink to a file": "link.png",
        "read-only folder": "ro/x.png",
        "/dev/full": "/dev/full",
        "/dev/null": "/dev/null",
        "no extension": "noext",
        "upper extension": "X.PNG",
        "nul in name": "a\x00b.png",
        "newline in name": "a\nb.png",
    }

    def setup(folder: Path) -> None:
        (folder / "adir").mkdir()
        os.mkfifo(folder / "fifo.png")
        os.symlink(folder / "nowhere" / "x.png", folder / "dangling.png")
        (folder / "real.png").write_bytes(b"old")
        os.symlink(folder / "real.png", folder / "link.png")
        (folder / "ro").mkdir()
        os.chmod(folder / "ro", 0o555)

    for cmd in plot_cmds:
        for label, target in targets.items():
            if label == "fifo":
                continue       # a FIFO with no reader blocks open(); tested in test_fuzz_cli with a reader
            outputs = [target] if label in ("upper extension", "newline in name") else []
            if label == "symlink to a file":
                outputs = ["link.png", "real.png"]
            if label == "read-only folder" and os.geteuid() == 0:
                outputs = [target]          # root writes into a folder of mode 0555
            # a NUL cannot reach a real argv (execve ends a word there); the in-process refusal shows it as a space
            yield cli("files", [*cmd, "-o", target], idents=[target, target.replace("\x00", " "), "--output", "-o",
                                                              "too long"], setup=setup,
                      outputs=outputs, label=f"{' '.join(cmd)} -o {label}")
    for label, target in targets.items():
        if label == "fifo":
            continue
        outputs = ["link.png", "real.png"] if label == "symlink to a file" else (
            [target] if label in ("no extension", "newline in name") else [])
        if label == "read-only folder" and os.geteuid() == 0:
            outputs = [target]
        if label == "upper extension":
            continue                        # validate -o writes a table whatever the name; not an image check
        item = cli("files", ["validate", str(csv), "-o", target], idents=[target, target.replace("\x00", " "),
                   "--output", "-o", "too long"], setup=setup, outputs=outputs, label=f"validate -o {label}")
        # validate -o writes its table under any name (its help: 'Also write the result to this file'): a .png
        # there holds text, so the image check does not apply
        yield Input(item.klass, item.label, setup=setup, check=lambda f, it=item: [
            p for p in run_case(it, f) if " is not a .png image" not in p])
    inputs = {"a folder": "adir", "fifo (no writer)": None, "dangling symlink": "dangling.png",
              "/dev/null": "/dev/null", "/dev/full": "/dev/full", "long": "v" * 5000 + ".csv",
              "unreadable": "secret.csv", "binary csv": "bin.csv", "empty csv": "empty.csv"}

    def setup_in(folder: Path) -> None:
        setup(folder)
        (folder / "secret.csv").write_text(csv.read_text())
        os.chmod(folder / "secret.csv", 0)
        (folder / "bin.csv").write_bytes(os.urandom(4096))
        (folder / "empty.csv").write_text("")

    for label, target in inputs.items():
        if target is None:
            continue
        yield cli("files", ["validate", target], idents=[target[:60], "FILE"], setup=setup_in, label=f"validate {label}")
        yield cli("files", ["report", "-g", target], idents=[target[:40], "--gpu"], setup=setup_in,   # the name clipped
                  label=f"report -g {label}")
        yield cli("files", ["report", "-m", target], idents=[target[:60], "--model"], setup=setup_in,
                  label=f"report -m {label}")
        yield cli("files", ["capacity", "-m", "llama-3-8b", "--engine-log", target],
                  idents=[target[:60], "--engine-log"], setup=setup_in, label=f"capacity --engine-log {label}")
    # the written file's mode follows the umask, and a symlink target is written through
    yield Input("files", "plot -o through a symlink keeps the link", check=_symlink_kept)
    yield Input("files", "output mode follows the umask", check=_mode_follows_umask)


def _symlink_kept(folder: Path) -> list[str]:
    (folder / "real.png").write_bytes(b"old")
    os.symlink("real.png", folder / "link.png")
    out = fs.invoke(["plot", "memory", "-o", "link.png"], folder)
    problems = [] if out.code == 0 else [f"exit {out.code}: {out.stderr[:200]}"]
    if not (folder / "link.png").is_symlink():
        problems.append("the symlink was replaced by a file")
    if (folder / "real.png").read_bytes()[:4] != b"\x89PNG":
        problems.append("the symlink's target was not written")
    return problems


def _mode_follows_umask(folder: Path) -> list[str]:
    old = os.umask(0o022)
    try:
        out = fs.invoke(["plot", "memory", "-o", "m.png"], folder)
    finally:
        os.umask(old)
    if out.code != 0:
        return [f"exit {out.code}"]
    mode = stat.S_IMODE((folder / "m.png").stat().st_mode)
    return [] if mode == 0o644 else [f"mode {oct(mode)} under umask 022"]


# --- real processes: streams, signals, environment --------------------------------------------------------------

def _child_limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLAB_TRACEBACK"}
    env.setdefault("MPLBACKEND", "Agg")
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def _shell(command: str, folder: Path, env: dict) -> tuple[int, str, str]:
    """Run `command` in bash with the console script first on PATH; returns (rc, stdout, stderr)."""
    env = {**env, "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")}
    try:
        proc = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S, preexec_fn=_child_limits, errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "", f"hang: past {CHILD_TIMEOUT_S:g} s"
    return proc.returncode, proc.stdout, proc.stderr


def _stream_problems(rc: int, out: str, err: str, expect_error: bool) -> list[str]:
    problems = []
    if rc == -1:
        return [err]
    if "Traceback" in err:
        problems.append("a traceback")
    if "internal error" in err.lower():
        problems.append("internal error")
    if expect_error:
        if rc != 2:
            problems.append(f"exit {rc} where 2 was expected (output lost)")
        elif not err.strip().splitlines() or not err.strip().splitlines()[0].startswith("error:"):
            problems.append("exit 2 without 'error:' first")
    elif rc not in (0, 2):
        problems.append(f"exit {rc}")
    return problems


STREAM_COMMANDS = ["list models", "list gpus", "report", "report -f json", "capacity", "explain",
                   "report --phase decode", "numerics", "schema gpu", "capacity -f json", "serve -m llama-3-8b -g h200-sxm"]


def stream_inputs() -> Iterator[Input]:
    for command in STREAM_COMMANDS:
        yield Input("streams", f"{command} > /dev/full", check=lambda f, c=command: _stream_problems(
            *_shell(f"rooflab {c} > /dev/full", f, _env()), expect_error=True))
        yield Input("streams", f"{command} >&-", check=lambda f, c=command: _stream_problems(
            *_shell(f"rooflab {c} >&-", f, _env()), expect_error=True))
        # a broken pipe: the reader leaves after one line; rooflab exits quietly (0, 2 or 141, no traceback)
        yield Input("streams", f"{command} | head -n 1", check=lambda f, c=command: _pipe_problems(f, c))
    yield Input("streams", "stderr closed and a bad option", check=lambda f: _stream_problems(
        *_shell("rooflab report -b 0 2>&- ; echo rc=$?", f, _env()), expect_error=False))


def _pipe_problems(folder: Path, command: str) -> list[str]:
    rc, out, err = _shell(f"set -o pipefail; rooflab {command} | head -n 1; echo rc=${{PIPESTATUS[0]}} >&2", folder, _env())
    if rc == -1:
        return [err]
    problems = []
    if "Traceback" in err or "internal error" in err.lower():
        problems.append("a traceback on a broken pipe")
    code = err.strip().splitlines()[-1] if err.strip() else ""
    if code not in ("rc=0", "rc=2", "rc=141", "rc=1"):
        problems.append(f"exit {code}")
    return problems


def signal_inputs() -> Iterator[Input]:
    commands = [["plot", "capacity", "-o", "out.png"], ["plot", "roofline", "-o", "out.svg"],
                ["validate", str(fs.MEASUREMENTS / "h200-splits.csv"), "-o", "out.csv"],
                ["plot", "memory", "-o", "out.pdf"]]
    for cmd in commands:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            for delay in (0.05, 0.8, 2.0):
                yield Input("signals", f"{' '.join(cmd[:2])} {sig.name} after {delay}s",
                            check=lambda f, c=cmd, s=sig, d=delay: _signal_problems(f, c, s, d))


def _signal_problems(folder: Path, cmd: list[str], sig: int, delay: float) -> list[str]:
    env = _env()
    proc = subprocess.Popen([sys.executable, "-m", "rooflab", *cmd], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_child_limits)
    time.sleep(delay)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return ["hang after the signal"]
    problems = []
    left = sorted(p.name for p in folder.iterdir())
    target = cmd[cmd.index("-o") + 1]
    stray = [n for n in left if n != target]
    if stray:
        problems.append(f"left behind: {stray}")
    if target in left and proc.returncode != 0:
        problems.append(f"{target} written but exit {proc.returncode}")
    if "Traceback" in err and any(w in err for w in ("rooflab/cli", "_entry.py", "__main__.py")):
        problems.append("a traceback: " + err.strip().splitlines()[-1][:120])   # (runpy's own, before rooflab: not)
    return problems


ENV_CASES = {
    "PYTHONWARNINGS=error": dict(PYTHONWARNINGS="error"),
    "PYTHONWARNINGS=error::DeprecationWarning": dict(PYTHONWARNINGS="error::DeprecationWarning"),
    "MPLBACKEND=nope": dict(MPLBACKEND="nope"),
    "MPLBACKEND=TkAgg (no display)": dict(MPLBACKEND="TkAgg", DISPLAY=None),
    "MPLBACKEND empty": dict(MPLBACKEND=""),
    "PYTHONIOENCODING=ascii:strict": dict(PYTHONIOENCODING="ascii:strict"),
    "PYTHONIOENCODING=latin-1": dict(PYTHONIOENCODING="latin-1"),
    "PYTHONIOENCODING=nope": dict(PYTHONIOENCODING="nope"),
    "LANG=C LC_ALL=C": dict(LANG="C", LC_ALL="C"),
    "COLUMNS=1": dict(COLUMNS="1"),
    "COLUMNS=0": dict(COLUMNS="0"),
    "COLUMNS=-5": dict(COLUMNS="-5"),
    "COLUMNS=abc": dict(COLUMNS="abc"),
    "COLUMNS=100000": dict(COLUMNS="100000"),
    "HOME unset": dict(HOME=None),
    "HOME unwritable": dict(HOME="/proc", MPLCONFIGDIR=None, XDG_CACHE_HOME=None),
    "TERM=dumb NO_COLOR": dict(TERM="dumb", NO_COLOR="1"),
    "ROOFLAB_TRACEBACK=0": dict(ROOFLAB_TRACEBACK="0"),
}
ENV_COMMANDS = ["report", "capacity -m deepseek-v3 -g h200-sxm --tp 8", "plot memory -o m.png", "report -b 0",
                "report --help", "list models"]


def env_inputs() -> Iterator[Input]:
    for label, extra in ENV_CASES.items():
        for command in ENV_COMMANDS:
            expect_error = command == "report -b 0"

            def check(folder: Path, c=command, e=extra, x=expect_error) -> list[str]:
                rc, out, err = _shell(f"rooflab {c}", folder, _env(**e))
                if rc == 1 and "Fatal Python error: init_stdio_encoding" in err:
                    return []       # the interpreter refuses the encoding before any rooflab code runs
                problems = _stream_problems(rc, out, err, expect_error=x)
                named = rc == 2 and err.startswith("error:") and any(k in err for k in e)   # the variable named
                if not x and rc != 0 and not named:
                    problems.append(f"exit {rc}: {err.strip()[:160]}")
                return problems
            yield Input("environment", f"{label}: rooflab {command}", check=check)


# --- engine_logs ------------------------------------------------------------------------------------------------

def log_inputs() -> Iterator[Input]:
    logs = sorted((ROOT / "tests" / "data" / "engine_logs").glob("*.log"))
    vllm = next(p for p in logs if p.name.startswith("vllm-llama-3-8b"))
    text = vllm.read_text()
    line = next(l for l in text.splitlines() if "model weights take" in l)
    mutations = {
        "20,000 repeats of one line": text + (line + "\n") * 20000,
        "one line of 2 MB": text + "INFO " + "x" * 2_000_000 + "\n",
        "20,000 repeats of a field in one line": text + line * 20000 + "\n",
        "wrapped at 80 columns": "\n".join(text[i:i + 80] for i in range(0, len(text), 80)),
        "CRLF": text.replace("\n", "\r\n"),
        "NUL bytes": text.replace(" ", "\x00", 50),
        "invalid UTF-8": text.encode().replace(b" ", b"\xff", 50).decode("latin-1"),
        "ANSI colours": "\n".join("\x1b[32m" + l + "\x1b[0m" for l in text.splitlines()),
        "numbers cut mid-way": text.replace(".", ",", 30),
        "negative figures": text.replace(" 1", " -1"),
        "huge figures": text.replace("GiB", "0000000000000000000000 GiB"),
        "nan figures": text.replace("GiB", "nan GiB", 3),
        "empty": "",
        "only whitespace": "\n \t\n" * 1000,
        "two engines' logs joined": text + next(p for p in logs if p.name.startswith("sglang")).read_text(),
        "reversed lines": "\n".join(reversed(text.splitlines())),
        "every other line": "\n".join(text.splitlines()[::2]),
    }
    for label, body in mutations.items():
        def setup(folder: Path, b=body) -> None:
            (folder / "e.log").write_bytes(b.encode("utf-8", errors="surrogateescape") if isinstance(b, str) else b)
        for extra in ([], ["-f", "json"], ["--what-if", "gpu-memory-utilization=0.8"]):
            yield cli("engine_logs", ["capacity", "-m", "llama-3-8b", "--engine-log", "e.log", *extra],
                      idents=["e.log", "--engine-log"], json_out="json" in extra, setup=setup,
                      label=f"log {label} {' '.join(extra)}")
    for log in logs:
        for what_if in ["tp=2", "tp=0", "max-model-len=1k", "gpu-memory-utilization=1.2", "kv-cache-dtype=fp8",
                        "nope=3", "=", "tp=2,tp=4"]:
            yield cli("engine_logs", ["capacity", "--engine-log", str(log), "--what-if", what_if],
                      label=f"{log.name} --what-if {what_if}")


# --- api --------------------------------------------------------------------------------------------------------

def api_inputs() -> Iterator[Input]:
    """tests/test_api_checks.py's entry points (valid arguments there), each argument replaced by kinds that suite
    does not try: NumPy scalars (nan, a negative, a valid float32, an int8 at its limit, np.bool_), bytes, an array of
    strings, a complex array, a masked array, Decimal('NaN'), a Fraction, a date, 2**64, -0.0. The must-refuse kinds
    (no real positive number) raise a RooflabError naming the argument; the rest return finite figures or refuse."""
    import datetime
    import decimal
    import fractions

    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    import test_api_checks as tac

    must_refuse = {"np.float64(nan)": np.float64("nan"), "np.float64(inf)": np.float64("inf"),
                   "np.int64(-3)": np.int64(-3), "bytes": b"4096", "array of str": np.array(["a", "b"]),
                   "complex array": np.array([1j, 2j]), "Decimal(NaN)": decimal.Decimal("NaN"),
                   "date": datetime.date(2024, 1, 1), "masked": np.ma.masked_array([100, 200], [1, 0])}
    either = {"np.float32(4096)": np.float32(4096), "np.int8(127)": np.int8(127), "np.bool_": np.bool_(True),
              "Fraction(7,2)": fractions.Fraction(7, 2), "2**64": 2 ** 64, "-0.0": -0.0,
              "np.uint64 max": np.uint64(2 ** 64 - 1), "0-d array": np.array(4096)}
    for name, call, kwargs, accepts in tac._entry_points():
        for argument in kwargs:
            for kname, value in {**must_refuse, **either}.items():
                refuse = kname in must_refuse and not (argument in ("ref",) and kname == "bytes")

                def check(folder: Path, c=call, kw=kwargs, a=argument, v=value, r=refuse, q=name, k=kname):
                    what = f"{q}({a}={k})"
                    spoken = a.replace("num_", "number of ").replace("_", " ").replace("utilization", "utilisation")
                    words = [a, spoken, *tac.ALIASES.get((q, a), ()), f"GEMM {a}", "context length", "n (samples)"]
                    try:
                        result = fs.check_api(lambda: c(**{**kw, a: v}),
                                              idents=[w for w in words if len(w) > 2] + [f"{a} must", f"{a} >="],
                                              expect_error=True if r else None, what=what)
                    except AssertionError as exc:
                        return [str(exc)[:300]]
                    from rooflab.errors import RooflabError
                    if not isinstance(result, RooflabError) and q not in API2_SENTINELS:   # their NaN: unpriced
                        where = fs.finite_everywhere(result)                                 # points, deliberate
                        if where:
                            return [f"{what}: returned a non-finite figure at {where}"]
                    return []
                yield Input("api", f"{name}({argument}={kname})", check=check)
    from rooflab import units
    for text in ["0.5B", "1.5GiB", "-1GiB", "nan GiB", "1e400 B", "", " ", "1,5 GiB", "158,6", "GiB", "1 GiB 2",
                 "0x10 B", "1_000 B", "\u0661 GiB", "inf", "10 ** 3", "0.3 B", "1e-9 GiB"]:
        def check(folder: Path, t=text) -> list[str]:
            # parse_bytes is the CLI's parser: its contract is a ValueError quoting the text (the option's
            # callback wraps it as an InputError naming the option); what must not happen is a wrong number
            try:
                value = units.parse_bytes(t)
            except ValueError as exc:
                return [] if (t.strip()[:20] in str(exc) and "\n" not in str(exc)) else [f"ValueError: {exc}"]
            except Exception as exc:  # noqa: BLE001
                return [f"parse_bytes({t!r}): {type(exc).__name__}: {exc}"]
            if isinstance(value, (int, float)) and (value <= 0 or not math.isfinite(value) or value != int(value)):
                return [f"parse_bytes({t!r}) = {value}: a byte count that is not a positive whole number"]
            return []
        yield Input("api", f"parse_bytes({text!r})", check=check)


# --- numbers ----------------------------------------------------------------------------------------------------

def number_inputs() -> Iterator[Input]:
    """Figures rooflab prints against ones derived here by hand. Each expectation states its formula."""
    for name, hf in [("tiny", dict(layers=4, heads=8, kv=2, d=64, hidden=512, ffn=1024, vocab=1000)),
                     ("mid", dict(layers=24, heads=16, kv=4, d=128, hidden=2048, ffn=5632, vocab=32000)),
                     ("mha", dict(layers=12, heads=12, kv=12, d=64, hidden=768, ffn=3072, vocab=50257))]:
        for kv_dtype, kv_bytes in (("auto", 2), ("fp8", 1)):
            for tp in (1, 2, 4):
                yield Input("numbers", f"{name} kv/token {kv_dtype} tp {tp}",
                            check=lambda f, h=hf, kd=kv_dtype, kb=kv_bytes, t=tp: _kv_check(f, h, kd, kb, t))
        yield Input("numbers", f"{name} weights bf16 = 2 x params",
                    check=lambda f, h=hf: _weights_check(f, h, None))
        yield Input("numbers", f"{name} weights gptq 4-bit",
                    check=lambda f, h=hf: _weights_check(f, h, "gptq"))
    for L in (1024, 8192, 32768):
        for b in (1, 8):
            for hkv, d in ((8, 128), (1, 64)):
                yield Input("numbers", f"decode floor llama-like L {L} b {b} hkv {hkv} d {d}",
                            check=lambda f, L=L, b=b, hkv=hkv, d=d: _decode_check(f, L, b, hkv, d))
    for dcp in (1, 2):
        yield Input("numbers", f"capacity 2-KV-head config tp 4 dcp {dcp}", check=lambda f, c=dcp: _dcp_check(f, c))
    for T in (1024, 4096):
        yield Input("numbers", f"prefill flops causal T {T}", check=lambda f, T=T: _prefill_check(f, T))


def _hf_doc(h: dict) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": h["hidden"],
            "num_hidden_layers": h["layers"], "num_attention_heads": h["heads"], "num_key_value_heads": h["kv"],
            "head_dim": h["d"], "vocab_size": h["vocab"], "max_position_embeddings": 4096,
            "tie_word_embeddings": False, "attention_bias": False, "intermediate_size": h["ffn"],
            "torch_dtype": "bfloat16"}


def _json_of(folder: Path, args: list[str]) -> tuple[Optional[dict], list[str]]:
    out = fs.invoke(args, folder)
    if out.code != 0:
        return None, [f"exit {out.code}: {out.stderr.strip()[:200]}"]
    return fs.strict_json(out.stdout), []


def _kv_check(folder: Path, h: dict, kv_dtype: str, kv_bytes: int, tp: int) -> list[str]:
    """kv_bytes_per_token (one GPU) = 2 (K and V) x layers x ceil-share of KV heads x head_dim x bytes, the share
    max(1, H_kv / tp) (a KV head replicated once tp passes H_kv); block = page_size x that; blocks =
    floor(kv_budget / block)."""
    (folder / "c").mkdir()
    (folder / "c" / "config.json").write_text(json.dumps(_hf_doc(h)))
    doc, problems = _json_of(folder, ["capacity", "-m", "c", "-g", "h100-sxm", "--tp", str(tp), "--kv-cache-dtype",
                                      kv_dtype, "-f", "json"])
    if problems:
        return [] if h["kv"] % tp and tp < h["kv"] else problems
    heads = max(1, h["kv"] // tp)
    expect = 2 * h["layers"] * heads * h["d"] * kv_bytes
    got = doc["kv_bytes_per_token"]
    out = [] if got == expect else [f"kv_bytes_per_token {got} != 2*{h['layers']}*{heads}*{h['d']}*{kv_bytes} = {expect}"]
    if doc["block_bytes"] != doc["page_size"] * expect:
        out.append(f"block_bytes {doc['block_bytes']} != page_size x kv/token")
    if doc["num_blocks"] != doc["kv_budget_bytes"] // doc["block_bytes"]:
        out.append(f"num_blocks {doc['num_blocks']} != floor(kv_budget / block)")
    if doc["kv_heads_per_gpu"] != heads:
        out.append(f"kv_heads_per_gpu {doc['kv_heads_per_gpu']} != {heads}")
    return out


def _params(h: dict) -> int:
    """Llama parameters: embeddings V*h, untied head V*h, per layer q h*H*d + k,v 2*h*Hkv*d + o H*d*h + MLP 3*h*I +
    two norms 2h, and the final norm h."""
    per_layer = (h["hidden"] * h["heads"] * h["d"] + 2 * h["hidden"] * h["kv"] * h["d"] + h["heads"] * h["d"] *
                 h["hidden"] + 3 * h["hidden"] * h["ffn"] + 2 * h["hidden"])
    return 2 * h["vocab"] * h["hidden"] + h["layers"] * per_layer + h["hidden"]


def _weights_check(folder: Path, h: dict, quant: Optional[str]) -> list[str]:
    """bf16: weights = 2 bytes x params. GPTQ 4-bit, group 128: each linear weight of a layer (q, k, v, o, gate, up,
    down) at 0.5 byte a weight plus its group scales and zeros; embeddings, head and norms stay bf16. The check
    here is a bracket: 0.5 byte x linear + 2 x the rest <= weights <= that + 4 bytes x (linear / 128) (an fp16 scale
    and a packed zero per group of 128, with room)."""
    doc_hf = _hf_doc(h)
    if quant:
        doc_hf["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
                                         "sym": True}
    (folder / "c").mkdir()
    (folder / "c" / "config.json").write_text(json.dumps(doc_hf))
    doc, problems = _json_of(folder, ["capacity", "-m", "c", "-g", "h100-sxm", "-f", "json"])
    if problems:
        return problems
    params = _params(h)
    got = doc["weights_bytes"]
    if not quant:
        return [] if got == 2 * params else [f"weights {got} != 2 x {params}"]
    linear = h["layers"] * (h["hidden"] * h["heads"] * h["d"] + 2 * h["hidden"] * h["kv"] * h["d"] +
                            h["heads"] * h["d"] * h["hidden"] + 3 * h["hidden"] * h["ffn"])
    rest = params - linear
    low = linear // 2 + 2 * rest
    high = low + 4 * linear // 128 + 1
    return [] if low <= got <= high else [f"gptq weights {got} outside [{low}, {high}] (0.5 B x {linear} linear + "
                                          f"2 B x {rest} rest, + group scales)"]


def _decode_check(folder: Path, L: int, b: int, hkv: int, d: int) -> list[str]:
    """Paged decode, one layer: flops = 4 x b x H x L x d (QK^T and PV, 2 flops a multiply-add); kv_bytes =
    2 x b x L x Hkv x d x 2 (fp16); t_floor >= kv_bytes / bandwidth (H100 3.35e12 B/s) and t_floor =
    max(flops / matmul roof, hbm_bytes / bandwidth)."""
    heads = hkv * 4
    h = dict(layers=2, heads=heads, kv=hkv, d=d, hidden=heads * d, ffn=4 * heads * d, vocab=1000)
    (folder / "c").mkdir()
    doc_hf = _hf_doc(h)
    doc_hf["max_position_embeddings"] = 65536
    (folder / "c" / "config.json").write_text(json.dumps(doc_hf))
    doc, problems = _json_of(folder, ["report", "--phase", "decode", "-m", "c", "-g", "h100-sxm", "-b", str(b),
                                      "-L", str(L), "-f", "json"])
    if problems:
        return problems
    row = next(r for r in doc["rows"] if r["variant"] == "paged")
    out = []
    flops = 4 * b * heads * L * d
    kv = 2 * b * L * hkv * d * 2
    if row["flops"] != flops:
        out.append(f"paged flops {row['flops']} != 4 b H L d = {flops}")
    if row["kv_bytes"] != kv:
        out.append(f"paged kv_bytes {row['kv_bytes']} != 2 b L Hkv d 2 = {kv}")
    floor = max(row["flops"] / 989.4e12, row["hbm_bytes"] / 3.35e12)
    if not math.isclose(row["t_floor_s"], floor, rel_tol=1e-9):
        out.append(f"t_floor {row['t_floor_s']} != max(flops/989.4e12, bytes/3.35e12) = {floor}")
    if row["hbm_bytes"] < kv:
        out.append("hbm_bytes below the KV it reads")
    return out


def _dcp_check(folder: Path, dcp: int) -> list[str]:
    """A config of 4 layers, 32 heads, 2 KV heads, d 128 at TP 4: one KV head a GPU (each replicated twice, so
    DCP <= 2), 2 x 4 x 1 x 128 x 2 = 2,048 B a token; DCP c splits each sequence's tokens over c GPUs of the TP
    group, so a sequence's KV a GPU is ceil(L / c / page) pages x page x 2,048 (L 4096)."""
    h = dict(layers=4, heads=32, kv=2, d=128, hidden=4096, ffn=8192, vocab=1000)
    (folder / "c").mkdir()
    (folder / "c" / "config.json").write_text(json.dumps(_hf_doc(h)))
    doc, problems = _json_of(folder, ["capacity", "-m", "c", "-g", "h200-sxm", "--tp", "4", "--dcp", str(dcp),
                                      "-L", "4096", "-f", "json"])
    if problems:
        return problems
    out = []
    per_token = 2048
    if doc["kv_bytes_per_token"] not in (per_token, per_token // dcp):
        out.append(f"kv/token {doc['kv_bytes_per_token']} (expected {per_token} or {per_token}/{dcp})")
    per_seq = math.ceil(4096 / dcp / doc["page_size"]) * doc["page_size"] * per_token
    if doc["kv_bytes_per_sequence"] != per_seq:
        out.append(f"kv_bytes_per_sequence {doc['kv_bytes_per_sequence']} != ceil(4096/{dcp}/page) x page x "
                   f"{per_token} = {per_seq}")
    return out


def _prefill_check(folder: Path, T: int) -> list[str]:
    """Flash prefill, llama-3-8b, causal, batch 1, one layer: QK^T and PV over the lower triangle,
    flops = 4 x H x d x T(T+1)/2 (or T^2/2: tiles may count the diagonal whole); at most 4 H d T^2 / 2 x 1.1."""
    doc, problems = _json_of(folder, ["report", "-m", "llama-3-8b", "-g", "h100-sxm", "-T", str(T), "-b", "1",
                                      "-f", "json"])
    if problems:
        return problems
    row = next(r for r in doc["rows"] if r["variant"] == "flash")
    exact = 4 * 32 * 128 * T * (T + 1) / 2
    half = 4 * 32 * 128 * T * T / 2
    got = row["flops"]
    if not (half * 0.999 <= got <= exact * 1.001 or math.isclose(got, half, rel_tol=1e-6)):
        return [f"flash causal flops {got} not in [4HdT^2/2 = {half}, 4HdT(T+1)/2 = {exact}]"]
    return []


# === Round 2 (session 10): what sessions 8-10 added ================================================================
# Classes: options2 (capacity engine / PP / LoRA / Mamba options, report --phase step's engine and parallel options,
# --shape with --published-tflops, serve's --engine-version, validate --published, --impl on every GPU), hf_config2
# (the session 8-9 families' real config.json files, tests/data/hf_configs, mutated; quantisation blocks),
# api2 (step_report, engine_kernels, Scheduler, step_times, plan_capacity, explain_step, the published loaders,
# cudnn_kernel), numbers2 (figures derived here by hand, the formula beside each), classic2 (streams, signals,
# environment and files on the new commands). The same invariants (fuzz_support.problems_of, check_api).

HF_CONFIGS = ROOT / "tests" / "data" / "hf_configs"
GPUS = sorted(p.stem for p in fs.HARDWARE.glob("*.yaml"))
VLLM_VERSIONS = ["v0.2", "v0.6.4", "v0", "v0.8", "v1"]
SGLANG_VERSIONS = ["v0.4", "v0.5"]
BAD_VERSIONS = ["v9", "0.8", "v0.8.5", "", "latest", "v-1", "v0.4"]


def option2_inputs() -> Iterator[Input]:
    import random
    rng = random.Random(2411)
    models = ["llama-3-8b", "qwen3-30b-a3b", "deepseek-v3", "gemma-2-9b", "llama-3-70b", "mixtral-8x7b",
              "qwen3-next-80b-a3b", "gpt-oss-20b", "minimax-m2.5", "llama-4-scout"]
    gpus = ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", "mi300x", "l4"]
    cap_extra = [["--pp", "2"], ["--pp", "4"], ["--pp", "0"], ["--pp", "-1"], ["--pp", "1000"], ["--pp", "3"],
                 ["--pp", "2", "--pp-layer-partition", "16,16"], ["--pp", "2", "--pp-layer-partition", "31,1"],
                 ["--pp", "2", "--pp-layer-partition", "30,1"], ["--pp", "2", "--pp-layer-partition", "0,32"],
                 ["--pp", "2", "--pp-layer-partition", "-1,33"], ["--pp", "2", "--pp-layer-partition", "a,b"],
                 ["--pp", "2", "--pp-layer-partition", ""], ["--pp", "2", "--pp-layer-partition", "16"],
                 ["--pp-layer-partition", "16,16"], ["--pp", "2", "--pp-layer-partition", "16,16,0"],
                 ["--pp", "2", "--pp-layer-partition", "1e1,22"], ["--pp", "2", "--pp-layer-partition", "16, 16"],
                 ["--memory-in-use", "4GiB"], ["--memory-in-use", "0"], ["--memory-in-use", "-1GiB"],
                 ["--memory-in-use", "200GiB"], ["--memory-in-use", "nan"], ["--memory-in-use", "10"],
                 ["--cuda-visible-memory", "79.22GiB"], ["--cuda-visible-memory", "0"], ["--cuda-visible-memory", "1B"],
                 ["--cuda-visible-memory", "1e30GiB"], ["--cuda-visible-memory", "85GB"],
                 ["--cuda-visible-memory", "inf"], ["--enable-lora"], ["--enable-lora", "--max-loras", "4"],
                 ["--enable-lora", "--max-loras", "0"], ["--enable-lora", "--max-lora-rank", "64"],
                 ["--enable-lora", "--max-lora-rank", "0"], ["--enable-lora", "--max-lora-rank", "-8"],
                 ["--enable-lora", "--max-lora-rank", "100000"], ["--max-loras", "4"], ["--max-lora-rank", "16"],
                 ["--enable-lora", "--max-loras", "1000000"],
                 ["--mamba-ssm-dtype", "float32"], ["--mamba-ssm-dtype", "bfloat16"], ["--mamba-ssm-dtype", "int8"],
                 ["--mamba-ssm-dtype", ""], ["--mamba-ssm-cache-dtype", "float16"], ["--mamba-cache-mode", "align"],
                 ["--mamba-cache-mode", "none"], ["--mamba-cache-mode", "all"], ["--max-mamba-cache-size", "64"],
                 ["--max-mamba-cache-size", "0"], ["--max-mamba-cache-size", "-3"],
                 ["--mamba-full-memory-ratio", "0"], ["--mamba-full-memory-ratio", "101"],
                 ["--mamba-full-memory-ratio", "0.5"], ["--what-if", "tp=2"],
                 ["--max-num-seqs", "1"], ["--max-num-seqs", "0"], ["--max-num-seqs", "-5"],
                 ["--max-num-seqs", "100000000"], ["--max-running-requests", "32"], ["--max-num-batched-tokens", "1"],
                 ["--non-torch-gib", "-1"], ["--non-torch-gib", "nan"], ["--activation-gib", "1e30"],
                 ["--tp", "2"], ["--tp", "8"], ["--ep", "2"], ["--enable-expert-parallel", "--tp", "2"],
                 ["--dp", "2"], ["--kv-cache-dtype", "fp8"], ["--kv-cache-dtype", "fp8_ds_mla"]]
    for i in range(190):
        engine = rng.choice(["vllm", "sglang", "vllm", "sglang", None])
        args = ["capacity", "-m", rng.choice(models), "-g", rng.choice(gpus)]
        if engine:
            args += ["--engine", engine]
            if rng.random() < 0.8:
                pool = VLLM_VERSIONS if engine == "vllm" else SGLANG_VERSIONS
                args += ["--engine-version", rng.choice(pool + BAD_VERSIONS[:2] if rng.random() < 0.2 else pool)]
        for _ in range(rng.randint(1, 3)):
            args += rng.choice(cap_extra)
        if rng.random() < 0.6:
            args += ["-f", "json"]
        yield cli("options2", args, json_out="json" in args, label=f"capacity {i}: " + " ".join(args))
    step_extra = [["--engine", "vllm"], ["--engine", "sglang"], ["--engine", "tensorrt-llm"], ["--engine", "vllm",
                  "--engine-version", "0.9.0"], ["--engine", "vllm", "--engine-version", "v0.6.4"],
                  ["--engine", "sglang", "--engine-version", "0.4.6"], ["--engine", "tensorrt-llm",
                  "--engine-version", "0.9"], ["--engine-version", "0.9.0"], ["--engine", "vllm", "--engine-version",
                  "banana"], ["--engine", "vllm", "--engine-version", ""], ["--engine", "vllm", "--engine-version",
                  "99.0"], ["--engine", "sglang", "--engine-version", "-1"],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":3}'],
                  ["--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'],
                  ["--speculative-config", '{"method":"ngram","num_speculative_tokens":5}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":0}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":1e9}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":NaN}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":"3"}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":true}'],
                  ["--speculative-config", '{"method":"warp","num_speculative_tokens":2}'],
                  ["--speculative-config", '{"method":"model","num_speculative_tokens":2}'],
                  ["--speculative-config", '{"method":"model","model":"llama-3.2-1b","num_speculative_tokens":2}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":2,"method":"mtp"}'],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":2,"extra":1}'],
                  ["--speculative-config", 'null'], ["--speculative-config", '""'],
                  ["--speculative-algorithm", "EAGLE"], ["--speculative-algorithm", "EAGLE3",
                  "--speculative-num-draft-tokens", "4"], ["--speculative-algorithm", "NEXTN"],
                  ["--speculative-algorithm", "eagle"], ["--speculative-algorithm", "MEDUSA"],
                  ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "1"],
                  ["--speculative-algorithm", "EAGLE", "--speculative-num-draft-tokens", "0"],
                  ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "llama-3.2-1b"],
                  ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "nope"],
                  ["--acceptance-rate", "1"], ["--acceptance-rate", "0"], ["--acceptance-rate", "1.5"],
                  ["--acceptance-rate", "nan"],
                  ["--pp", "2"], ["--pp", "4", "--micro-batches", "4"], ["--pp", "2", "--micro-batches", "0"],
                  ["--pp", "2", "--micro-batches", "-1"], ["--micro-batches", "3"], ["--pp", "3"], ["--pp", "128"],
                  ["--dp", "2"], ["--dp", "4", "--enable-dp-attention", "--tp", "4"], ["--dp", "3",
                  "--enable-dp-attention", "--tp", "4"], ["--enable-dp-attention"], ["--ep", "2"], ["--ep", "8"],
                  ["--ep", "3"], ["--enable-expert-parallel", "--tp", "4"], ["--enable-expert-parallel"],
                  ["--enforce-eager"], ["--disable-cuda-graph"], ["--enforce-eager", "--fused-elementwise"],
                  ["--quantization", "fp8"], ["--quantization", "fp8_block"], ["--quantization", "mxfp4"],
                  ["--quantization", "nvfp4"], ["--quantization", "int4_g128"], ["--quantization", "int3"],
                  ["--quantization", "awq"], ["--gemm-dtype", "fp8"], ["--gemm-dtype", "bf16"],
                  ["--gemm-dtype", "int8"], ["--gemm-dtype", "fp4"], ["--tp", "2"], ["--tp", "8"], ["--tp", "3"],
                  ["--step", "prefill"], ["-b", "64"], ["-b", "0"], ["-L", "128k"], ["--expert-imbalance", "0.5"],
                  ["--expert-imbalance", "nan"], ["--kv-cache-dtype", "fp8"]]
    for i in range(190):
        args = ["report", "--phase", "step", "-m", rng.choice(models), "-g", rng.choice(gpus)]
        for _ in range(rng.randint(1, 3)):
            args += rng.choice(step_extra)
        if rng.random() < 0.5:
            args += ["-f", "json"]
        cmd = "report" if rng.random() < 0.8 else "explain"
        if cmd == "explain":          # explain --phase step takes the step's options; --json its strict JSON
            args = ["explain", *args[1:]]
            if args[-2:] == ["-f", "json"]:
                args[-2:] = ["--json"]
        yield cli("options2", args, json_out="json" in args or "--json" in args, label=f"step {i}: " + " ".join(args))
    shapes = ["1,32,8,8192,128", "2,16,16,4096,64", "1,128,1,4096,576,512", "4,64,8,1024,128", "1,1,1,1,1",
              "1,32,8,8192,128,0", "1,32,8,8192,0", "1,32,0,8192,128", "1,32,8,-5,128", "1,32,8,8192,1e3"]
    for shape in shapes:
        for extra in ([], ["--published-tflops", "500"], ["--published-tflops", "0"], ["--published-tflops", "-3"],
                      ["--published-tflops", "nan"], ["--published-tflops", "1e9"], ["--published-tflops", "500",
                      "--convention", "fa_no_half"], ["--published-tflops", "500", "--convention", "naive"],
                      ["--convention", "fa_no_half"], ["--published-tflops", "500", "--no-causal"],
                      ["--published-tflops", "500", "--phase", "decode"], ["--published-tflops", "500", "-m",
                      "llama-3-8b"]):
            yield cli("options2", ["report", "--shape", shape, "-g", "h200-sxm", *extra, "-f", "json"], json_out=True,
                      label=f"report --shape {shape} {' '.join(extra)}")
        yield cli("options2", ["explain", "--shape", shape, "-g", "h200-sxm", "--published-tflops", "400"],
                  label=f"explain --shape {shape} --published-tflops 400")
    serve_base = [["serve", "-m", "llama-3-8b", "-g", "h100-sxm"], ["serve", "-m", "qwen3-30b-a3b", "-g", "h200-sxm"],
                  ["plot", "serve", "-m", "llama-3-8b", "-g", "h200-sxm", "-o", "s.png"]]
    serve_extra = [["--engine", "vllm", "--engine-version", "0.9.0"], ["--engine", "vllm", "--engine-version", "v1"],
                   ["--engine", "sglang", "--engine-version", "0.4.6"], ["--engine", "sglang", "--engine-version",
                   "v0.5"], ["--engine", "tensorrt-llm", "--engine-version", "0.9"], ["--engine-version", "nope"],
                   ["--engine-version", ""], ["--engine", "vllm", "--engine-version", "0.0.0"],
                   ["--tpot-slo", "30ms"], ["--ttft-slo", "200ms"], ["--ttft-slo", "-1ms"], ["--tpot-slo", "nan"],
                   ["--tpot-slo", "30ms", "--target-rate", "10"], ["--target-rate", "10"], ["--target-rate", "0"],
                   ["--tpot-slo", "1us"], ["--ttft-slo", "1e9s"], ["--tpot-slo", "30"], ["--tpot-slo", "30 ms"],
                   ["--ttft-slo", "0.2s", "--tpot-slo", "30ms", "--target-rate", "1e12"]]
    for i in range(70):
        base = list(rng.choice(serve_base))
        for _ in range(rng.randint(1, 2)):
            base += rng.choice(serve_extra)
        if base[0] != "plot" and rng.random() < 0.4:
            base += ["-f", "json"]
        yield cli("options2", base, json_out="json" in base, outputs=["s.png"] if "s.png" in base else [],
                  label=f"serve2 {i}: " + " ".join(base))
    for extra in ([], ["-f", "json"], ["-f", "csv"], ["-f", "markdown"], ["--published", "--published"],
                  ["--published", "-g", "h200-sxm"], ["--published", "--impl", "torch_cudnn"]):
        yield cli("options2", ["validate", "--published", *extra], json_out="json" in extra,
                  label=f"validate --published {' '.join(extra)}")
    # what the help of report --phase step's -q / --weight-dtype lists (fp8, fp8_block, mxfp4, nvfp4, int4_g128)
    # must be priced, on a GPU with fp4 and fp8 rates
    for fmt in ("fp8", "fp8_block", "mxfp4", "nvfp4", "int4_g128"):
        for spelling in ("-q", "--weight-dtype"):
            yield cli("options2", ["report", "--phase", "step", "-m", "llama-3-8b", "-g", "b200", spelling, fmt,
                                   "-f", "json"], expect=0, json_out=True,
                      label=f"report --phase step {spelling} {fmt} (listed in its help)")
    # a CUDA-visible total above the GPU's memory is refused, as the GPU YAML's is (yaml_spec: visible above capacity)
    for engine in ("vllm", "sglang"):
        for size in ("200GiB", "1TiB"):
            yield cli("options2", ["capacity", "--engine", engine, "-g", "h100-sxm", "--cuda-visible-memory", size,
                                   "-f", "json"], idents=["--cuda-visible-memory"], expect=2, json_out=True,
                      label=f"capacity --engine {engine} --cuda-visible-memory {size} on an 80 GB H100")
    # the start-up logs with the new engine options beside them
    logs = sorted((ROOT / "tests" / "data" / "engine_logs").glob("*.log"))[:8]
    for log in logs:
        for extra in (["--pp", "2"], ["--enable-lora"], ["--memory-in-use", "4GiB"], ["--cuda-visible-memory", "70GiB"],
                      ["--what-if", "tp=2", "--what-if", "max-model-len=4k"], ["--engine-version", "v0.2"],
                      ["--mamba-ssm-dtype", "float32"], ["--max-num-seqs", "1"], ["--what-if", "block-size=7"]):
            yield cli("options2", ["capacity", "--engine-log", str(log), *extra, "-f", "json"], json_out=True,
                      label=f"{log.name} {' '.join(extra)}")
    # --what-if's refusal without an engine log says what it needs (--engine alone is refused in turn)
    yield cli("options2", ["capacity", "--what-if", "tp=2"], idents=["--engine-log"], label="--what-if alone")
    # a bare number for a memory size: '80' read as 80 bytes is a CUDA-visible total of 0.000 GiB ('80G' is refused)
    for option, value in (("--cuda-visible-memory", "80"), ("--memory-in-use", "10"), ("--cuda-visible-memory", "79.22")):
        yield cli("options2", ["capacity", "--engine", "vllm", option, value, "-f", "json"], idents=[option],
                  expect=2, json_out=True, label=f"capacity --engine vllm {option} {value} (no unit)")
    for gpu in GPUS:
        for impl in ("torch_cudnn", "torch_eager"):
            for phase in (["-T", "4096"], ["--phase", "decode", "-L", "8k", "-b", "8"]):
                yield cli("options2", ["report", "-g", gpu, "--impl", impl, *phase, "-f", "json"], json_out=True,
                          label=f"report -g {gpu} --impl {impl} {' '.join(phase)}")


#: The session 8-9 families' real files (tests/data/hf_configs/SOURCES.md) and where their weights fit.
HF2_FILES = {"phi-3.5-mini-instruct.json": ["-g", "h100-sxm"], "phi-4-mini-instruct.json": ["-g", "h100-sxm"],
             "aya-23-8b.json": ["-g", "h100-sxm"], "granite-3.1-1b-a400m-instruct.json": ["-g", "h100-sxm"],
             "olmo-2-1124-7b.json": ["-g", "h100-sxm"], "glm-4.7-fp8.partial.json": ["-g", "h200-sxm", "--tp", "8"],
             "minimax-m2.5.partial.json": ["-g", "h200-sxm", "--tp", "8"],
             "deepseek-v3.2.json": ["-g", "h200-sxm", "--tp", "8"], "llava-1.5-7b.json": ["-g", "h100-sxm"],
             "qwen3-vl-8b-instruct.partial.json": ["-g", "h100-sxm"],
             "qwen3-next-80b-a3b-thinking.json": ["-g", "h200-sxm", "--tp", "4"]}
#: Fields every reader reads as a size: a negative or a string there is refused, never priced.
SIZE_FIELDS = {"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
               "intermediate_size", "vocab_size", "moe_intermediate_size", "kv_lora_rank", "qk_rope_head_dim",
               "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "num_experts", "num_local_experts",
               "num_experts_per_tok", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
               "linear_value_head_dim", "linear_conv_kernel_dim", "index_head_dim", "index_n_heads", "index_topk",
               "shared_expert_intermediate_size", "full_attention_interval", "sliding_window", "rotary_dim",
               "max_position_embeddings", "q_lora_rank", "n_shared_experts", "first_k_dense_replace"}
#: Size fields no reader reads (a partial rotary width, the indexer's top-k): any value is ignored, not refused.
UNREAD_FIELDS = {"rotary_dim", "index_topk"}
BAD2 = [-1, "32", 0, 1e30, True, None, 2.5, [8], -(2 ** 70)]
MUST_REFUSE2 = (-1, "32", 2.5, [8], -(2 ** 70))


def _hf2_base(name: str) -> dict:
    return json.loads((HF_CONFIGS / name).read_text())


def _cohere2() -> dict:
    """Cohere2 (Command R7B's layout) built from aya-23-8b's Cohere file: a window of 4096 on three layers in four
    (sliding_window_pattern 4), as transformers' Cohere2Config reads it."""
    doc = _hf2_base("aya-23-8b.json")
    return {**doc, "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "sliding_window": 4096,
            "sliding_window_pattern": 4}


def _mutations(doc: dict) -> Iterator[tuple[str, list[str], dict]]:
    """(label, the key path, mutated doc, the bad value or None) for the size fields the file holds, at the top and under text_config."""
    spots = [((), doc)] + [((k,), v) for k, v in doc.items() if k in ("text_config",) and isinstance(v, dict)]
    n = 0
    for prefix, section in spots:
        for key in sorted(section):
            if key not in SIZE_FIELDS or isinstance(section[key], (dict, list, str)):
                continue
            for j in range(3):
                bad = BAD2[(n + j) % len(BAD2)]
                new = copy.deepcopy(doc)
                target = new
                for p in prefix:
                    target = target[p]
                target[key] = bad
                yield f"{'.'.join(prefix + (key,))}={bad!r:.20}", [*prefix, key], new, bad
            new = copy.deepcopy(doc)
            target = new
            for p in prefix:
                target = target[p]
            del target[key]
            yield f"without {'.'.join(prefix + (key,))}", [*prefix, key], new, None
            n += 1


def hf2_inputs() -> Iterator[Input]:
    docs = {name: _hf2_base(name) for name in HF2_FILES}
    docs["cohere2 (from aya)"] = _cohere2()
    where_of = {**HF2_FILES, "cohere2 (from aya)": ["-g", "h100-sxm"]}
    for name, base in docs.items():
        where = where_of[name]
        yield cli("hf_config2", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"], expect=0, json_out=True,
                  setup=_write_config(base), label=f"{name} as is")
        yield cli("hf_config2", ["report", "--phase", "step", "-m", "cfg", *where, "-f", "json"], json_out=True,
                  setup=_write_config(base), label=f"{name} step as is")
        for label, path, doc, bad in _mutations(base):
            refuse = (not isinstance(bad, bool)) and any(bad == r and type(bad) is type(r) for r in MUST_REFUSE2)
            # a nested config's text fields are read from text_config; the top-level copy is not read
            refuse = refuse and path[-1] not in UNREAD_FIELDS and not (len(path) == 1 and "text_config" in base)
            yield cli("hf_config2", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"],
                      idents=["config.json", path[-1]], expect=2 if refuse else None, json_out=True,
                      setup=_write_config(doc), label=f"{name} {label}")
        raw = json.dumps(base)
        for key in ("num_hidden_layers", "hidden_size"):
            if f'"{key}": ' in raw:
                yield cli("hf_config2", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"],
                          idents=["config.json"], expect=2, json_out=True,
                          setup=_write_config(None, re.sub(rf'"{key}": [0-9]+', f'"{key}": NaN', raw, count=1)),
                          label=f"{name} raw {key}: NaN")
    # contradictions the engines refuse: Qwen3-Next's 7 value heads do not split over TP 4 (vLLM's GatedDeltaNet
    # divides num_v_heads by TP; capacity --engine vllm refuses it), so rooflab's bound and the step refuse it too
    qn = {**_hf2_base("qwen3-next-80b-a3b-thinking.json"), "linear_num_value_heads": 7}
    for cmd in (["capacity", "-m", "cfg", "-g", "h200-sxm", "--tp", "4", "-f", "json"],
                ["report", "--phase", "step", "-m", "cfg", "-g", "h200-sxm", "--tp", "4", "-f", "json"],
                ["capacity", "-m", "cfg", "-g", "h200-sxm", "--tp", "4", "--engine", "vllm", "-f", "json"]):
        yield cli("hf_config2", cmd, idents=["--tp", "linear_num_value_heads", "state"], expect=2, json_out=True,
                  setup=_write_config(qn), label=f"qwen3-next 7 value heads at TP 4: {' '.join(cmd[:3])}")
    # quantisation blocks on a dense file (OLMo 2) and the MoE file (GLM-4.7): real-looking, then mutated
    dense = _hf2_base("olmo-2-1124-7b.json")
    moe = {k: v for k, v in _hf2_base("glm-4.7-fp8.partial.json").items() if k != "quantization_config"}
    ct = lambda w, **kw: {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
                          "weights": w}}, **kw}
    blocks = {
        "gptq 4 g128": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
        "gptq 8 per channel": {"quant_method": "gptq", "bits": 8, "group_size": -1},
        "gptq 3 g64": {"quant_method": "gptq", "bits": 3, "group_size": 64},
        "gptq bits 16": {"quant_method": "gptq", "bits": 16, "group_size": 128},
        "gptq bits -4": {"quant_method": "gptq", "bits": -4, "group_size": 128},
        "gptq group -2": {"quant_method": "gptq", "bits": 4, "group_size": -2},
        "gptq group 7": {"quant_method": "gptq", "bits": 4, "group_size": 7},
        "gptq group 1e30": {"quant_method": "gptq", "bits": 4, "group_size": 1e30},
        "gptq bits true": {"quant_method": "gptq", "bits": True, "group_size": 128},
        "awq 4 g128": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
        "awq w_bit": {"quant_method": "awq", "w_bit": 4, "q_group_size": 128},
        "awq zero_point string": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": "yes"},
        "awq skip lm_head": {"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": ["lm_head", "self_attn"]},
        "awq skip not a list": {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": 5},
        "bnb nf4 dq": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                       "bnb_4bit_use_double_quant": True},
        "bnb fp4": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
        "bnb 8bit": {"quant_method": "bitsandbytes", "load_in_8bit": True},
        "bnb both": {"quant_method": "bitsandbytes", "load_in_8bit": True, "load_in_4bit": True},
        "bnb neither": {"quant_method": "bitsandbytes"},
        "bnb type nf3": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf3"},
        "bnb skip strings": {"quant_method": "bitsandbytes", "load_in_4bit": True, "llm_int8_skip_modules": "lm_head"},
        "ct int4 group": ct({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}),
        "ct int8 channel": ct({"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": False}),
        "ct fp8 tensor": ct({"num_bits": 8, "type": "float", "strategy": "tensor"}),
        "ct fp8 block": ct({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}),
        "ct fp8 block 64": ct({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [64, 64]}),
        "ct nvfp4": ct({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}),
        "ct nvfp4 ignore re": ct({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
                                 ignore=["lm_head", "re:.*self_attn.*"]),
        "ct nvfp4 ignore bad re": ct({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
                                     ignore=["re:(("]),
        "ct nvfp4 ignore not a list": ct({"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                          "group_size": 16}, ignore="lm_head"),
        "ct weights null": ct(None),
        "ct groups empty": {"quant_method": "compressed-tensors", "config_groups": {}},
        "ct targets attention": {"quant_method": "compressed-tensors", "config_groups": {"g": {
            "targets": ["Attention"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}},
        "ct num_bits 0": ct({"num_bits": 0, "type": "int", "strategy": "group", "group_size": 128}),
        "ct symmetric string": ct({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                   "symmetric": "true"}),
        "fp8 block": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
        "fp8 block ignored": {"quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": ["lm_head"]},
        "fp8 block 3 dims": {"quant_method": "fp8", "weight_block_size": [128, 128, 128]},
        "fp8 block negative": {"quant_method": "fp8", "weight_block_size": [-128, 128]},
        "fp8 block strings": {"quant_method": "fp8", "weight_block_size": ["128", "128"]},
        "fp8 fmt e5m2": {"quant_method": "fp8", "fmt": "e5m2"},
        "fp8 fmt e3m4": {"quant_method": "fp8", "fmt": "e3m4"},
        "mxfp4": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]},
        "mxfp4 exclusion of 200k names": {"quant_method": "mxfp4", "modules_to_not_convert": ["x"] * 200_000},
        "mxfp4 star only": {"quant_method": "mxfp4", "modules_to_not_convert": ["*"]},
        "modelopt nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head"]},
        "modelopt fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
        "modelopt int4 awq": {"quant_method": "modelopt", "quant_algo": "W4A16_AWQ"},
        "quant_method null": {"quant_method": None},
        "quant_method upper": {"quant_method": "GPTQ", "bits": 4, "group_size": 128},
    }
    for label, block in blocks.items():
        for base_name, base, where in (("olmo-2", dense, ["-g", "h100-sxm"]),
                                       ("glm-4.7", moe, ["-g", "h200-sxm", "--tp", "8"])):
            if base_name == "glm-4.7" and label.startswith(("gptq 3", "gptq 8", "bnb", "awq w_bit", "awq skip not")):
                continue
            yield cli("hf_config2", ["capacity", "-m", "cfg/config.json", *where, "-f", "json"],
                      idents=["config.json", "quantization_config"], json_out=True,
                      setup=_write_config({**base, "quantization_config": block}), label=f"{base_name} quant {label}")


# --- api2: the entry points added since session 7 ---------------------------------------------------------------

#: Argument kinds: pos (an integer >= 1), nat (an integer >= 0), share (a float in (0, 1]), rate (a float > 0),
#: text (one of a closed set of names), opt_* (None also means the default), flag (a bool), model / gpu /
#: deployment / heads / cost / tile (a spec of that type), path (a file or folder), impl (an implementation id: an
#: open set, a measurement file names its own, so any well-formed name such as 'x' is taken).
def _api2_entry_points():
    from rooflab import load_gpu, load_model
    from rooflab.capacity import plan_capacity
    from rooflab.cost.flash import FlashTile
    from rooflab.cudnn_kernel import causal_fraction, cudnn_cost, cudnn_head_dim, kernel_cost, modelled_impl
    from rooflab.deployment import Deployment
    from rooflab.engines import EngineSettings, engine_capacity, parse_accounting
    from rooflab.explain.step import explain_step
    from rooflab.published import Convention, convention_flops, load_published, read_sources
    from rooflab.serve import Scheduler, step_times
    from rooflab.specs import AttentionHeads
    from rooflab.step import engine_kernels, step_report
    from rooflab.units import DType

    model, gpu, moe = load_model("llama-3-8b"), load_gpu("h100-sxm"), load_model("qwen3-30b-a3b")
    dep = Deployment(tensor_parallel=2)
    heads = AttentionHeads(num_qo_heads=32, num_kv_heads=8, head_dim=128)
    from rooflab.cost.flash import flash_prefill
    cost = flash_prefill(heads, 1024)
    vllm = parse_accounting("vllm", None)
    capacity = lambda **kw: engine_capacity(kw.pop("model"), kw.pop("gpu"), EngineSettings(**kw))
    return [
        ("step_report", step_report, dict(model=model, gpu=gpu, batch=8, context_len=4096, step="decode", tp=2,
                                          dcp=1, cp=1, page_size=16, gpu_memory_utilization=0.9, prefill_tokens=0,
                                          expert_imbalance=1.0, micro_batches=None, engine="vllm",
                                          engine_version="0.9.0"),
         dict(model="model", gpu="gpu", batch="pos", context_len="pos", step="text", tp="pos", dcp="pos", cp="pos",
              page_size="pos", gpu_memory_utilization="share", prefill_tokens="nat", expert_imbalance="rate",
              micro_batches="opt_pos", engine="opt_text", engine_version="opt_text")),
        ("step_report(moe)", step_report, dict(model=moe, gpu=gpu, batch=8, context_len=4096, deployment=Deployment(
            tensor_parallel=2, expert_parallel=2), moe_kernel="tuned", decode_attention="shared"),
         dict(deployment="opt_deployment", moe_kernel="opt_text", decode_attention="opt_text")),
        ("engine_kernels", engine_kernels, dict(model=model, gpu=gpu, deployment=dep, engine="sglang", version="0.4.6"),
         dict(model="model", gpu="gpu", deployment="deployment", engine="opt_text", version="opt_text")),
        ("Scheduler", Scheduler, dict(max_num_seqs=256, max_num_batched_tokens=8192, mixed=True,
                                      prefix_cache_hit_rate=0.2, version="0.9.0"),
         dict(max_num_seqs="opt_pos", max_num_batched_tokens="pos", mixed="flag", prefix_cache_hit_rate="share0",
              version="opt_text")),
        ("step_times", step_times, dict(model=model, gpu=gpu, deployment=dep, max_decodes=64, min_context=128,
                                        max_context=4096, max_prefill=2048),
         dict(model="model", gpu="gpu", deployment="deployment", max_decodes="pos", min_context="pos",
              max_context="pos", max_prefill="pos")),
        ("plan_capacity", plan_capacity, dict(model=model, gpu=gpu, context_len=8192, gpu_memory_utilization=0.9,
                                              activation_reserve_bytes=0, page_size=16, max_model_len=8192,
                                              tensor_parallel=2, shared_prefix_len=0, expert_parallel=1,
                                              dp_attention=False),
         dict(model="model", gpu="gpu", context_len="pos", gpu_memory_utilization="share",
              activation_reserve_bytes="nat", page_size="pos", max_model_len="opt_pos", tensor_parallel="pos",
              shared_prefix_len="nat", expert_parallel="pos", dp_attention="flag")),
        ("plan_capacity(deployment)", plan_capacity, dict(model=model, gpu=gpu, context_len=8192,
                                                          pp_layer_partition=(16, 16), deployment=Deployment(
                                                              tensor_parallel=2, pipeline_parallel=2)),
         dict(pp_layer_partition="opt_partition", deployment="deployment")),
        ("engine_capacity", capacity, dict(model=model, gpu=gpu, accounting=vllm, tensor_parallel=1, block_size=16,
                                           max_model_len=8192, utilization=0.9, max_num_seqs=256,
                                           cuda_visible_bytes=79 << 30, memory_in_use_bytes=0, enable_lora=True,
                                           max_loras=2, max_lora_rank=16, pipeline_parallel=2,
                                           pp_layer_partition=(16, 16)),
         dict(model="model", gpu="gpu", accounting="accounting", tensor_parallel="pos", block_size="opt_pos",
              max_model_len="opt_pos", utilization="opt_share", max_num_seqs="opt_pos", cuda_visible_bytes="opt_pos",
              memory_in_use_bytes="nat", enable_lora="flag", max_loras="opt_pos", max_lora_rank="opt_pos",
              pipeline_parallel="pos", pp_layer_partition="opt_partition")),
        ("explain_step", explain_step, dict(model=model, gpu=gpu, batch=4, context_len=4096, step="decode",
                                            deployment=dep, prefill_tokens=0, expert_imbalance=1.0,
                                            micro_batches=None, engine="vllm", engine_version="0.9.0"),
         dict(model="model", gpu="gpu", batch="pos", context_len="pos", step="text", deployment="opt_deployment",
              prefill_tokens="nat", expert_imbalance="rate", micro_batches="opt_pos", engine="opt_text",
              engine_version="opt_text")),
        ("load_published", load_published, dict(root=None), dict(root="opt_path")),
        ("read_sources", read_sources, dict(path=None), dict(path="opt_path")),
        ("convention_flops", convention_flops, dict(convention=Convention.fa, batch=1, num_qo_heads=32, seq_len_q=4096,
                                                    seq_len_kv=4096, head_dim=128, value_dim=128, causal=True),
         dict(convention="text", batch="pos", num_qo_heads="pos", seq_len_q="pos", seq_len_kv="pos", head_dim="pos",
              value_dim="pos", causal="flag")),
        ("causal_fraction", causal_fraction, dict(seq_len=4096, units=64, num_sms=132, tile=FlashTile(64, 128),
                                                  units_per_sm=2.0),
         dict(seq_len="pos", units="pos", num_sms="pos", tile="tile", units_per_sm="rate")),
        ("cudnn_cost", cudnn_cost, dict(heads=heads, seq_len=4096, batch=2, dtype=DType.bf16, causal=True, gpu=gpu),
         dict(heads="heads", seq_len="pos", batch="pos", dtype="text", causal="flag", gpu="gpu")),
        ("cudnn_head_dim", cudnn_head_dim, dict(head_dim=128), dict(head_dim="pos")),
        ("kernel_cost", kernel_cost, dict(model_impl="torch_cudnn", cost=cost, gpu=gpu),
         dict(model_impl="impl", cost="cost", gpu="gpu")),
        ("modelled_impl", modelled_impl, dict(impl="torch_cudnn"), dict(impl="impl")),
    ]


def _api2_values():
    import numpy as np
    return {"None": None, "'x'": "x", "b'4'": b"4", "True": True, "nan": float("nan"), "inf": float("inf"),
            "0": 0, "-3": -3, "2**70": 2 ** 70, "np.float64(nan)": np.float64("nan"), "np.int64(4)": np.int64(4),
            "np.array(4)": np.array(4), "1+2j": 1 + 2j, "a GpuSpec": "GPU", "a ModelSpec": "MODEL", "2.5": 2.5}


def _api2_refuses(kind: str, kname: str) -> Optional[bool]:
    """Whether `kname` must be refused (True), must be taken (False) or either (None) for an argument of `kind`."""
    optional = kind.startswith("opt_")
    base = kind[4:] if optional else kind
    if base == "impl":
        return False if kname == "'x'" else _api2_refuses("text", kname)
    if kname == "None":
        return None if optional else (None if base in ("flag",) else True)
    if kname in ("'x'", "b'4'", "1+2j", "a GpuSpec", "a ModelSpec", "nan", "np.float64(nan)"):
        if base in ("text", "text_or_empty") and kname == "'x'":
            return True
        if base == "path" and kname == "'x'":
            return True                      # a folder that is not there
        if kname == "a GpuSpec" and base == "gpu" or kname == "a ModelSpec" and base == "model":
            return False
        if kname == "a ModelSpec" and base == "heads":
            return None                      # a ModelSpec answers num_qo_heads, num_kv_heads, head_dim
        return True
    if kname == "inf":
        return True
    if kname in ("-3",):
        return True
    if kname == "0":
        return True if base in ("pos", "rate", "share", "model", "gpu", "deployment", "heads", "cost", "tile",
                                "text", "path", "partition", "accounting") else None
    if kname == "2**70":
        return True if base in ("share", "share0", "text", "model", "gpu", "deployment", "heads", "cost", "tile",
                                "path", "partition", "accounting", "flag") else None
    if kname == "2.5":
        return True if base in ("pos", "nat", "share", "share0", "model", "gpu", "deployment", "heads", "cost",
                                "tile", "text", "path", "partition", "accounting") else None
    if kname == "True":
        return False if base == "flag" else (True if base in ("model", "gpu", "deployment", "heads", "cost", "tile",
                                                                "path", "partition", "accounting", "text") else None)
    if kname in ("np.int64(4)", "np.array(4)"):
        return None if base in ("pos", "nat", "rate", "flag") else True if base in (
            "model", "gpu", "deployment", "heads", "cost", "tile", "text", "path", "accounting", "share",
            "share0") else None
    return None


#: Words a refusal may use for an argument besides its name: the concept as the CLI says it.
API2_ALIASES = {"dcp": ["KV parallel", "--kv-parallel"], "cp": ["prefill context parallel", "--pcp"],
                "utilization": ["utilisation"], "cuda_visible_bytes": ["cuda-visible"],
                "pipeline_parallel": ["--pp-layer-partition"], "root": ["cannot read"], "path": ["cannot read"],
                "gpu_memory_utilization": ["utilisation"], "max_num_seqs": ["--max-num-seqs"],
                "memory_in_use_bytes": ["--memory-in-use"], "activation_reserve_bytes": ["activation reserve"],
                "expert_parallel": ["--ep"], "deployment": ["--pp"]}
#: Results whose NaN or inf is a sentinel, not a figure: a step table pads its grid with NaN (step_table.py: a NaN
#: predicted column means no prediction); a published serving row's request rate inf is vLLM's --request-rate inf.
API2_SENTINELS = {"step_times", "load_published"}


def api2_inputs() -> Iterator[Input]:
    import functools
    entries = functools.lru_cache(maxsize=1)(_api2_entry_points)
    names = [(n, kinds) for n, _, _, kinds in _api2_entry_points()]
    for name, kinds in names:
        for argument, kind in kinds.items():
            for kname in _api2_values():
                def check(folder: Path, q=name, a=argument, k=kname, t=kind) -> list[str]:
                    from rooflab import load_gpu, load_model
                    from rooflab.errors import RooflabError
                    entry = next(e for e in entries() if e[0] == q)
                    _, call, kwargs, _ = entry
                    value = _api2_values()[k]
                    value = load_gpu("h200-sxm") if value == "GPU" else load_model("mistral-7b") if value == "MODEL" \
                        else value
                    refuse = _api2_refuses(t, k)
                    what = f"{q}({a}={k})"
                    words = [a, a.replace("_", " "), a.replace("num_", "number of ").replace("_", " "),
                             f"{a} must", "--" + a.replace("_", "-"), *API2_ALIASES.get(a, ())]
                    try:
                        result = fs.check_api(lambda: call(**{**kwargs, a: value}), idents=words,
                                              expect_error=refuse, what=what)
                    except AssertionError as exc:
                        return [str(exc)[:400]]
                    if not isinstance(result, RooflabError) and q not in API2_SENTINELS:
                        where = fs.finite_everywhere(result)
                        if where:
                            return [f"{what}: returned a non-finite figure at {where}"]
                    return []
                yield Input("api2", f"{name}({argument}={kname})", check=check)


# --- numbers2: figures of the session 8-10 commands against ones derived here by hand --------------------------

TINY = dict(layers=4, heads=8, kv=2, d=64, hidden=512, ffn=1024, vocab=1000)
#: TINY's parameters (_params): per layer q 512*8*64 + k,v 2*512*2*64 + o 8*64*512 + MLP 3*512*1024 + 2 norms
#: 2*512 = 2,229,248; embeddings and head 2*1000*512; final norm 512: 9,941,504; its norms 4*1024 + 512 = 4,608.
TINY_PARAMS, TINY_PER_LAYER, TINY_NORMS = 9_941_504, 2_229_248, 4_608
#: TINY's KV a token a layer: K and V x 2 KV heads x 64 x 2 bytes (bf16) = 512.
TINY_KV_LAYER = 2 * 2 * 64 * 2
H100_HBM, H100_VISIBLE = 85_520_809_984, 85_061_827_297       # hardware/h100-sxm.yaml
TINY_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 512,
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": False,
            "attention_bias": False, "intermediate_size": 1024, "moe_intermediate_size": 256, "num_experts": 8,
            "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [], "torch_dtype": "bfloat16"}
#: TINY_MOE's routed experts: 4 layers x 8 experts x 3 x 512 x 256 = 12,582,912 parameters; the rest (attention
#: 655,360 a layer, router 8*512, 2 norms 1,024; embeddings, head, final norm; q/k norms left out as rooflab's
#: count leaves them, tests/hf/test_more_families.py) 4*660,480 + 1,024,512 = 3,666,432.
TINY_MOE_EXPERTS, TINY_MOE_REST = 12_582_912, 3_666_432
#: Of the rest, the routers (4 layers x 8 experts x 512 = 16,384 parameters) are held whole on every TP rank, as the
#: engines build them (ReplicatedLinear; rooflab.specs.weights, session 11): the rest divides by TP, the routers do not.
TINY_MOE_ROUTER = 4 * 8 * 512


def _tiny(folder: Path, doc: Optional[dict] = None) -> None:
    (folder / "c").mkdir(exist_ok=True)
    (folder / "c" / "config.json").write_text(json.dumps(doc or _hf_doc(TINY)))


def _field(folder: Path, args: list[str], path: str, expect: float, formula: str, rel: float = 0.0,
           doc: Optional[dict] = None) -> list[str]:
    """Run `args` (-f json) on TINY (or `doc`) and compare the JSON field at `path` (dots; [i] for a list) with
    `expect`, exactly or within `rel`."""
    if "-m" in args and args[args.index("-m") + 1] == "c":
        _tiny(folder, doc)
    got, problems = _json_of(folder, args)
    if problems:
        return [f"{formula}: {problems[0]}"]
    for part in re.findall(r"[^.\[\]]+", path):
        got = got[int(part)] if isinstance(got, list) else got.get(part) if isinstance(got, dict) else None
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return [f"{path} is {got!r}, expected {expect} ({formula})"]
    ok = got == expect if rel == 0 else math.isclose(got, expect, rel_tol=rel)
    return [] if ok else [f"{path} = {got!r}, hand-derived {expect!r} ({formula})"]


def number2_inputs() -> Iterator[Input]:
    step = ["report", "--phase", "step", "-m", "c", "-g", "h100-sxm", "-f", "json"]
    n = lambda label, fn: Input("numbers2", label, check=fn)
    # step weights a GPU: bf16 2 bytes x parameters; TP t splits every weight t ways (rooflab splits the norms too:
    # a norm is replicated in vLLM, 2 x 4,608 x (1 - 1/t) bytes a GPU more, 0.05%: within rel 1e-3)
    for t in (1, 2, 4):
        yield n(f"step weights TP {t} = 2 x params / t", lambda f, t=t: _field(
            f, step + ["--tp", str(t)], "weight_bytes_per_gpu", 2 * TINY_PARAMS / t, f"2 x {TINY_PARAMS} / {t}",
            rel=0 if t == 1 else 1e-3))
    # PP 2: stage 0 = 2 layers + embeddings, stage 1 = 2 layers + head + final norm; the larger holds
    # 2 x (2 x 2,229,248 + 512,000 + 512) = 9,942,016 bytes (the mean, 2 x params / 2 = 9,941,504, within 1e-4)
    yield n("step weights PP 2 = the larger stage", lambda f: _field(
        f, step + ["--pp", "2"], "weight_bytes_per_gpu", 2 * (2 * TINY_PER_LAYER + 512_000 + 512),
        "2 x (2 x 2229248 + 512000 + 512)", rel=1e-4))
    # KV a GPU, batch b, context L: b x L x layers-per-stage x KV-heads-per-GPU x 2 x 64 x 2 bytes
    for label, extra, expect in (("TP 1", [], 8192 * 4 * TINY_KV_LAYER), ("TP 2", ["--tp", "2"], 8192 * 4 * 256),
                                 ("TP 4 (KV heads replicated)", ["--tp", "4"], 8192 * 4 * 256),
                                 ("PP 2", ["--pp", "2"], 8192 * 2 * TINY_KV_LAYER),
                                 ("PP 4", ["--pp", "4"], 8192 * 1 * TINY_KV_LAYER),
                                 ("DP 2, batch 8 over both", ["--dp", "2", "-b", "8"], 4 * 8192 * 4 * TINY_KV_LAYER)):
        yield n(f"step kv a GPU {label}", lambda f, e=extra, x=expect, lb=label: _field(
            f, step + e, "kv_bytes_per_gpu", x, f"{lb}: b x L x layers x heads/GPU x 2 x 64 x 2 = {x}"))
    yield n("step DP 2 GPUs", lambda f: _field(f, step + ["--dp", "2"], "num_gpus", 2, "DP 2 x TP 1"))
    yield n("step DP 2 weights whole on each", lambda f: _field(f, step + ["--dp", "2"], "weight_bytes_per_gpu",
                                                                2 * TINY_PARAMS, "replicas hold every weight"))
    # EP: the routed experts split EP ways whole, the rest by TP
    for extra, expect, formula in ((["--dp", "2", "--enable-expert-parallel"], 2 * (TINY_MOE_REST + TINY_MOE_EXPERTS
                                    // 2), "2 x (rest + experts / 2)"),
                                   (["--tp", "2", "--enable-expert-parallel"], 2 * ((TINY_MOE_REST - TINY_MOE_ROUTER)
                                    // 2 + TINY_MOE_ROUTER + TINY_MOE_EXPERTS // 2),
                                    "2 x ((rest - router) / 2 + router + experts / 2)"),
                                   ([], 2 * (TINY_MOE_REST + TINY_MOE_EXPERTS), "2 x params"),
                                   (["--tp", "4", "--enable-expert-parallel"], 2 * ((TINY_MOE_REST - TINY_MOE_ROUTER)
                                    / 4 + TINY_MOE_ROUTER + TINY_MOE_EXPERTS / 4),
                                    "2 x ((rest - router) / 4 + router + experts / 4)")):
        yield n(f"step MoE weights {' '.join(extra) or 'EP 1'}", lambda f, e=extra, x=expect, fo=formula: _field(
            f, step + e, "weight_bytes_per_gpu", x, fo, rel=1e-3, doc=TINY_MOE))
    # speculative decoding: tokens a step (1 - a^(k+1)) / (1 - a); a = 1 is refused (--acceptance-rate below 1)
    for k in (1, 3, 5):
        spec = json.dumps({"method": "eagle", "num_speculative_tokens": k})
        yield n(f"speculative k {k} a 1 refused", lambda f, s=spec: _refused(
            f, ["report", "--phase", "step", "-m", "llama-3-8b", "--speculative-config", s, "--acceptance-rate", "1",
                "-f", "json"], "--acceptance-rate must be below 1"))
        for a in (0.5, 0.7, 0.9):
            expect = (1 - a ** (k + 1)) / (1 - a)
            yield n(f"speculative tokens k {k} a {a}", lambda f, s=spec, a=a, x=expect, k=k: _field(
                f, ["report", "--phase", "step", "-m", "llama-3-8b", "--speculative-config", s, "--acceptance-rate",
                    str(a), "-f", "json"], "tokens_per_step", x, f"(1 - {a}^{k + 1}) / (1 - {a})", rel=1e-12))
    yield n("SGLang EAGLE 4 draft tokens = k 3", lambda f: _field(
        f, ["report", "--phase", "step", "-m", "llama-3-8b", "--speculative-algorithm", "EAGLE",
            "--speculative-num-draft-tokens", "4", "-f", "json"], "tokens_per_step", (1 - 0.7 ** 4) / 0.3,
        "k = 4 - 1; (1 - 0.7^4) / 0.3", rel=1e-12))
    # KV a token: MLA (DeepSeek-V3, 61 layers, kv_lora_rank 512 + rope 64) and GQA (Llama 3 8B, 32 x 8 x 128)
    for label, args, expect in (
            ("MLA bf16", ["-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8"], 61 * 576 * 2),
            ("MLA fp8", ["-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--kv-cache-dtype", "fp8"], 61 * 576),
            ("MLA fp8_ds_mla", ["-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--kv-cache-dtype", "fp8_ds_mla"],
             61 * (512 + 4 * 4 + 64 * 2)),
            ("MLA + indexer (DeepSeek-V3.2) bf16: 61 x (576 x 2 + 128 fp8 + 4 x 128 / 128)",
             ["-m", str(HF_CONFIGS / "deepseek-v3.2.json"), "-g", "h200-sxm", "--tp", "8"],
             61 * (576 * 2 + 128 + 4 * 128 // 128)),
            ("GQA fp8 TP 1", ["-m", "llama-3-8b", "--kv-cache-dtype", "fp8"], 2 * 32 * 8 * 128),
            ("GQA fp8 TP 2", ["-m", "llama-3-8b", "--tp", "2", "--kv-cache-dtype", "fp8"], 2 * 32 * 4 * 128),
            ("GQA fp8 TP 16 (replicated)", ["-m", "llama-3-8b", "--tp", "16", "--kv-cache-dtype", "fp8"],
             2 * 32 * 1 * 128)):
        yield n(f"kv a token {label}", lambda f, a=args, x=expect, lb=label: _field(
            f, ["capacity", *a, "-f", "json"], "kv_bytes_per_token", x, f"{lb}: {x}"))
    # the step's KV under fp8_ds_mla: the same 656 bytes a token a layer as capacity's (512 fp8 latent + 4 fp32
    # scales + 64 bf16 rope): batch 1 x 8,192 tokens x 61 layers x 656
    yield n("step kv a GPU MLA fp8_ds_mla", lambda f: _field(
        f, ["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--kv-cache-dtype",
            "fp8_ds_mla", "-f", "json"], "kv_bytes_per_gpu", 8192 * 61 * (512 + 4 * 4 + 64 * 2),
        "8192 x 61 x 656 (capacity's fp8_ds_mla layout)"))
    # one path: rooflab capacity and report --phase step, given the same model, GPU and options, hold the same
    # bytes on the GPU that holds the most (capacity's binding stage under PP), or refuse alike (gpt-oss-20b's
    # mxfp4 checkpoint with -q fp8: the engines refuse a --quantization that is not the checkpoint's method)
    for model, extra in (("gemma-2-9b", ["--pp", "2"]), ("llama-3-8b", ["--pp", "2"]),
                         ("gpt-oss-20b", ["--tp", "8", "-q", "fp8"]), ("deepseek-v3", ["--tp", "8", "-q", "fp8"])):
        for cap_field, step_field in (("weights_bytes", "weight_bytes_per_gpu"),
                                      ("kv_bytes_per_sequence", "kv_bytes_per_gpu")):
            yield n(f"capacity = step: {model} {' '.join(extra)} {cap_field}", lambda f, m=model, e=extra, c=cap_field,
                    st=step_field: _same(f, ["capacity", "-m", m, "-g", "h200-sxm", "-L", "8192", *e, "-f", "json"], c,
                                         ["report", "--phase", "step", "-m", m, "-g", "h200-sxm", "-L", "8192", *e,
                                          "-f", "json"], st))
    # Qwen3-Next under vLLM: a linear layer's state conv (4 - 1) x (16 x 128 x 2 + 32 x 128) + ssm 32 x 128 x 128,
    # bf16 = 1,097,728 bytes; an attention layer's token 2 x 2 x 256 x 2 = 2,048 bytes; vLLM raises the block to
    # the multiple of 16 tokens whose page holds the state: ceil(1,097,728 / 2,048 / 16) x 16 = 544; a block
    # holds 12 layers (a group): 12 x 544 x 2,048. ssm in fp32: 49,152 + 2,097,152 -> 1,056 tokens. TP 4: conv
    # 3 x 2,048 x 2 + ssm 8 x 128 x 128 x 2 = 274,432, a token 1,024 (one KV head of 2 a GPU) -> 272.
    qn = ["capacity", "-m", "qwen3-next-80b-a3b", "-g", "h200-sxm", "--engine", "vllm", "-f", "json"]
    for label, extra, path, expect in (("block tokens", [], "block_size", 544),
                                       ("block bytes", [], "block_bytes", 12 * 544 * 2048),
                                       ("block tokens ssm fp32", ["--mamba-ssm-dtype", "float32"], "block_size", 1056),
                                       ("block tokens TP 4", ["--tp", "4"], "block_size", 272)):
        yield n(f"qwen3-next vLLM {label}", lambda f, e=extra, p=path, x=expect, lb=label: _field(
            f, qn + e, p, x, f"Qwen3-Next {lb}"))
    # capacity, rooflab's bound: usable floor(0.9 x 85,520,809,984); budget usable - 2 x params; block 16 x 2,048;
    # blocks floor(budget / block); sequences of 4,096 tokens floor(blocks / 256)
    usable = int(0.9 * H100_HBM)
    blocks = (usable - 2 * TINY_PARAMS) // (16 * 4 * TINY_KV_LAYER)
    cap = ["capacity", "-m", "c", "-g", "h100-sxm", "-L", "4096", "-f", "json"]
    yield n("capacity usable", lambda f: _field(f, cap, "usable_bytes", usable, "floor(0.9 x 85520809984)"))
    yield n("capacity blocks", lambda f: _field(f, cap, "num_blocks", blocks, "floor((usable - 2 x params) / 32768)"))
    yield n("capacity sequences", lambda f: _field(f, cap, "max_sequences_paged", blocks // 256, "floor(blocks / 256)"))
    # PP 2 with partition 3,1: stage 0 (3 layers + embeddings) binds: weights 2 x (3 x 2,229,248 + 512,000), a
    # token 3 x 512; sequences floor(floor((usable - weights0) / (16 x 1,536)) / 256)
    w0 = 2 * (3 * TINY_PER_LAYER + 512_000)
    seqs0 = (usable - w0) // (16 * 3 * TINY_KV_LAYER) // 256
    pp = cap + ["--pp", "2", "--pp-layer-partition", "3,1"]
    yield n("capacity PP 3,1 sequences", lambda f: _field(f, pp, "max_sequences_paged", seqs0, "stage 0 binds"))
    yield n("capacity PP 3,1 kv a token", lambda f: _field(f, pp, "kv_bytes_per_token", 3 * TINY_KV_LAYER,
                                                            "3 layers x 512"))
    # vLLM V1 with every term given (80 GiB visible: an H200, an H100 has less): KV = floor(0.9 x 80 GiB) - 2 x
    # params - rotary cache 4,096 x 64 x 2 (bf16)
    kv_v1 = int(0.9 * (80 << 30)) - 2 * TINY_PARAMS - 4096 * 64 * 2
    v1 = ["capacity", "-m", "c", "-g", "h200-sxm", "--max-model-len", "4096", "--engine", "vllm",
          "--cuda-visible-memory", "80GiB", "--non-torch-gib", "0", "--activation-gib", "0", "-f", "json"]
    yield n("vLLM V1 KV bytes", lambda f: _field(f, v1, "kv_cache_bytes", kv_v1, "0.9 x 80 GiB - weights - rotary"))
    yield n("vLLM V1 blocks", lambda f: _field(f, v1, "num_blocks", kv_v1 // (16 * 4 * TINY_KV_LAYER),
                                               "floor(KV / 32768)"))
    yield n("vLLM V1 memory in use 4 GiB leaves KV as is", lambda f: _field(
        f, v1 + ["--memory-in-use", "4GiB"], "kv_cache_bytes", kv_v1, "V1's budget is u x total, others' memory aside"))
    yield n("vLLM V1 memory in use 10 GiB refused", lambda f: _refused(
        f, v1 + ["--memory-in-use", "10GiB"], "80 - 10 = 70 GiB free < 0.9 x 80 = 72 GiB"))
    # vLLM V1 under PP 2, partition 3,1: each stage its own budget; stage 0 (3 layers + embeddings + the rotary
    # cache) binds: KV = floor(0.9 x 80 GiB) - 2 x (3 x 2,229,248 + 512,000) - 524,288; blocks of 16 x 3 x 512
    kv_pp = int(0.9 * (80 << 30)) - 2 * (3 * TINY_PER_LAYER + 512_000) - 4096 * 64 * 2
    v1_pp = v1 + ["--pp", "2", "--pp-layer-partition", "3,1"]
    yield n("vLLM V1 PP 3,1 KV bytes (stage 0 binds)", lambda f: _field(f, v1_pp, "kv_cache_bytes", kv_pp,
                                                                         "u x total - stage 0's weights"))
    yield n("vLLM V1 PP 3,1 blocks", lambda f: _field(f, v1_pp, "num_blocks", kv_pp // (16 * 3 * TINY_KV_LAYER),
                                                      "floor(KV / (16 x 3 x 512))"))
    # SGLang: mem_fraction_static applies to the free memory: 4 GiB held by others costs f x 4 GiB of KV, f = 0.830
    # at v0.5.10 on an H100 (R = 13,440 MiB + the piecewise CUDA graphs' 58 x 8 MiB = 13,904 of 81,559)
    sg = ["capacity", "-m", "c", "-g", "h100-sxm", "--max-model-len", "4096", "--engine", "sglang", "-f", "json"]
    yield n("SGLang memory in use 4 GiB", lambda f: _difference(
        f, sg, sg + ["--memory-in-use", "4GiB"], "kv_cache_bytes", 0.830 * (4 << 30), "0.830 x 4 GiB"))
    # LoRA buffers (vLLM create_lora_weights: A (slots, 1, r, in), B (slots, 1, out, r) per slice), Llama 3 8B
    # (H 4096, 32 x 128 query heads, 8 KV heads, F 14336, 32 layers, bf16), r 16, one slot, TP 1, per layer:
    # qkv A 3 x 16 x 4096 + B 16 x (4096 + 1024 + 1024); o A 16 x 4096 + B 4096 x 16; gate_up A 2 x 16 x 4096 +
    # B 2 x 14336 x 16; down A 16 x 14336 + B 4096 x 16 = 1,310,720 elements; x 32 layers x 2 bytes = 83,886,080.
    # TP 2 halves B of qkv / gate_up and A of o / down: 884,736 a layer -> 56,623,104. r 32 or two slots: double.
    lora = ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", "--engine", "vllm", "--enable-lora", "-f", "json"]
    for extra, expect in (([], 83_886_080), (["--max-loras", "2"], 2 * 83_886_080),
                          (["--max-lora-rank", "32"], 2 * 83_886_080), (["--tp", "2"], 56_623_104)):
        yield n(f"vLLM LoRA buffers {' '.join(extra) or 'r 16, one slot'}", lambda f, e=extra, x=expect: _term(
            f, lora + e, "lora_buffers", x, "per layer A + B elements x 32 x 2 bytes"))
    # SGLang allocates its LoRA pool (8 slots by default) after the weights, before the KV pool: the KV cache falls
    # by exactly the pool, 8 x 83,886,080 bytes at rank 16, at v0.5.9 (from v0.5.10 LoRA also turns the piecewise
    # CUDA graphs off, and their reserve with them: engines/sglang.py piecewise_reserve_mib)
    sg_lora = ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", "--engine", "sglang", "--engine-version", "0.5.9",
               "-f", "json"]
    yield n("SGLang LoRA pool comes off the KV cache", lambda f: _difference(
        f, sg_lora, sg_lora + ["--enable-lora", "--max-lora-rank", "16"], "kv_cache_bytes", 8 * 83_886_080,
        "8 slots x 83,886,080"))
    # a draft model (vLLM's {"model": ...}) is loaded whole on every GPU of the target's TP group: weights a GPU
    # = target + draft = 16,060,522,496 + 2,460,000,000 (rooflab capacity's weights_bytes of each)
    draft = json.dumps({"model": "llama-3.2-1b", "num_speculative_tokens": 2})
    yield n("step weights with a draft model = target + draft", lambda f: _field(
        f, ["report", "--phase", "step", "-m", "llama-3-8b", "--speculative-config", draft, "-f", "json"],
        "weight_bytes_per_gpu", 16_060_522_496 + 2_460_000_000, "llama-3-8b + llama-3.2-1b weights"))
    # Cohere (aya-23-8b): vLLM's CohereAttention (commandr.py) and SGLang's take head_dim = hidden_size / heads =
    # 4096 / 32 = 128 whatever the file says (transformers 5.24.0 reads a stray head_dim, then cannot load the
    # checkpoint's q_proj); a head_dim of 7 written in is ignored (or refused):
    # KV a token 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072
    cohere = {**_hf2_base("aya-23-8b.json"), "head_dim": 7}
    yield n("Cohere ignores a stray head_dim", lambda f: _field(
        f, ["capacity", "-m", "c", "-g", "h100-sxm", "-f", "json"], "kv_bytes_per_token", 2 * 32 * 8 * 128 * 2,
        "2 x 32 x 8 x (4096 / 32) x 2", doc=cohere))
    # serve's SLO answer: requests/s a replica = concurrency / E2E (Little's law); E2E = TTFT + (1,024 - 1) x TPOT;
    # replicas = ceil(target / requests a replica); output tokens/s a GPU = requests/s x 1,024 / GPUs a replica
    slo = ["serve", "--tpot-slo", "30ms", "--target-rate", "10", "-f", "json"]
    for i, label in enumerate(("floor", "predicted")):
        yield n(f"serve SLO {label}: Little's law, E2E, replicas, tokens a GPU", lambda f, i=i: _slo_check(f, slo, i))
    # --shape decode: FLOPs 2 B H T (d + d_v) (QK^T over d, PV over d_v), under fa_no_half as counted
    dec = ["report", "--shape", "1,128,1,4096,576,512", "--phase", "decode", "-g", "h200-sxm", "--published-tflops",
           "500", "--convention", "fa_no_half", "-f", "json"]
    yield n("--shape decode MLA-like flops", lambda f: _field(f, dec, "published.flops", 2 * 128 * 4096 * (576 + 512),
                                                              "2 B H T (d + d_v)"))
    yield n("--shape decode rows' flops", lambda f: _field(f, dec, "rows[0].flops", 2 * 128 * 4096 * (576 + 512),
                                                           "2 B H T (d + d_v)"))
    # --shape: flash FLOPs 4 B H T^2 d, halved causal (fa); never halved (fa_no_half); the published time
    # flops / (TFLOP/s x 1e12); the flash row's floor max(flops / 989.4e12, bytes / 3.35e12) on the H100
    for shape, causal in (("2,16,16,4096,64", True), ("2,16,16,4096,64", False), ("1,32,8,8192,128", True)):
        b, h, _, t, d = map(int, shape.split(","))
        full = 4 * b * h * t * t * d
        args = ["report", "--shape", shape, "-g", "h100-sxm", "--published-tflops", "500", "-f", "json"] + (
            [] if causal else ["--no-causal"])
        fa = full / 2 if causal else full
        yield n(f"--shape {shape} causal {causal} fa flops", lambda f, a=args, x=fa: _field(
            f, a, "published.flops", x, "4 B H T^2 d (/2 causal)"))
        yield n(f"--shape {shape} causal {causal} published time", lambda f, a=args, x=fa: _field(
            f, a, "published.t_published_s", x / 500e12, "flops / 500e12", rel=1e-12))
        yield n(f"--shape {shape} causal {causal} fa_no_half flops", lambda f, a=args, x=full: _field(
            f, a + ["--convention", "fa_no_half"], "published.flops", x, "4 B H T^2 d, never halved"))
        yield n(f"--shape {shape} causal {causal} floor at the roof", lambda f, a=args: _floor_at_roof(f, a))


def _term(folder: Path, args: list[str], name: str, expect: int, formula: str) -> list[str]:
    """The bytes of the engine term `name` in capacity --engine's JSON against `expect`."""
    doc, problems = _json_of(folder, args)
    if problems:
        return problems
    got = next((t["bytes"] for t in doc["terms"] if t["name"] == name), None)
    return [] if got == expect else [f"term {name} = {got}, hand-derived {expect} ({formula})"]


def _slo_check(folder: Path, args: list[str], i: int) -> list[str]:
    doc, problems = _json_of(folder, args)
    if problems:
        return problems
    a = doc["answers"][i]
    out = []
    if not math.isclose(a["at_requests_per_s"], a["concurrency"] / a["at_e2e_s"], rel_tol=1e-9):
        out.append(f"requests/s {a['at_requests_per_s']} != concurrency / E2E = {a['concurrency'] / a['at_e2e_s']}")
    if not math.isclose(a["at_e2e_s"], a["at_ttft_s"] + 1023 * a["at_tpot_s"], rel_tol=1e-6):
        out.append(f"E2E {a['at_e2e_s']} != TTFT + 1023 x TPOT = {a['at_ttft_s'] + 1023 * a['at_tpot_s']}")
    if a["replicas"] != math.ceil(10 / a["at_requests_per_s"]) or a["gpus"] != a["replicas"] * a["gpus_per_replica"]:
        out.append(f"replicas {a['replicas']} / GPUs {a['gpus']} != ceil(10 / {a['at_requests_per_s']}) x GPUs a replica")
    per_gpu = a["at_requests_per_s"] * 1024 / a["gpus_per_replica"]
    if not math.isclose(a["at_output_tokens_per_s_per_gpu"], per_gpu, rel_tol=1e-9):
        out.append(f"tokens/s a GPU {a['at_output_tokens_per_s_per_gpu']} != requests/s x 1024 = {per_gpu}")
    if a["at_tpot_s"] > 0.03 * (1 + 1e-12):
        out.append(f"the answer's TPOT {a['at_tpot_s']} breaks the 30 ms SLO")
    return out


def _same(folder: Path, a: list[str], a_field: str, b: list[str], b_field: str) -> list[str]:
    """The two commands agree: the same figure, or the same refusal (exit 2, one error line naming the same)."""
    first, problems = _json_of(folder, a)
    second, more = _json_of(folder, b)
    if problems and more and problems[0].startswith("exit 2: error:") and \
            problems[0].split(";")[0] == more[0].split(";")[0]:
        return []
    if problems or more:
        return problems + more
    if first[a_field] != second[b_field]:
        return [f"{a[0]} {a_field} = {first[a_field]} but report --phase step {b_field} = {second[b_field]}"]
    return []


def _refused(folder: Path, args: list[str], why: str) -> list[str]:
    if "-m" in args and args[args.index("-m") + 1] == "c":
        _tiny(folder)
    out = fs.invoke(args, folder)
    if out.code == 2 and out.stderr.startswith("error:"):
        return []
    return [f"exit {out.code} where a refusal was due ({why}): {out.stderr.strip()[:200] or out.stdout[:200]}"]


def _difference(folder: Path, a: list[str], b: list[str], path: str, expect: float, formula: str) -> list[str]:
    _tiny(folder)
    first, problems = _json_of(folder, a)
    second, more = _json_of(folder, b)
    if problems or more:
        return problems + more
    got = first[path] - second[path]
    return [] if math.isclose(got, expect, rel_tol=1e-9, abs_tol=1) else [
        f"{path} fell by {got}, hand-derived {expect} ({formula})"]


def _floor_at_roof(folder: Path, args: list[str]) -> list[str]:
    """The flash row: t_floor = max(flops / 989.4e12, hbm_bytes / 3.35e12) (H100 SXM datasheet roofs, fp16 dense)."""
    doc, problems = _json_of(folder, args)
    if problems:
        return problems
    row = next(r for r in doc["rows"] if r["variant"] == "flash")
    floor = max(row["flops"] / 989.4e12, row["hbm_bytes"] / 3.35e12)
    if not math.isclose(row["t_floor_s"], floor, rel_tol=1e-9):
        return [f"flash t_floor {row['t_floor_s']} != max(flops/989.4e12, bytes/3.35e12) = {floor}"]
    if doc["published"]["t_floor_s"] != row["t_floor_s"]:
        return [f"published.t_floor_s {doc['published']['t_floor_s']} is not the flash row's {row['t_floor_s']}"]
    return []


# --- classic2: streams, signals, environment and files on the new commands -------------------------------------

NEW_COMMANDS = ["report --phase step --engine vllm --engine-version 0.9.0 -f json",
                "report --phase step -m qwen3-30b-a3b -g h200-sxm --tp 2 --enable-expert-parallel",
                "capacity --engine vllm --engine-version v0.8 --pp 2",
                "capacity --engine sglang --memory-in-use 4GiB -f json",
                "capacity -m qwen3-next-80b-a3b -g h200-sxm --engine vllm --mamba-cache-mode align",
                "serve --engine sglang --engine-version 0.4.6", "report --shape 1,32,8,8192,128 --published-tflops 500",
                "explain --phase step --speculative-config '{\"method\":\"eagle\",\"num_speculative_tokens\":3}'",
                "validate --published", "report --impl torch_cudnn -g a100-sxm-80gb"]


def classic2_inputs() -> Iterator[Input]:
    for command in NEW_COMMANDS:
        yield Input("classic2", f"{command} > /dev/full", check=lambda f, c=command: _stream_problems(
            *_shell(f"rooflab {c} > /dev/full", f, _env()), expect_error=True))
        yield Input("classic2", f"{command} >&-", check=lambda f, c=command: _stream_problems(
            *_shell(f"rooflab {c} >&-", f, _env()), expect_error=True))
        yield Input("classic2", f"{command} | head -n 1", check=lambda f, c=command: _pipe_problems(f, c))
        for label in ("PYTHONWARNINGS=error", "LANG=C LC_ALL=C", "COLUMNS=1", "PYTHONIOENCODING=ascii:strict"):
            def check(folder: Path, c=command, e=ENV_CASES[label]) -> list[str]:
                rc, out, err = _shell(f"rooflab {c}", folder, _env(**e))
                if rc == 1 and "Fatal Python error: init_stdio_encoding" in err:
                    return []
                problems = _stream_problems(rc, out, err, expect_error=False)
                if rc != 0:
                    problems.append(f"exit {rc}: {err.strip()[:160]}")
                return problems
            yield Input("classic2", f"{label}: rooflab {command}", check=check)
    plot = ["plot", "serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "sglang", "--engine-version", "0.4.6",
            "-o", "out.png"]
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        for delay in (0.3, 1.5, 3.0):
            yield Input("classic2", f"plot serve --engine-version {sig.name} after {delay}s",
                        check=lambda f, s=sig, d=delay: _signal_problems(f, plot, s, d))
    def setup(folder: Path) -> None:
        (folder / "ro").mkdir()
        os.chmod(folder / "ro", 0o555)
        (folder / "adir").mkdir()
    for target in ("ro/x.png", "adir", "/dev/full", "o" * 300 + ".png", "nodir/x.png"):
        outputs = [target] if target == "ro/x.png" and os.geteuid() == 0 else []
        yield cli("classic2", [*plot[:-1], target], idents=[target, "--output", "-o", "too long"], setup=setup,
                  outputs=outputs, label=f"plot serve --engine-version -o {target[:40]}")
    for target in ("adir", "/dev/null", "missing.csv", "ro"):
        yield cli("classic2", ["capacity", "--engine", "vllm", "--engine-log", target, "--what-if", "tp=2"],
                  idents=[target, "--engine-log"], setup=setup, label=f"capacity --engine-log {target} --what-if")


# --- round 3 (session 10): what the D1-D20 fixes touched and what neither round covered ---------------------------
# Each input is checked by fs.problems_of (no traceback, exit 0 or 2, one 'error:' line naming the input, strict JSON,
# no file left behind) and, where a figure is printed, against a hand-derived one (its formula beside it).

def _run3(folder: Path, args: list[str], expect: Optional[int] = None, idents=(), json_out: bool = True,
          outputs=()) -> tuple[Optional[dict], list[str], fs.Outcome]:
    """Run `args` in-process under every invariant; the JSON document on exit 0 (json_out), the problems, the outcome.
    `outputs`: the files the command may write (names in `folder`)."""
    case = fs.Case(list(map(str, args)), list(idents), expect, [folder / o for o in outputs], [], json_out,
                   not json_out)
    before = fs.snapshot(folder)
    out = fs.invoke(case.args, folder)
    problems = fs.problems_of(case, out, before, fs.snapshot(folder), folder, {})
    problems = [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]
    doc = fs.strict_json(out.stdout) if out.code == 0 and json_out and not problems else None
    return doc, problems, out


def _get(doc, path: str):
    for part in re.findall(r"[^.\[\]]+", path):
        doc = doc[int(part)] if isinstance(doc, list) else doc.get(part) if isinstance(doc, dict) else None
    return doc


def _figure3(folder: Path, args: list[str], checks: list[tuple[str, float, str]], rel: float = 0.0,
             doc: Optional[dict] = None) -> list[str]:
    """Run `args` (-f json; `-m c` reads `doc`, TINY by default) and compare each (path, hand-derived, formula)."""
    if "-m" in args and args[args.index("-m") + 1] == "c":
        _tiny(folder, doc)
    got, problems, _ = _run3(folder, args, expect=0)
    if problems:
        return problems[:1]
    out = []
    for path, expect, formula in checks:
        value = _get(got, path)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            out.append(f"{path} is {value!r}, hand-derived {expect} ({formula})")
        elif not (value == expect if rel == 0 else math.isclose(value, expect, rel_tol=rel)):
            out.append(f"{path} = {value!r}, hand-derived {expect!r} ({formula})")
    return out


def _agree3(folder: Path, a: list[str], a_field: str, b: list[str], b_field: str, doc: Optional[dict] = None
            ) -> list[str]:
    """Both commands pass every invariant and agree: the same figure, or both refuse (problems_of has checked that
    each refusal names the input; the two word it each in its own option's name, so their lines differ)."""
    if doc is not None or ("-m" in a and a[a.index("-m") + 1] == "c"):
        _tiny(folder, doc)
    first, p1, o1 = _run3(folder, a)
    second, p2, o2 = _run3(folder, b)
    if p1 or p2:
        return p1 + p2
    if o1.code == 2 and o2.code == 2:
        return []
    if o1.code != o2.code:
        return [f"{a[0]} exit {o1.code}, {b[0]} {b[1] if len(b) > 1 else ''} exit {o2.code}: "
                f"{(o1.stderr or o2.stderr).strip()[:200]}"]
    if _get(first, a_field) != _get(second, b_field):
        return [f"{a[0]} {a_field} = {_get(first, a_field)} but {' '.join(b[:3])} {b_field} = {_get(second, b_field)}"]
    return []


# quant3: the one weights vocabulary (-q / --quantization / --weight-dtype) on every command, against checkpoints
# with and without a quantization_config
QUANT_WORDS = ["auto", "bf16", "fp16", "fp8", "fp8_block", "mxfp4", "nvfp4", "int4_g128", "awq", "gptq", "awq_marlin",
               "gptq_marlin", "modelopt", "compressed-tensors", "FP8", "Fp8", "xyz", "", " fp8", "fp8 ", "int4", "fp4"]
QUANT_NAMES = ["-q", "--quantization", "--weight-dtype"]
#: TINY's weights by format (linears: per layer q 512x512 + k, v 2 x 512x128 + o 512x512 + MLP 3 x 512x1024 =
#: 2,228,224 parameters, x 4 layers = 8,912,896; the rest, embeddings + head 2 x 1000 x 512 + norms 4,608 =
#: 1,028,608, stay bf16: 2,057,216 bytes):
#:   fp8 (vLLM's online fp8, per-tensor scales): 8,912,896 x 1 + 2,057,216 = 10,970,112
#:   fp8_block (128 x 128 blocks, an fp32 scale each: q 16, k 4, v 4, o 16, gate 32, up 32, down 32 = 136 a layer):
#:     8,912,896 + 4 x 136 x 4 + 2,057,216 = 10,972,288
#:   mxfp4 (4 bits + an 8-bit scale a 32): 8,912,896 x (1/2 + 1/32) + 2,057,216 = 6,792,192
#:   nvfp4 (4 bits + an fp8 scale a 16): 8,912,896 x (1/2 + 1/16) + 2,057,216 = 7,070,720
#:   int4_g128 (4 bits + an fp16 scale a 128): 8,912,896 x (1/2 + 2/128) + 2,057,216 = 6,652,928
#:   bf16: 2 x 9,941,504 = 19,883,008
TINY_LINEAR, TINY_REST_BYTES = 8_912_896, 2_057_216
TINY_BY_FORMAT = {"fp8": TINY_LINEAR + TINY_REST_BYTES, "fp8_block": TINY_LINEAR + 4 * 136 * 4 + TINY_REST_BYTES,
                  "mxfp4": TINY_LINEAR // 2 + TINY_LINEAR // 32 + TINY_REST_BYTES,
                  "nvfp4": TINY_LINEAR // 2 + TINY_LINEAR // 16 + TINY_REST_BYTES,
                  "int4_g128": TINY_LINEAR // 2 + TINY_LINEAR * 2 // 128 + TINY_REST_BYTES,
                  "bf16": 2 * TINY_PARAMS, "auto": 2 * TINY_PARAMS}
TINY_FP8_BLOCK = {**_hf_doc(TINY), "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                                           "activation_scheme": "dynamic"}}
TINY_FP8_TENSOR = {**_hf_doc(TINY), "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
QUANT_CHECKPOINTS = {"tiny (unquantised)": None, "tiny fp8 block": TINY_FP8_BLOCK, "tiny fp8 per-tensor":
                     TINY_FP8_TENSOR, "gpt-oss-20b (mxfp4)": "gpt-oss-20b", "deepseek-v3 (fp8)": "deepseek-v3",
                     "llama-3-8b": "llama-3-8b"}


def _model_args(ckpt) -> tuple[list[str], Optional[dict]]:
    if ckpt is None or isinstance(ckpt, dict):
        return ["-m", "c"], ckpt
    return ["-m", ckpt, *(["--tp", "8"] if ckpt == "deepseek-v3" else [])], None


def quant3_inputs() -> Iterator[Input]:
    for label, ckpt in QUANT_CHECKPOINTS.items():
        model, doc = _model_args(ckpt)
        for word in QUANT_WORDS:
            for name in QUANT_NAMES:
                cap = ["capacity", *model, "-g", "h200-sxm", name, word, "-f", "json"]
                step = ["report", "--phase", "step", *model, "-g", "h200-sxm", name, word, "-f", "json"]
                yield Input("quant3", f"capacity = step: {label} {name} {word!r}", check=lambda f, c=cap, s=step,
                            d=doc, m=model: _agree3(f, c, "weights_bytes", s, "weight_bytes_per_gpu",
                                                    doc=d if m[1] == "c" else None))
    # hand-derived TINY weights under each name (capacity and the step, one path)
    for fmt, expect in TINY_BY_FORMAT.items():
        for name in QUANT_NAMES:
            for cmd, field in ((["capacity"], "weights_bytes"), (["report", "--phase", "step"], "weight_bytes_per_gpu")):
                yield Input("quant3", f"tiny {' '.join(cmd)} {name} {fmt} weights", check=lambda f, c=cmd, n=name,
                            w=fmt, x=expect, fi=field: _figure3(f, [*c, "-m", "c", "-g", "h200-sxm", n, w, "-f", "json"],
                                                               [(fi, x, f"TINY in {w}")]))
    for label, doc, expect in (("fp8 block checkpoint, auto", TINY_FP8_BLOCK, TINY_BY_FORMAT["fp8_block"]),
                               ("fp8 block checkpoint, -q fp8", TINY_FP8_BLOCK, TINY_BY_FORMAT["fp8_block"]),
                               ("fp8 per-tensor checkpoint, auto", TINY_FP8_TENSOR, TINY_BY_FORMAT["fp8"]),
                               ("fp8 per-tensor checkpoint, -q fp8", TINY_FP8_TENSOR, TINY_BY_FORMAT["fp8"])):
        q = ["-q", "fp8"] if "-q" in label else []
        for cmd, field in ((["capacity"], "weights_bytes"), (["report", "--phase", "step"], "weight_bytes_per_gpu")):
            yield Input("quant3", f"tiny {label}: {cmd[0]}", check=lambda f, c=cmd, q=q, d=doc, x=expect, fi=field:
                        _figure3(f, [*c, "-m", "c", "-g", "h200-sxm", *q, "-f", "json"], [(fi, x, "as shipped")], doc=d))
    # TP 2: every linear split in two (rooflab splits the norms too; within 1e-3)
    for fmt in ("fp8", "mxfp4", "nvfp4", "int4_g128"):
        yield Input("quant3", f"tiny capacity --tp 2 -q {fmt}", check=lambda f, w=fmt: _figure3(
            f, ["capacity", "-m", "c", "-g", "h200-sxm", "--tp", "2", "-q", w, "-f", "json"],
            [("weights_bytes", TINY_BY_FORMAT[w] / 2, f"TINY in {w} / 2")], rel=1e-3))
    # serve and plot serve take or refuse a -q word as capacity does (serve resolves -q and --weight-dtype as capacity does, so a
    # format other than fp8 may be refused there alone; a word capacity refuses must be refused there too)
    for label, ckpt in QUANT_CHECKPOINTS.items():
        model, doc = _model_args(ckpt)
        for word in ("auto", "fp8", "mxfp4", "awq", "fp8_block"):
            for cmd in (["serve", "-f", "json"], ["plot", "serve", "-o", "s.png"]):
                yield Input("quant3", f"{' '.join(cmd[:-2])} refuses as capacity: {label} -q {word}", check=lambda f,
                            c=cmd, m=model, w=word, d=doc: _refuses_as_capacity(f, c, m, w, d))
    # the other commands: each word under each name passes every invariant (exit 0, or 2 naming the option or word)
    words = ["auto", "fp8", "mxfp4", "awq", "bf16", "xyz", "fp8_block"]
    for label, ckpt in (("tiny", None), ("gpt-oss-20b", "gpt-oss-20b"), ("llama-3-8b", "llama-3-8b")):
        model, doc = _model_args(ckpt)
        setup = (lambda f: _tiny(f)) if ckpt is None else None
        for word in words:
            for name in QUANT_NAMES:
                for cmd in (["explain", "--phase", "step"], ["serve"]):
                    yield cli("quant3", [*cmd, *model, "-g", "h200-sxm", name, word], idents=[name, word or "''",
                              "--quantization", "-q", "checkpoint"], setup=setup,
                              label=f"{' '.join(cmd)} {label} {name} {word}")
            for cmd, out in ((["plot", "capacity"], "c.png"), (["plot", "serve"], "s.png")):
                yield cli("quant3", [*cmd, *model, "-g", "h200-sxm", "-q", word, "-o", out],
                          idents=["-q", word, "--quantization", "checkpoint"], setup=setup, outputs=[out],
                          label=f"{' '.join(cmd)} {label} -q {word}")


def _refuses_as_capacity(folder: Path, cmd: list[str], model: list[str], word: str, doc: Optional[dict]) -> list[str]:
    if model[1] == "c":
        _tiny(folder, doc)
    _, p1, cap = _run3(folder, ["capacity", *model, "-g", "h200-sxm", "-q", word, "-f", "json"])
    outputs = ["s.png"] if cmd[0] == "plot" else []
    _, p2, other = _run3(folder, [*cmd[:-2], *model, "-g", "h200-sxm", "-q", word, *cmd[-2:]],
                         json_out=cmd[0] != "plot", outputs=outputs)
    if p1 or p2:
        return p1 + p2
    if cap.code == 2 and other.code == 0:
        return [f"{' '.join(cmd[:-2])} -q {word} exit 0 where capacity refuses: {cap.stderr.splitlines()[0][:200]}"]
    if cap.code == 0 and other.code == 2 and word in ("auto", "mxfp4") and "as shipped" not in other.stderr:
        return [f"{' '.join(cmd[:-2])} -q {word} refused where capacity prices it: {other.stderr.splitlines()[0][:200]}"]
    return []


# sizes3: memory sizes need a unit, on every option that takes one
SIZE_VALUES = {"80": 2, "80G": 2, "80Gi": None, "80GB": None, "80GiB": None, "0": None, "-1GiB": 2, "1e400GiB": 2,
               "200GiB": 2, "81920MiB": None, "0.5GiB": None, "nanGiB": 2, "infGiB": 2, "80 GiB": None, "1e3GiB": 2,
               "0B": None, "80g": 2, "80gb": None, "80GIB": None, "8e1GiB": None, "+80GiB": None, "0x50GiB": 2,
               "80GiBs": 2, "GiB": 2, "": 2, "80.5GiB": None, "1TiB": 2, "-0GiB": None}
ENGINE_LOGS3 = {"sglang": ("llama-3.1-8b", "h100-sxm", "sglang-llama-3.1-8b-instruct-h100-tp1.log"),
                "vllm": ("llama-2-7b", "a100-sxm-80gb", "vllm-llama-2-7b-a100-80gb-tp1.log")}


def sizes3_inputs() -> Iterator[Input]:
    for value, expect in SIZE_VALUES.items():
        for engine in ("vllm", "sglang"):
            for option in ("--cuda-visible-memory", "--memory-in-use"):
                yield cli("sizes3", ["capacity", "--engine", engine, "-g", "h200-sxm", f"{option}={value}", "-f",
                                     "json"], idents=[option, value or "''", "--memory-in-use"], expect=expect,
                          json_out=True, label=f"capacity --engine {engine} {option} {value!r}")
            model, gpu, log = ENGINE_LOGS3[engine]
            yield cli("sizes3", ["capacity", "-m", model, "-g", gpu, "--engine-log", str(fs.ROOT / "tests" / "data" /
                                 "engine_logs" / log), "--what-if", f"memory-in-use={value}"],
                      idents=["--what-if", "memory-in-use", value or "''"], expect=expect if expect == 2 else None,
                      label=f"--what-if memory-in-use={value!r} on a {engine} log")
    # a visible total of 0 is refused as such: the message must not blame --memory-in-use, which was not given
    for engine in ("vllm", "sglang"):
        yield Input("sizes3", f"capacity --engine {engine} --cuda-visible-memory 0 names its own option",
                    check=lambda f, e=engine: _blames_given(f, ["capacity", "--engine", e, "--cuda-visible-memory",
                                                                "0"], "--memory-in-use"))
    # hand-derived: vLLM V1's KV on TINY, every term given, is floor(0.9 x visible) - 2 x params - the rotary cache
    # 4,096 x 64 x 2; the visible total in any unit
    for value, visible in (("80GiB", 80 << 30), ("81920MiB", 80 << 30), ("85899345920B", 80 << 30),
                           ("80GB", 80 * 10 ** 9), ("0.08TB", 80 * 10 ** 9), ("100GiB", 100 << 30),
                           ("140GiB", 140 << 30), ("80 GiB", 80 << 30), ("80gib", 80 << 30)):
        kv = int(0.9 * visible) - 2 * TINY_PARAMS - 4096 * 64 * 2
        yield Input("sizes3", f"vLLM V1 KV at --cuda-visible-memory {value}", check=lambda f, v=value, x=kv: _figure3(
            f, ["capacity", "-m", "c", "-g", "h200-sxm", "--max-model-len", "4096", "--engine", "vllm",
                "--cuda-visible-memory", v, "--non-torch-gib", "0", "--activation-gib", "0", "-f", "json"],
            [("kv_cache_bytes", x, f"floor(0.9 x {v}) - 2 x params - 524,288"),
             ("num_blocks", x // (16 * 4 * TINY_KV_LAYER), "floor(KV / 32,768)")]))
    # SGLang: memory in use by others at start-up lowers both its total (free memory at init) and what is left
    # after the weights: rest = (avail - X) - (total - X)(1 - f), the pool falls by f x X
    for value, used in (("1GiB", 1 << 30), ("4GiB", 4 << 30), ("10GB", 10 ** 10), ("512MiB", 512 << 20)):
        yield Input("sizes3", f"SGLang pool falls by mem_fraction x {value}", check=lambda f, v=value, x=used:
                    _sglang_drop(f, v, x))


def _blames_given(folder: Path, args: list[str], not_given: str) -> list[str]:
    _, problems, out = _run3(folder, args, expect=2, idents=[args[-2]])
    if problems:
        return problems
    first = out.stderr.splitlines()[0]
    return [f"the refusal blames {not_given}, which was not given: {first[:200]}"] if not_given in first else []


def _sglang_drop(folder: Path, value: str, used: int) -> list[str]:
    base = ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", "--engine", "sglang", "-f", "json"]
    first, p1, _ = _run3(folder, base, expect=0)
    second, p2, _ = _run3(folder, base + ["--memory-in-use", value], expect=0)
    if p1 or p2:
        return p1 + p2
    drop, expect = first["kv_cache_bytes"] - second["kv_cache_bytes"], first["utilization"] * used
    return [] if abs(drop - expect) <= 1 else [f"pool fell by {drop}, hand-derived {first['utilization']} x {used} "
                                               f"= {expect}"]


# step3: --engine / --engine-version on the step and serve; step options that need another
STEP_ENGINES = ["vllm", "sglang", "tensorrt-llm", "trtllm"]
STEP_VERSIONS = ["0.5", "0.9", "0.9.0", "0.10.0", "1.0", "0.4.6", "0.11.2", "99.0", "abc", "", "v0.9", "0.9.0rc1",
                 "1.0.0.post1", "-1", "0.x"]
BAD_RELEASES = {"abc", "", "-1", "0.x"}


def _trt_check(folder: Path, model: str, version: str, grouped: bool) -> list[str]:
    """TensorRT-LLM before 0.10 reads a GQA group's KV once per query head (its masked MHA, outside XQA); an MHA
    model (llama-2-7b, 32 KV heads for 32 query heads) has no group to re-read: the same step as 1.0."""
    args = ["report", "--phase", "step", "-m", model, "--engine", "tensorrt-llm", "-f", "json"]
    old, p1, _ = _run3(folder, args + ["--engine-version", version], expect=0)
    new, p2, _ = _run3(folder, args + ["--engine-version", "1.0"], expect=0)
    if p1 or p2:
        return p1 + p2
    attn = lambda d: next(r for r in d["rows"] if r["variant"] == "split_kv")
    per_head = "per query head" in attn(old)["label"]
    if grouped and not per_head:
        return [f"TensorRT-LLM {version} on a GQA model: the attention row does not say it reads KV per query head"]
    if not grouped and (per_head or old["t_predicted_s"] != new["t_predicted_s"]):
        return [f"TensorRT-LLM {version} on an MHA model priced {old['t_predicted_s']} against 1.0's "
                f"{new['t_predicted_s']} ({attn(old)['label']})"]
    return []


STEP_NEEDS = [(["--micro-batches", "2"], "--pp"), (["--acceptance-rate", "0.8"], "--speculative"),
              (["--enable-dp-attention"], "--dp"), (["--expert-imbalance", "2"], "--expert-imbalance"),
              (["--step", "prefill", "--speculative-config", '{"method":"eagle","num_speculative_tokens":3}'],
               "prefill"),
              (["--step", "prefill", "--speculative-algorithm", "EAGLE", "--speculative-num-draft-tokens", "4"],
               "prefill"),
              (["--micro-batches", "2", "--pp", "1"], "--pp"), (["--enable-dp-attention", "--dp", "1"], "--dp"),
              (["--expert-imbalance", "2", "-m", "mixtral-8x7b", "-g", "h200-sxm", "--pp", "1"], None),
              (["--acceptance-rate", "0.8", "--speculative-config", '{"method":"eagle","num_speculative_tokens":3}'],
               None), (["--micro-batches", "2", "--pp", "2"], None),
              (["--enable-dp-attention", "--dp", "2", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8"], None),
              (["--micro-batches", "0", "--pp", "2"], "--micro-batches"),
              (["--micro-batches", "3", "--pp", "2", "-b", "2"], None),
              (["--acceptance-rate", "1.5", "--speculative-config", '{"method":"eagle","num_speculative_tokens":3}'],
               "--acceptance-rate"),
              (["--expert-imbalance", "0.5", "-m", "qwen3-30b-a3b", "-g", "h200-sxm"], "--expert-imbalance")]


def _csv_dcp(folder: Path, dcp: str) -> list[str]:
    args = ["report", "--phase", "step", "-m", "llama-3.1-405b", "-g", "h200-sxm", "--tp", "16", "--dcp", dcp]
    doc, problems, _ = _run3(folder, args + ["-f", "json"], expect=0)
    _, more, out = _run3(folder, args + ["-f", "csv"], expect=0, json_out=False)
    if problems or more:
        return problems + more
    rows = list(__import__("csv").DictReader(out.stdout.splitlines()))
    if "dcp" in (rows[0] if rows else {}) and any(r["dcp"] != str(doc["decode_context_parallel"]) for r in rows):
        return [f"CSV dcp column {sorted({r['dcp'] for r in rows})} under --dcp {dcp} (JSON decode_context_parallel "
                f"{doc['decode_context_parallel']}); cp column {sorted({r.get('cp') for r in rows})}"]
    return []


def step3_inputs() -> Iterator[Input]:
    for engine in STEP_ENGINES:
        for version in STEP_VERSIONS:
            for model in ("llama-3-8b", "llama-2-7b"):
                yield cli("step3", ["report", "--phase", "step", "-m", model, "--engine", engine, "--engine-version",
                                    version, "-f", "json"], idents=["--engine-version", version or "''"],
                          expect=2 if version in BAD_RELEASES else None, json_out=True,
                          label=f"step {model} --engine {engine} --engine-version {version!r}")
            if engine != "trtllm":
                yield cli("step3", ["serve", "--engine", engine, "--engine-version", version, "-f", "json"],
                          idents=["--engine-version", version or "''", "--engine"],
                          expect=2 if version in BAD_RELEASES else None, json_out=True,
                          label=f"serve --engine {engine} --engine-version {version!r}")
    for version in ("0.5", "0.9", "0.9.3"):
        for model, grouped in (("llama-3-8b", True), ("llama-2-7b", False), ("mistral-7b", True)):
            yield Input("step3", f"TensorRT-LLM {version} on {model}", check=lambda f, m=model, v=version, g=grouped:
                        _trt_check(f, m, v, g))
    # the step's CSV names the deployment as its JSON does: under --dcp 2 the dcp column (if any) says 2
    for dcp in ("1", "2"):
        yield Input("step3", f"report --phase step --dcp {dcp} -f csv: the dcp column", check=lambda f, d=dcp:
                    _csv_dcp(f, d))
    for extra, needs in STEP_NEEDS:
        for cmd in (["report", "--phase", "step"], ["explain", "--phase", "step"]):
            args = [*cmd, *(["-m", "llama-3-8b"] if "-m" not in extra else []), *extra]
            yield cli("step3", args, idents=[needs] if needs else [], expect=2 if needs else 0,
                      label=f"{' '.join(cmd)} {' '.join(extra)[:80]}")


# memory3: a draft model's memory, the step under --pp against capacity --pp, fp8_ds_mla's 656 bytes
LLAMA3_8B_WEIGHTS, LLAMA32_1B_WEIGHTS = 16_060_522_496, 2_460_000_000    # 2 x 8,030,261,248 (hf); 2 x 1.23 B (card)


def memory3_inputs() -> Iterator[Input]:
    draft = json.dumps({"model": "llama-3.2-1b", "num_speculative_tokens": 2})
    # target llama-3-8b: KV a token 2 x 32 x 8 x 128 x 2 = 131,072, its 8 KV heads split by TP; draft llama-3.2-1b:
    # 2 x 16 x 8 x 64 x 2 = 32,768, the same split; both models' weights split over the target's TP
    for tp in (1, 2, 4, 8):
        for b, ctx in ((1, 8192), (2, 4096), (8, 1024)):
            kv_t, kv_d = b * ctx * 131_072 // tp, b * ctx * 32_768 // tp
            checks = [("weight_bytes_per_gpu", (LLAMA3_8B_WEIGHTS + LLAMA32_1B_WEIGHTS) / tp, "(target + draft) / TP"),
                      ("draft_weight_bytes_per_gpu", LLAMA32_1B_WEIGHTS / tp, "2,460,000,000 / TP"),
                      ("kv_bytes_per_gpu", kv_t + kv_d, "b L (131,072 + 32,768) / TP"),
                      ("draft_kv_bytes_per_gpu", kv_d, "b L 32,768 / TP")]
            yield Input("memory3", f"draft model memory TP {tp} b {b} L {ctx}", check=lambda f, t=tp, b=b, c=ctx,
                        ch=checks: _figure3(f, ["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm",
                                                "--tp", str(t), "-b", str(b), "-L", str(c), "--speculative-config",
                                                draft, "-f", "json"], ch))
    for model, extra in (("llama-3-8b", []), ("gemma-2-9b", []), ("qwen3-30b-a3b", []), ("mixtral-8x7b", []),
                         ("qwen2.5-7b", []), ("mistral-7b", []), ("gpt-oss-20b", []), ("llama-3-8b", ["--tp", "2"]),
                         ("qwen3-30b-a3b", ["--tp", "2", "--enable-expert-parallel"])):
        for pp in (2, 3, 4):
            for cap_field, step_field in (("weights_bytes", "weight_bytes_per_gpu"),
                                          ("kv_bytes_per_sequence", "kv_bytes_per_gpu")):
                yield Input("memory3", f"capacity = step: {model} {' '.join(extra)} --pp {pp} {cap_field}",
                            check=lambda f, m=model, e=extra, p=pp, c=cap_field, s=step_field: _agree3(
                                f, ["capacity", "-m", m, "-g", "h200-sxm", "-L", "8192", "--pp", str(p), *e, "-f",
                                    "json"], c, ["report", "--phase", "step", "-m", m, "-g", "h200-sxm", "-L", "8192",
                                                 "--pp", str(p), *e, "-f", "json"], s))
    # --pp-layer-partition is capacity's (the step takes --pp's even split only: refused there as an unknown option)
    for part in ("10,22", "0,32", "33,-1"):
        yield cli("memory3", ["report", "--phase", "step", "-m", "llama-3-8b", "--pp", "2", "--pp-layer-partition",
                              part], idents=["--pp-layer-partition"], expect=2,
                  label=f"report --phase step --pp-layer-partition {part}")
    for part in ("0,32", "33,-1", "8,8,8", "16,16,0"):
        pp = "2" if part.count(",") == 1 else "4"
        yield cli("memory3", ["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--pp", pp, "--pp-layer-partition",
                              part], idents=["--pp-layer-partition", part], expect=2,
                  label=f"capacity --pp {pp} --pp-layer-partition {part}")
    # Llama 3 8B, PP 2: the stage with most KV binds (n layers x 4,096 bytes a token x 8,192 tokens)
    for part, layers in (("10,22", 22), ("22,10", 22), ("16,16", 16), ("1,31", 31), ("31,1", 31)):
        yield Input("memory3", f"capacity KV under --pp-layer-partition {part}", check=lambda f, pa=part, n=layers:
                    _figure3(f, ["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "-L", "8192", "--pp", "2",
                                 "--pp-layer-partition", pa, "-f", "json"],
                             [("kv_bytes_per_sequence", 8192 * n * 4096, f"8,192 x {n} layers x 4,096")]))
    # fp8_ds_mla: 656 bytes a token a layer (512 fp8 latent + 4 fp32 scales + 64 bf16 rope) over DeepSeek-V3's 61
    # layers, replicated over TP (MLA has one latent head)
    for ctx in (1024, 4096, 8192, 16384, 65536):
        for b in (1, 3):
            for tp in (8, 16):
                yield Input("memory3", f"fp8_ds_mla step KV b {b} L {ctx} TP {tp}", check=lambda f, c=ctx, b=b, t=tp:
                            _figure3(f, ["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp",
                                         str(t), "-b", str(b), "-L", str(c), "--kv-cache-dtype", "fp8_ds_mla", "-f",
                                         "json"], [("kv_bytes_per_gpu", b * c * 61 * 656, "b L 61 x 656")]))
        yield Input("memory3", f"fp8_ds_mla capacity KV L {ctx}", check=lambda f, c=ctx: _figure3(
            f, ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "-L", str(c), "--kv-cache-dtype",
                "fp8_ds_mla", "-f", "json"], [("kv_bytes_per_token", 61 * 656, "61 x 656"),
                                              ("kv_bytes_per_sequence", c * 61 * 656, "L x 61 x 656")]))


# hybrid3: the Mamba hybrids' readers (JambaForCausalLM, BambaForCausalLM, GraniteMoeHybridForCausalLM)
JAMBA3 = {"architectures": ["JambaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536,
          "torch_dtype": "bfloat16"}       # tests/support.py JAMBA_V01; transformers' JambaConfig defaults the rest


def _jamba(h=4096, layers=32, heads=32, kv=8, ffn=14336, vocab=65536, period=8, offset=4, experts=16, e_period=2,
           e_offset=1, d_state=16, d_conv=4, expand=2, tp=1) -> dict:
    """Jamba by hand (transformers' JambaConfig and modeling_jamba): d_inner = expand h, dt_rank ceil(h / 16);
    a Mamba layer's state (conv (d_conv - 1) x d_inner + ssm d_inner x d_state) x 2 bytes, split by TP; an
    attention layer's token 2 x kv/TP x (h / heads) x 2; parameters: mamba in_proj h 2di, conv di d_conv + di,
    x_proj di (dt_rank + 2 d_state), dt_proj dt_rank di + di, A di d_state, D di, out_proj di h, three norms
    dt_rank + 2 d_state; attention 2 h^2 + 2 h kv d; MLP 3 h ffn (x experts + router h x experts on expert layers);
    two norms a layer, embeddings and head untied, final norm."""
    di, dr, d = expand * h, -(-h // 16), h // heads
    attn_layers = sum(1 for i in range(layers) if i % period == offset)
    moe_layers = sum(1 for i in range(layers) if i % e_period == e_offset) if experts > 1 else 0
    mamba = h * 2 * di + di * d_conv + di + di * (dr + 2 * d_state) + dr * di + di + di * d_state + di + di * h + \
        dr + 2 * d_state
    mlp = 3 * h * ffn
    params = (layers - attn_layers) * mamba + attn_layers * (2 * h * h + 2 * h * kv * d) + \
        (layers - moe_layers) * mlp + moe_layers * (experts * mlp + h * experts) + layers * 2 * h + 2 * vocab * h + h
    state = ((d_conv - 1) * di + di * d_state) * 2 // tp
    return {"params": params, "state": state, "kv_token": attn_layers * 2 * max(1, kv // tp) * d * 2,
            "attn_layers": attn_layers, "doc": {**JAMBA3, "hidden_size": h, "num_hidden_layers": layers,
                                                "num_attention_heads": heads, "num_key_value_heads": kv,
                                                "intermediate_size": ffn, "vocab_size": vocab,
                                                "attn_layer_period": period, "attn_layer_offset": offset,
                                                "num_experts": experts, "expert_layer_period": e_period,
                                                "expert_layer_offset": e_offset, "mamba_d_state": d_state,
                                                "mamba_d_conv": d_conv, "mamba_expand": expand}}


def _bamba(layers=32, attn=(9, 18, 27), n_heads=128, d_head=64, groups=1, d_state=128, d_conv=4, expand=2, h=4096,
           tp=1) -> dict:
    """Bamba (Mamba-2) state by hand: conv (d_conv - 1) x (di/TP + 2 x groups/TP x d_state) + ssm heads/TP x d_head
    x d_state, 2 bytes; vLLM replicates groups up to TP when TP does not divide them (extra_groups_for_head_shards)."""
    di = expand * h
    g = groups // tp if groups % tp == 0 else 1
    state = ((d_conv - 1) * (di // tp + 2 * g * d_state) + n_heads // tp * d_head * d_state) * 2
    doc = {"architectures": ["BambaForCausalLM"], "model_type": "bamba", "hidden_size": h, "intermediate_size": 14336,
           "num_hidden_layers": layers, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "attn_layer_indices": list(attn), "mamba_n_heads": n_heads, "mamba_d_head": d_head,
           "mamba_n_groups": groups, "mamba_d_state": d_state, "mamba_d_conv": d_conv, "mamba_expand": expand,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "max_position_embeddings": 4096}
    return {"state": state, "kv_token": len(attn) * 2 * max(1, 8 // tp) * 128 * 2, "doc": doc}


def _hybrid_check(folder: Path, h: dict, tp: int, weights: bool) -> list[str]:
    args = ["capacity", "-m", "c", "-g", "h200-sxm", "-L", "4096", "--tp", str(tp), "-f", "json"]
    _tiny(folder, h["doc"])
    got, problems, _ = _run3(folder, args, expect=0)
    if problems:
        return problems[:1]
    linear = [layer for layer in got["layers"] if layer["kind"] == "linear"]      # the list's order is not fixed
    checks = [("kv_bytes_per_token", got["kv_bytes_per_token"], h["kv_token"], "attention layers x 2 x KV heads x d x 2"),
              ("the Mamba layers' state_bytes", linear[0]["state_bytes"] if linear else None, h["state"],
               "conv + ssm state x 2 bytes")]
    if weights:
        checks.append(("weights_bytes", got["weights_bytes"], 2 * h["params"] / tp, "2 x params / TP"))
    return [f"{name} = {value!r}, hand-derived {expect} ({formula})" for name, value, expect, formula in checks
            if not (isinstance(value, (int, float)) and math.isclose(value, expect, rel_tol=1e-3 if tp > 1 else 0))]


def hybrid3_inputs() -> Iterator[Input]:
    for label, kw in (("v0.1", {}), ("no experts", {"experts": 1}), ("attention 1 in 4", {"period": 4, "offset": 1}),
                      ("d_state 32", {"d_state": 32}), ("expand 1", {"expand": 1}), ("d_conv 2", {"d_conv": 2}),
                      ("16 layers", {"layers": 16}), ("kv 4", {"kv": 4}), ("kv 32 (MHA)", {"kv": 32}),
                      ("hidden 2048", {"h": 2048, "heads": 16, "ffn": 8192}), ("every layer MoE", {"e_period": 1,
                                                                                               "e_offset": 0}),
                      ("attention offset 0", {"offset": 0})):
        for tp in ((2, 4) if label == "every layer MoE" else (1, 2, 4)):     # 175 GiB of weights: TP 1 fits no GPU
            h = _jamba(**kw, tp=tp)
            yield Input("hybrid3", f"Jamba {label} TP {tp}", check=lambda f, h=h, t=tp: _hybrid_check(f, h, t, t == 1))
    for label, kw in (("9B", {}), ("4 groups", {"groups": 4}), ("d_state 64", {"d_state": 64}),
                      ("64 heads of 128", {"n_heads": 64, "d_head": 128}), ("attention at 0", {"attn": (0,)})):
        for tp in (1, 2, 4):
            h = _bamba(**kw, tp=tp)
            yield Input("hybrid3", f"Bamba {label} TP {tp}", check=lambda f, h=h, t=tp: _hybrid_check(f, h, t, False))
    base = _jamba()["doc"]
    for field, value in (("mamba_d_state", 0), ("mamba_d_state", -1), ("mamba_d_state", "16"), ("mamba_expand", 1.5),
                         ("mamba_expand", 0), ("mamba_d_conv", 0), ("attn_layer_period", 0), ("attn_layer_offset", 8),
                         ("attn_layer_offset", -1), ("expert_layer_period", 0), ("num_experts", 0),
                         ("num_experts_per_tok", 17), ("mamba_dt_rank", -3), ("mamba_d_state", None),
                         ("attn_layer_period", 2.5), ("mamba_d_conv", True)):
        yield cli("hybrid3", ["capacity", "-m", "c", "-g", "h200-sxm", "-f", "json"], idents=[field, "config.json"],
                  expect=2, json_out=True, setup=lambda f, d={**base, field: value}: _tiny(f, d),
                  label=f"Jamba {field}={value!r}")
    bamba = _bamba()["doc"]
    # a Bamba without attention layers is a pure Mamba model: refused with the reason (rooflab plans hybrids only)
    yield cli("hybrid3", ["capacity", "-m", "c", "-g", "h200-sxm", "-f", "json"], idents=["attention", "config.json"],
              expect=2, json_out=True, setup=lambda f: _tiny(f, {**bamba, "attn_layer_indices": []}),
              label="Bamba attn_layer_indices=[] (pure Mamba)")
    # a repeated index is one attention layer (transformers' BambaConfig reads membership: i in attn_layer_indices)
    yield Input("hybrid3", "Bamba attn_layer_indices=[9, 9] is one attention layer", check=lambda f: _figure3(
        f, ["capacity", "-m", "c", "-g", "h200-sxm", "-f", "json"], [("kv_bytes_per_token", 2 * 8 * 128 * 2,
                                                                     "1 attention layer x 2 x 8 x 128 x 2")],
        doc={**bamba, "attn_layer_indices": [9, 9]}))
    for field, value in (("attn_layer_indices", [40]), ("attn_layer_indices", [-1]), ("attn_layer_indices", "9"),
                         ("mamba_n_groups", 3), ("mamba_n_heads", 0), ("mamba_d_head", -64), ("mamba_n_groups", 0)):
        yield cli("hybrid3", ["capacity", "-m", "c", "-g", "h200-sxm", "-f", "json"], idents=[field, "config.json"],
                  expect=2, json_out=True, setup=lambda f, d={**bamba, field: value}: _tiny(f, d),
                  label=f"Bamba {field}={value!r}")
    for arch in ("JambaForCausalLM", "BambaForCausalLM"):
        doc = base if arch.startswith("Jamba") else bamba
        for cmd in (["report", "--phase", "step"], ["explain", "--phase", "step"], ["serve"], ["report"],
                    ["capacity", "--engine", "vllm"], ["capacity", "--engine", "sglang"]):
            yield cli("hybrid3", [*cmd, "-m", "c", "-g", "h200-sxm"], idents=["mamba", "Mamba", "linear", "c"],
                      setup=lambda f, d=doc: _tiny(f, d), label=f"{arch} {' '.join(cmd)}")


# amd3: a GPU whose spec gives no exp rate shows t_exp as unknown (null, '-', an empty cell), never 0
AMD_GPUS = ["mi300x", "mi325x", "mi355x"]
EXP_VARIANTS = {"naive", "flash", "paged", "split_kv", "merge", "mla"}


def _amd_check(folder: Path, args: list[str]) -> list[str]:
    doc, problems, _ = _run3(folder, args + ["-f", "json"], expect=0)
    if problems:
        return problems[:1]
    bad = [f"{r['variant']} ({r.get('label', '')[:40]}) t_exp_s = {r.get('t_exp_s')!r}" for r in doc["rows"]
           if r["variant"] in EXP_VARIANTS and r.get("t_exp_s") is not None]
    _, problems, out = _run3(folder, args + ["-f", "csv"], expect=0, json_out=False)
    if problems:
        return problems[:1]
    rows = list(__import__("csv").DictReader(out.stdout.splitlines()))      # the step's CSV has no t_exp_s column
    bad += [f"CSV {r['variant']} t_exp_s = {r['t_exp_s']!r}" for r in rows
            if r.get("variant") in EXP_VARIANTS and r.get("t_exp_s") not in (None, "")]
    return [f"{' '.join(args)}: t_exp given a figure on a GPU without an exp rate: {'; '.join(bad)[:300]}"] if bad else []


def amd3_inputs() -> Iterator[Input]:
    for gpu in AMD_GPUS:
        for phase in ("prefill", "decode", "step"):
            for model in ("llama-3-8b", "deepseek-v3", "qwen3-30b-a3b"):
                extra = ["--tp", "8"] if model == "deepseek-v3" and phase == "step" else []
                yield Input("amd3", f"report --phase {phase} -m {model} -g {gpu}", check=lambda f, g=gpu, p=phase,
                            m=model, e=extra: _amd_check(f, ["report", "--phase", p, "-m", m, "-g", g, *e]))
        for cmd in (["explain"], ["explain", "--phase", "step"], ["report"], ["report", "--phase", "step"]):
            yield cli("amd3", [*cmd, "-g", gpu], expect=0, label=f"{' '.join(cmd)} -g {gpu} (table)")


# plot3: no text outside the figure (long titles, several GPUs); plot serve on a deployment without a prediction
def _text_outside(folder: Path, args: list[str]) -> list[str]:
    """Run a plot command in-process and record every text artist matplotlib draws (its window extent against the
    figure's box at the saving dpi): a label past the edge is cut off in the image."""
    import matplotlib.text
    outside: list[str] = []
    draw = matplotlib.text.Text.draw

    def recording(self, renderer, *a, **kw):
        result = draw(self, renderer, *a, **kw)
        if self.get_visible() and self.get_text().strip() and self.figure is not None:
            e, box = self.get_window_extent(renderer), self.figure.bbox
            if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
                outside.append(f"{self.get_text()[:50]!r} at {[round(v) for v in e.extents]} in "
                               f"{[round(v) for v in box.extents]}")
        return result
    matplotlib.text.Text.draw = recording
    try:
        _, problems, _ = _run3(folder, args, expect=0, json_out=False, outputs=[args[args.index("-o") + 1]])
    finally:
        matplotlib.text.Text.draw = draw
    return problems[:1] + ([f"text outside the figure: {outside[0]} (and {len(outside) - 1} more)"] if outside else [])


def plot3_inputs() -> Iterator[Input]:
    for model in ("minimax-m2.5", "deepseek-v3", "qwen3-next-80b-a3b", "llama-3.1-405b", "gpt-oss-120b"):
        for gpus in (["mi355x"], ["mi355x", "b200"], ["h200-sxm", "mi300x", "mi325x"]):
            tp = ["--tp", "8"] if model in ("deepseek-v3", "llama-3.1-405b", "minimax-m2.5", "qwen3-next-80b-a3b") else []
            args = ["plot", "capacity", "-m", model, *[w for g in gpus for w in ("-g", g)], *tp, "-o", "c.png"]
            yield Input("plot3", " ".join(args), check=lambda f, a=args: _text_outside(f, a))
    for gpu in ("mi355x", "mi300x", "h200-sxm", "a10"):
        for model in ("llama-3-8b", "minimax-m2.5")[:1 if gpu == "a10" else 2]:     # 27 GiB a GPU at TP 8 > an A10
            extra = ["--tp", "8"] if model == "minimax-m2.5" else []
            args = ["plot", "serve", "-m", model, "-g", gpu, *extra, "-o", "s.png"]
            yield Input("plot3", " ".join(args), check=lambda f, a=args: _text_outside(f, a))
    for gpus in (["mi355x", "h200-sxm"], ["h200-sxm", "h100-sxm"], ["b200", "mi300x"], ["mi355x"], ["a10", "l4"]):
        for model in ("llama-3-8b", "qwen3-next-80b-a3b"):
            for out in ("r.png", "r.svg"):
                args = ["plot", "roofline", "-m", model, *[w for g in gpus for w in ("-g", g)], "-o", out]
                yield Input("plot3", " ".join(args), check=lambda f, a=args: _text_outside(f, a))
    for args in (["plot", "memory", "-m", "minimax-m2.5", "-g", "mi355x", "-o", "m.png"],
                 ["plot", "decode", "-m", "minimax-m2.5", "-g", "mi355x", "-o", "d.png"],
                 ["plot", "time", "-m", "minimax-m2.5", "-g", "mi355x", "-o", "t.png"],
                 ["plot", "roofline", "-g", "mi355x", "-g", "h200-sxm", "-g", "mi325x", "-o", "r.png"]):
        yield Input("plot3", " ".join(args), check=lambda f, a=args: _text_outside(f, a))


# closing4 (the closing re-run): the weights options with --engine, serve and explain --phase step under every new
# option, --engine-version's odd spellings on serve, --data in odd cases, Mamba-family config.json contradictions
WEIGHT_FORMATS4 = ["auto", "bf16", "fp16", "fp8", "fp8_block", "mxfp4", "nvfp4", "int4_g128", "FP8", "nope", ""]
ODD_RELEASES4 = {"0.9.0": 0, "v0.9.0": None, " 0.9.0": None, "0.9.0 ": None, "0.9.0+cu121": 0, "0.9.0\n": None,
                 "0.9..0": 2, "0.9;1": 2, "nan": 2, "inf": 2, "1e3": 2, "\uff10.9": 2, "0.9.0-rc1": None, "V1": None,
                 "v1": None, "0": None, "00.09": None, "9" * 40: None}


def _tiny_setup(doc=None) -> Callable[[Path], None]:
    return lambda f: _tiny(f, doc)


def _bamba4(**fields) -> dict:
    return {**_bamba()["doc"], **fields}


def _granite_hybrid4(**fields) -> dict:
    """Granite 4.0-H's layout at TINY's size: layer_types over 4 layers, Mamba-2 mixers of 16 heads x 64 (expand 2 x
    512), a shared MLP, no routed experts."""
    doc = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 512,
           "intermediate_size": 1024, "shared_intermediate_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "num_local_experts": 0,
           "layer_types": ["mamba", "attention", "mamba", "mamba"], "mamba_n_heads": 16, "mamba_d_head": 64,
           "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2,
           "tie_word_embeddings": True, "torch_dtype": "bfloat16", "max_position_embeddings": 4096}
    return {**doc, **fields}


def closing4_inputs() -> Iterator[Input]:
    models = (("tiny", ["-m", "c"], None), ("gpt-oss-20b", ["-m", "gpt-oss-20b"], None),
              ("llama-3-8b", ["-m", "llama-3-8b"], None), ("tiny fp8 block", ["-m", "c"], TINY_FP8_BLOCK))
    # -q / --weight-dtype with each --engine: the step's weights in each format on TINY equal capacity's (no engine),
    # hand-derived in TINY_BY_FORMAT; capacity --engine takes or refuses them, never a traceback
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        for fmt in ("bf16", "fp8", "fp8_block", "mxfp4", "nvfp4", "int4_g128"):
            yield Input("closing4", f"step --engine {engine} --weight-dtype {fmt}: TINY by hand", check=lambda f,
                        e=engine, w=fmt: _figure3(f, ["report", "--phase", "step", "-m", "c", "-g", "h200-sxm",
                                                      "--engine", e, "--weight-dtype", w, "-f", "json"],
                                                  [("weight_bytes_per_gpu", TINY_BY_FORMAT[w], f"TINY in {w}")]))
        for name in ("-q", "--weight-dtype"):
            for fmt in ("fp8", "mxfp4", "awq", "xyz"):
                yield cli("closing4", ["capacity", "-m", "c", "-g", "h200-sxm", "--engine", engine, name, fmt, "-f",
                                       "json"], idents=[name, fmt, "--engine", "--quantization", "checkpoint"],
                          json_out=True, setup=_tiny_setup(), label=f"capacity --engine {engine} {name} {fmt}")
    # both names at once: the same value is one setting; two values are refused naming both
    for a, b, same in (("fp8", "fp8", True), ("nvfp4", "nvfp4", True), ("fp8", "nvfp4", False),
                       ("auto", "bf16", False), ("mxfp4", "mxfp4", True)):
        for cmd in (["capacity"], ["report", "--phase", "step"], ["explain", "--phase", "step"], ["serve"]):
            yield cli("closing4", [*cmd, "-m", "c", "-g", "h200-sxm", "-q", a, "--weight-dtype", b],
                      idents=["--weight-dtype", "--quantization", a, b], expect=None if same else 2,
                      setup=_tiny_setup(), label=f"{' '.join(cmd)} -q {a} --weight-dtype {b}")
    # serve with every --weight-dtype format on each checkpoint
    for label, model, doc in models:
        for fmt in WEIGHT_FORMATS4:
            yield cli("closing4", ["serve", *model, "-g", "h200-sxm", "--weight-dtype", fmt, "-f", "json"],
                      idents=["--weight-dtype", fmt or "''", "--quantization", "checkpoint"], json_out=True,
                      expect=2 if fmt in ("nope", "") else None, setup=_tiny_setup(doc) if model[1] == "c" else None,
                      label=f"serve {label} --weight-dtype {fmt!r}")
    # explain --phase step with each new option
    for extra in (["--weight-dtype", "nvfp4"], ["-q", "fp8"], ["--engine", "sglang"], ["--engine", "tensorrt-llm",
                  "--engine-version", "0.9"], ["--engine-version", "v1"], ["--engine", "sglang", "--engine-version",
                  "v1"], ["--gemm-dtype", "fp8"], ["--gemm-dtype", "fp8", "--weight-dtype", "bf16"],
                  ["--weight-dtype", "mxfp4", "--engine", "sglang"], ["--kv-cache-dtype", "fp8", "-q", "fp8"],
                  ["--step", "prefill", "--weight-dtype", "int4_g128"], ["--pp", "2", "--weight-dtype", "fp8_block"],
                  ["--speculative-config", '{"method":"eagle","num_speculative_tokens":2}', "--weight-dtype", "fp8"],
                  ["--enforce-eager", "-q", "auto"], ["--engine-version", "0.9.0+cu121", "--weight-dtype", "fp8"]):
        for label, model, doc in models[:3]:
            yield cli("closing4", ["explain", "--phase", "step", *model, "-g", "h200-sxm", *extra],
                      idents=[w for w in extra if w.startswith("-")] + [w for w in extra if not w.startswith("-")],
                      setup=_tiny_setup(doc) if model[1] == "c" else None,
                      label=f"explain --phase step {label} {' '.join(extra)[:70]}")
    # --engine-version's odd spellings on serve
    for version, expect in ODD_RELEASES4.items():
        for engine in ("vllm", "sglang"):
            yield cli("closing4", ["serve", "--engine", engine, "--engine-version", version, "-f", "json"],
                      idents=["--engine-version", version.strip() or "''", "--engine"], json_out=True,
                      expect=expect, label=f"serve --engine {engine} --engine-version {version!r}")
    # plot commands with --data in odd cases
    for args, outputs, expect in (
            (["plot", "serve", "-o", "s.png", "--data", "s.csv"], ["s.png", "s.csv"], 0),
            (["plot", "serve", "-o", "s.png", "--data", "S.JSON"], ["s.png", "S.JSON"], 0),
            (["plot", "capacity", "-o", "c.png", "--data", "c.png"], [], 2),
            (["plot", "capacity", "-o", "c.png", "--data", "no/such/dir/c.csv"], [], 2),
            (["plot", "capacity", "-o", "c.png", "--data", "."], [], 2),
            (["plot", "capacity", "-o", "c.png", "--data", "-"], [], 2),
            (["plot", "capacity", "-o", "c.png", "--data", ".csv"], [".csv"] + ["c.png"], None),
            (["plot", "capacity", "-o", "x.csv", "--data", "x.csv"], [], 2),
            (["plot", "memory", "-o", "m.svg", "--data", "m.json", "--data", "n.json"], ["m.svg", "m.json", "n.json"],
             None),
            (["plot", "roofline", "-o", "r.pdf", "--data", "r.csv"], ["r.pdf", "r.csv"], 0),
            (["plot", "decode", "-o", "d.png", "--data", "d.csv"], [], 2),       # d.csv: a folder (setup)
            (["plot", "time", "-o", "t.png", "--data", "t.txt"], [], 2),
            (["plot", "serve", "-m", "c", "-o", "s.png", "--data", "c/config.json"], [], 2),   # -m c's own file
            (["plot", "capacity", "-m", "c", "-o", "c.png", "--data", "c.json", "--weight-dtype", "nvfp4"],
             ["c.png", "c.json"], None),
            (["plot", "serve", "-m", "c", "-o", "s.png", "--data", "s.json", "--weight-dtype", "mxfp4"],
             ["s.png", "s.json"], None),
            (["plot", "serve", "-m", "c", "-o", "s.png", "--data", "s.json", "-q", "awq"], [], 2),
            (["plot", "serve", "--engine-version", "0.9;1", "-o", "s.png", "--data", "s.csv"], [], 2)):
        needs_tiny = "c" in args[args.index("-m") + 1:args.index("-m") + 2] if "-m" in args else False
        data = args[len(args) - 1 - args[::-1].index("--data") + 1]
        yield cli("closing4", args, idents=["--data", data, "-o", "--output", "config.json", "-q", "--quantization",
                                            "--weight-dtype", "--engine-version"], expect=expect, outputs=outputs,
                  setup=_tiny_setup() if needs_tiny else (lambda f: (f / "d.csv").mkdir()) if "d.csv" in args
                  else None, label=" ".join(args))
    # --data onto an input under another spelling, or onto --measurements' file; release digits outside ASCII
    measured = fs.ROOT / "measurements" / "h200-flash-hopper.csv"
    for args, setup in ((["plot", "capacity", "-m", "c", "-o", "c.png", "--data", "./c/../c/config.json"], _tiny_setup()),
                        (["plot", "capacity", "-m", "c", "-o", "c.png", "--data", "link.json"],
                         lambda f: (_tiny(f), (f / "link.json").symlink_to(f / "c" / "config.json"))),
                        (["plot", "roofline", "-g", "h200-sxm", "--measurements", "m.csv", "-o", "r.png", "--data",
                          "m.csv"], lambda f: (f / "m.csv").write_bytes(measured.read_bytes()))):
        yield cli("closing4", args, idents=["--data", args[-1], "input"], expect=2, setup=setup, label=" ".join(args))
    for version in ("\u0660.\u0669", "\u2070.\u2079", "0.\uff19.0"):
        for cmd in (["serve", "--engine", "vllm"], ["report", "--phase", "step", "--engine", "tensorrt-llm"]):
            yield cli("closing4", [*cmd, "--engine-version", version, "-f", "json"], idents=["--engine-version", version],
                      expect=2, json_out=True, label=f"{' '.join(cmd)} --engine-version {version!r}")
    # Mamba-family config.json files that contradict themselves
    jamba = _jamba()["doc"]
    for label, doc, expect, idents in (
            ("Jamba expert offset past its period", {**jamba, "expert_layer_offset": 2}, 2, ["expert_layer_offset"]),
            ("Jamba top-k above experts", {**jamba, "num_experts_per_tok": 32}, 2, ["num_experts_per_tok"]),
            ("Jamba KV heads above heads", {**jamba, "num_key_value_heads": 64}, 2, ["num_key_value_heads"]),
            ("Jamba heads not dividing hidden", {**jamba, "num_attention_heads": 48}, 2,
             ["num_attention_heads", "hidden_size", "head_dim"]),
            ("Jamba mamba_dt_rank 0", {**jamba, "mamba_dt_rank": 0}, 2, ["mamba_dt_rank"]),
            ("Jamba num_hidden_layers 0", {**jamba, "num_hidden_layers": 0}, 2, ["num_hidden_layers"]),
            ("Jamba no attention layer (period past layers)", {**jamba, "attn_layer_period": 64, "attn_layer_offset":
                                                               40}, 2, ["num_hidden_layers", "attention"]),
            ("Jamba layer_types beside its period", {**jamba, "layer_types": ["full_attention"] * 32}, None, []),
            ("Bamba heads x head_dim not expand x hidden", _bamba4(mamba_d_head=32), 2, ["mamba_d_head"]),
            ("Bamba d_head auto, heads not dividing", _bamba4(mamba_d_head="auto", mamba_n_heads=96), 2,
             ["mamba_d_head", "mamba_n_heads"]),
            ("Bamba groups not dividing heads", _bamba4(mamba_n_groups=5), 2, ["mamba_n_groups"]),
            ("Bamba index a float", _bamba4(attn_layer_indices=[9.0]), None, ["attn_layer_indices"]),   # 9 in [9.0]
            ("Bamba index a bool", _bamba4(attn_layer_indices=[True]), 2, ["attn_layer_indices"]),
            ("Bamba index null", _bamba4(attn_layer_indices=None), 2, ["attn_layer_indices", "attention",
                                                                       "num_hidden_layers"]),
            ("Bamba d_conv 0", _bamba4(mamba_d_conv=0), 2, ["mamba_d_conv"]),
            ("Bamba d_state huge", _bamba4(mamba_d_state=10 ** 30), None, ["mamba_d_state"]),
            ("Granite-H layer_types one short", _granite_hybrid4(layer_types=["mamba", "attention", "mamba"]), 2,
             ["layer_types"]),
            ("Granite-H layer_types unknown", _granite_hybrid4(layer_types=["mamba", "attention", "mamba", "moe"]), 2,
             ["layer_types"]),
            ("Granite-H all Mamba", _granite_hybrid4(layer_types=["mamba"] * 4), 2, ["num_hidden_layers",
                                                                                   "attention"]),
            ("Granite-H no layer_types", {k: v for k, v in _granite_hybrid4().items() if k != "layer_types"}, 2,
             ["layer_types"]),
            ("Granite-H experts negative", _granite_hybrid4(num_local_experts=-1), 2, ["num_local_experts"]),
            ("Granite-H experts without top-k", _granite_hybrid4(num_local_experts=8), None, ["num_experts_per_tok"]),
            ("Granite-H top-k above experts", _granite_hybrid4(num_local_experts=8, num_experts_per_tok=9), 2,
             ["num_experts_per_tok"]),
            ("Granite-H heads x d_head not expand x hidden", _granite_hybrid4(mamba_n_heads=12), 2,
             ["mamba_d_head", "mamba_n_heads"]),
            ("NemotronH", {**_bamba4(), "architectures": ["NemotronHForCausalLM"]}, 2, ["architectures"]),
            ("FalconH1", {**_bamba4(), "architectures": ["FalconH1ForCausalLM"]}, 2, ["architectures"])):
        for cmd in (["capacity", "-f", "json"], ["report", "--phase", "step", "-f", "json"]):
            # the step refuses a Mamba layer by its kind once the file reads (hybrid3's step rows say so)
            yield cli("closing4", [*cmd[:-2], "-m", "c", "-g", "h200-sxm", *cmd[-2:]],
                      idents=[*idents, "config.json", *(["Mamba"] if cmd[0] == "report" else [])],
                      expect=expect, json_out=True, setup=_tiny_setup(doc), label=f"{label}: {cmd[0]}")
    # a Bamba's attention indices in any order are the same layers (KV by hand: 3 layers x 2 x 8 x 128 x 2)
    for order in ([27, 9, 18], [18, 27, 9], [9, 18, 27, 18]):
        yield Input("closing4", f"Bamba attn_layer_indices {order}", check=lambda f, o=order: _figure3(
            f, ["capacity", "-m", "c", "-g", "h200-sxm", "-f", "json"],
            [("kv_bytes_per_token", 3 * 2 * 8 * 128 * 2, "3 attention layers x 2 x 8 KV heads x 128 x 2")],
            doc=_bamba4(attn_layer_indices=o)))
    # Granite-H at TINY's size: one attention layer, KV 2 x 2 x 64 x 2 a token; Mamba-2 state as _bamba's formula
    gh = _granite_hybrid4()
    state = ((4 - 1) * (1024 + 2 * 1 * 128) + 16 * 64 * 128) * 2
    yield Input("closing4", "Granite-H TINY KV and state by hand", check=lambda f: _hybrid_check(
        f, {"doc": gh, "kv_token": 1 * 2 * 2 * 64 * 2, "state": state}, 1, False))


# closing5 (after D27-D28): D28's siblings, every writer pointed at its own inputs; D27's siblings, non-ASCII digits
# and signs in every numeric option class
MEASURED5 = "h200-mla-seesaw.csv"                   # a campaign validate and fit read (h200-sxm)
COLLECTIVES5 = "h200x2-collectives.csv"            # a collectives campaign calibrate --collectives --from reads
ENGINE_LOG5 = "vllm-llama-3-8b-h100-tp1.log"       # llama-3-8b on h100-sxm (cases.yaml)


def _inputs5(folder: Path) -> None:
    """TINY in c/, h200-sxm's YAML as g.yaml and as g.json (YAML text under a .json name), a campaign m.csv, a
    collectives campaign coll.csv, an engine log e.log, and sub/ for ./sub/../ spellings."""
    from rooflab.load import spec_path

    _tiny(folder)
    gpu = spec_path("hardware", "GPU", "h200-sxm").read_text()
    (folder / "g.yaml").write_text(gpu)
    (folder / "g.json").write_text(gpu)
    (folder / "m.csv").write_bytes((fs.ROOT / "measurements" / MEASURED5).read_bytes())
    (folder / "coll.csv").write_bytes((fs.ROOT / "measurements" / COLLECTIVES5).read_bytes())
    (folder / "e.log").write_bytes((fs.ROOT / "tests" / "data" / "engine_logs" / ENGINE_LOG5).read_bytes())
    (folder / "sub").mkdir()


def _spelled5(folder: Path, name: str, how: str) -> str:
    """`name` (an input in `folder`) as the output's spelling `how`: itself, ./name, sub/../name, the absolute path,
    a symlink to it or a hard link to it (the links made here)."""
    if how == "symlink":
        (folder / f"ln-{name.replace('/', '-')}").symlink_to(folder / name)
        return f"ln-{name.replace('/', '-')}"
    if how == "hardlink":
        os.link(folder / name, folder / f"hl-{name.replace('/', '-')}")
        return f"hl-{name.replace('/', '-')}"
    return {"name": name, "dot": f"./{name}", "up": f"sub/../{name}", "absolute": str(folder / name)}[how]


def _onto_input5(folder: Path, args: list[str], option: str, target: str, how: str) -> list[str]:
    """`args` with `option` pointed at input `target` spelled `how`: exit 2 naming the option, every file as it was
    (a hard link's name too: an atomic rename onto it would part it from the input), nothing written."""
    _inputs5(folder)
    spelled = _spelled5(folder, target, how)
    cmd = [*args, option, spelled]
    case = fs.Case(cmd, [f"{option} ", "--output"], 2, [], [], False, False)    # '-o ' (a bare '-o' counts quoted)
    before = fs.snapshot(folder)
    out = fs.invoke(cmd, folder)
    problems = fs.problems_of(case, out, before, fs.snapshot(folder), folder, {})
    return [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]


#: Each writer with the inputs it reads: (command before the output option, the output option, the inputs).
WRITERS5 = (
    (["validate", "m.csv"], "-o", ["m.csv"]),
    (["validate", "m.csv", "--fit-from", "coll.csv"], "-o", ["m.csv", "coll.csv"]),
    (["fit", "m.csv"], "-o", ["m.csv"]),
    (["calibrate", "--collectives", "--from", "coll.csv"], "-o", ["coll.csv"]),
    (["calibrate", "--collectives", "--from", "coll.csv", "-g", "./g.yaml"], "-o", ["coll.csv", "g.yaml"]),
    (["plot", "roofline", "-m", "c", "-g", "./g.json", "-o", "r.png"], "--data", ["c/config.json", "g.json"]),
    (["plot", "memory", "-m", "c", "-g", "./g.json", "-o", "m.png"], "--data", ["c/config.json", "g.json"]),
    (["plot", "decode", "-m", "./c", "-o", "d.png"], "--data", ["c/config.json"]),
    (["plot", "serve", "-m", "c", "-g", "./g.json", "-o", "s.png"], "--data", ["c/config.json", "g.json"]),
    (["plot", "validation", "m.csv", "-o", "v.png"], "--data", ["m.csv"]),
    (["plot", "roofline", "-g", "h200-sxm", "--measurements", "./m.csv", "-o", "r.png"], "--data", ["m.csv"]),
)
SPELLINGS5 = ("name", "dot", "up", "absolute", "symlink", "hardlink")


def _digits5(ascii_text: str) -> dict[str, Optional[str]]:
    """Hostile spellings of `ascii_text`, each with the ASCII text int() / float() read it as: Nd digits (fullwidth,
    Arabic-Indic, Devanagari, one fullwidth digit among ASCII ones) and a leading NBSP read as the ASCII digits;
    superscripts, U+2212 and an NBSP between two digits as nothing (None: int() and float() refuse them)."""
    def tr(base: int) -> str:
        return "".join(chr(base + int(ch)) if ch.isdigit() else ch for ch in ascii_text)
    sup = str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
    first = next(i for i, ch in enumerate(ascii_text) if ch.isdigit())
    out = {tr(0xFF10): ascii_text, tr(0x0660): ascii_text, tr(0x0966): ascii_text,
           ascii_text[:first] + chr(0xFF10 + int(ascii_text[first])) + ascii_text[first + 1:]: ascii_text,
           ascii_text.translate(sup): None, "\u2212" + ascii_text: None, "\u00a0" + ascii_text: ascii_text}
    inside = [i for i in range(1, len(ascii_text)) if ascii_text[i - 1].isdigit() and ascii_text[i].isdigit()]
    if inside:              # between two digits ('8,\u00a016' is a list item int() strips: read as 8,16)
        out[ascii_text[:inside[0]] + "\u00a0" + ascii_text[inside[0]:]] = None
    if "," in ascii_text:
        out[ascii_text.replace(",", ",\u00a0")] = ascii_text
    return out


#: (command, option, an ASCII value it takes): counts, sizes, fractions, lists, durations, --what-if, JSON, releases.
NUMERIC5 = (
    (["report", "-m", "llama-3-8b", "-g", "h200-sxm"], "-T", "4096"),
    (["report", "-m", "llama-3-8b", "-g", "h200-sxm"], "--batch", "4"),
    (["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm"], "-tp", "2"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm"], "--page-size", "32"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "vllm"], "--cuda-visible-memory", "79GiB"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "vllm"], "--memory-in-use", "2GiB"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm"], "--gpu-memory-utilization", "0.85"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm"], "--activation-reserve-gib", "2.5"),
    (["serve", "-m", "llama-3-8b", "-g", "h200-sxm"], "--random-range-ratio", "0.5"),
    (["serve", "-m", "llama-3-8b", "-g", "h200-sxm"], "--max-concurrency", "8,16"),
    (["serve", "-m", "llama-3-8b", "-g", "h200-sxm", "--max-concurrency", "8"], "--ttft-slo", "200ms"),
    (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--pp", "2"], "--pp-layer-partition", "12,20"),
    (["capacity", "--engine-log", "e.log", "-m", "llama-3-8b", "-g", "h100-sxm"], "--what-if",
     "gpu-memory-utilization=0.8"),
    (["capacity", "--engine-log", "e.log", "-m", "llama-3-8b", "-g", "h100-sxm"], "--what-if", "max-model-len=4096"),
    (["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm"], "--speculative-config",
     '{"method":"ngram","num_speculative_tokens":"3"}'),
    (["serve", "--engine", "vllm", "-m", "llama-3-8b", "-g", "h200-sxm"], "--engine-version", "0.10.1"),
    (["capacity", "--engine", "vllm", "-m", "llama-3-8b", "-g", "h200-sxm"], "--engine-version", "0.6.4"),
)


def _echoed5(doc, value: str, ascii_value: str):
    """`doc` with the user's spelling, where a string echoes it (capacity's what_if list), as the ASCII one: an
    echo is no reading."""
    if isinstance(doc, dict):
        return {k: _echoed5(v, value, ascii_value) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_echoed5(v, value, ascii_value) for v in doc]
    return doc.replace(value, ascii_value) if isinstance(doc, str) else doc


def _reading5(folder: Path, cmd: list[str], option: str, value: str, ascii_value: Optional[str]) -> list[str]:
    """`option value` refused naming the option, or read as `ascii_value` is (the same JSON); where int() and float()
    refuse the spelling (`ascii_value` None), refused."""
    _inputs5(folder)
    args = [*cmd, option, value, "-f", "json"]
    case = fs.Case(args, [option], None, [], [], True, False)
    before = fs.snapshot(folder)
    out = fs.invoke(args, folder)
    problems = fs.problems_of(case, out, before, fs.snapshot(folder), folder, {})
    if not problems and out.code == 0:
        if ascii_value is None:
            problems.append(f"{option} {value!r} taken, where int() / float() refuse it")
        else:
            plain = fs.invoke([*cmd, option, ascii_value, "-f", "json"], folder)
            if plain.code != 0:
                problems.append(f"{option} {value!r} taken, but its ASCII spelling {ascii_value!r} exits {plain.code}")
            elif fs.strict_json(plain.stdout) != _echoed5(fs.strict_json(out.stdout), value, ascii_value):
                problems.append(f"{option} {value!r} read otherwise than {ascii_value!r}")
    return [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]


def _chart_reading5(folder: Path, cmd: list[str], option: str, value: str, ascii_value: Optional[str]) -> list[str]:
    """A chart's list option: refused naming it, or its --data JSON the same as under the ASCII spelling."""
    args = [*cmd, option, value, "-o", "x.png", "--data", "x.json"]
    out = fs.invoke(args, folder)
    case = fs.Case(args, [option], None, [folder / "x.png", folder / "x.json"], [], False, False)
    problems = fs.problems_of(case, out, {}, fs.snapshot(folder), folder, {})
    if not problems and out.code == 0:
        if ascii_value is None:
            problems.append(f"{option} {value!r} taken, where int() refuses it")
        else:
            hostile_doc = fs.strict_json((folder / "x.json").read_text())
            plain = fs.invoke([*cmd, option, ascii_value, "-o", "y.png", "--data", "y.json"], folder)
            if plain.code != 0 or fs.strict_json((folder / "y.json").read_text()) != hostile_doc:
                problems.append(f"{option} {value!r} read otherwise than {ascii_value!r} (exit {plain.code})")
    return [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]


def closing5_inputs() -> Iterator[Input]:
    for args, option, inputs in WRITERS5:
        for target in inputs:
            for how in SPELLINGS5:
                yield Input("closing5", f"{' '.join(args)} {option} <{target} by {how}>", check=lambda f, a=args,
                            o=option, t=target, h=how: _onto_input5(f, a, o, t, h))
    # no -o: the target is ./<the spec's file name>, here -g's own YAML (plain calibrate refuses the same)
    yield cli("closing5", ["calibrate", "--collectives", "--from", "coll.csv", "-g", "./g.yaml"],
              idents=["--output", "g.yaml"], expect=2, setup=_inputs5,
              label="calibrate --collectives --from coll.csv -g ./g.yaml (no -o: ./g.yaml its default)")
    for cmd, option, plain in NUMERIC5:
        if "=" in plain:
            key, number = plain.split("=")
            values = {f"{key}={v}": (None if a is None else f"{key}={a}") for v, a in _digits5(number).items()}
        elif plain.startswith("{"):
            values = {plain.replace('"3"', f'"{v}"'): (None if a is None else plain) for v, a in _digits5("3").items()}
            values.update({plain.replace('"3"', v): None for v in ("\uff13", "\u2212" + "3", "\u00b3")})
        else:
            values = _digits5(plain)
        if option == "--engine-version":        # packaging.version reads ASCII digits only (D27): each refused
            values = {v: (a if a is not None and v.strip("\u00a0") == a else None) for v, a in values.items()}
        for value, ascii_value in values.items():
            yield Input("closing5", f"{' '.join(cmd)} {option} {value!r}", check=lambda f, c=cmd, o=option, v=value,
                        a=ascii_value: _reading5(f, c, o, v, a))
    for cmd in (["plot", "memory", "-m", "llama-3-8b", "-g", "h200-sxm"], ["plot", "time", "-m", "llama-3-8b"]):
        for value, ascii_value in _digits5("1024,4096").items():
            yield Input("closing5", f"{' '.join(cmd)} --lengths {value!r}", check=lambda f, c=cmd, v=value,
                        a=ascii_value: _chart_reading5(f, c, "--lengths", v, a))
    yield from _siblings5()


# closing5, a second tester's siblings: plot's image (-o) onto the chart's inputs through a link; the GPU YAML a
# campaign names (gpu_spec: ./g.yaml, as `rooflab bench -g ./g.yaml` records it) as validate's, fit's and plot
# validation's input; $COLUMNS in non-ASCII digits; float options' non-ASCII separators; int<b>_g<group> digits

#: Each chart with the inputs it reads (plot's -o takes .png / .svg / .pdf only: an input is reached by a link).
PLOTS5 = (
    (["plot", "roofline", "-m", "c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "memory", "-m", "c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "time", "-m", "c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "decode", "-m", "./c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "capacity", "-m", "c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "serve", "-m", "c", "-g", "./g.json"], ["c/config.json", "g.json"]),
    (["plot", "validation", "m.csv"], ["m.csv"]),
    (["plot", "roofline", "-g", "h200-sxm", "--measurements", "./m.csv"], ["m.csv"]),
)


def _linked5(folder: Path, name: str, how: str, suffix: str) -> str:
    """A symlink or a hard link to input `name`, named with `suffix` (an image's or --data's extension)."""
    link = f"{'ln' if how == 'symlink' else 'hl'}-{name.replace('/', '-')}{suffix}"
    if how == "symlink":
        (folder / link).symlink_to(folder / name)
    else:
        os.link(folder / name, folder / link)
    return link


def _refused5(folder: Path, cmd: list[str], idents: list[str]) -> list[str]:
    """`cmd` (its files already in `folder`): exit 2 naming one of `idents`, every file as it was, nothing written."""
    case = fs.Case(cmd, idents, 2, [], [], False, False)
    before = fs.snapshot(folder)
    out = fs.invoke(cmd, folder)
    problems = fs.problems_of(case, out, before, fs.snapshot(folder), folder, {})
    return [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]


def _image_onto5(folder: Path, args: list[str], target: str, how: str) -> list[str]:
    """A chart's -o onto input `target` through a link named x.png: refused naming -o, the input unchanged."""
    _inputs5(folder)
    return _refused5(folder, [*args, "-o", _linked5(folder, target, how, ".png")], ["-o ", "--output"])


def _campaign5(folder: Path) -> None:
    """_inputs5, and mg.csv: m.csv recorded against ./g.yaml (the file beside it) where m.csv names h200-sxm."""
    _inputs5(folder)
    text = (folder / "m.csv").read_text()
    assert "# gpu_spec: h200-sxm\n" in text
    (folder / "mg.csv").write_text(text.replace("# gpu_spec: h200-sxm\n", "# gpu_spec: ./g.yaml\n"))


def _onto_campaign_gpu5(folder: Path, args: list[str], option: str, how: str, suffix: str = "") -> list[str]:
    """`args` with `option` onto g.yaml, the GPU YAML campaign mg.csv names, spelled `how` (a link named with
    `suffix` where the option takes an extension); with no option, the command's default target: refused."""
    _campaign5(folder)
    if option is None:
        return _refused5(folder, args, ["--output", "g.yaml"])
    spelled = _linked5(folder, "g.yaml", how, suffix) if how in ("symlink", "hardlink") else \
        _spelled5(folder, "g.yaml", how)
    return _refused5(folder, [*args, option, spelled], [f"{option} ", "--output"])


def _columns5(folder: Path, columns: str, reads_as: Optional[str]) -> list[str]:
    """A table under COLUMNS=`columns`: exit 0 and the table as under COLUMNS=`reads_as` (None: as under a COLUMNS
    that is no number, 'abc', which terminal_width ignores); never an internal error."""
    args = ["report", "-m", "llama-3-8b", "-g", "h200-sxm"]
    out = fs.invoke(args, folder, env={"COLUMNS": columns})
    problems = fs.problems_of(fs.Case(args, ["COLUMNS"], 0, [], [], False, True), out, {}, {}, folder, {})
    if not problems:
        plain = fs.invoke(args, folder, env={"COLUMNS": reads_as if reads_as is not None else "abc"})
        if plain.stdout != out.stdout:
            problems.append(f"COLUMNS={columns!r} read otherwise than {reads_as!r}")
    return [p + " | " + out.describe().replace("\n", " / ")[:400] for p in problems]


#: float options' spellings float() refuses (a fullwidth full stop, the Arabic decimal separator, a zero-width space)
#: and takes (an em space around it, an underscore between digits, fullwidth digits with an exponent), each with
#: the ASCII text float() reads it as (None: refused).
FLOATS5 = {"0\uff0e85": None, "\u0660\u066b\u0668\u0665": None, "0.8\u200b5": None, "\u20030.85\u2003": "0.85",
           "0.8_5": "0.85", "\uff18\uff15e-2": "0.85"}


def _siblings5() -> Iterator[Input]:
    for args, inputs in PLOTS5:
        for target in inputs:
            for how in ("symlink", "hardlink"):
                yield Input("closing5", f"{' '.join(args)} -o <{target} by {how} as .png>",
                            check=lambda f, a=args, t=target, h=how: _image_onto5(f, a, t, h))
    for args, option, suffix in ((["validate", "mg.csv"], "-o", ""), (["fit", "mg.csv"], "-o", ""),
                                 (["fit", "mg.csv", "-g", "./g.yaml"], "-o", ""),
                                 (["plot", "validation", "mg.csv", "-o", "v.png"], "--data", ".json")):
        for how in (("symlink", "hardlink") if suffix else SPELLINGS5):
            yield Input("closing5", f"{' '.join(args)} {option} <g.yaml, mg.csv's gpu_spec, by {how}>",
                        check=lambda f, a=args, o=option, h=how, s=suffix: _onto_campaign_gpu5(f, a, o, h, s))
    for args in (["fit", "mg.csv"], ["fit", "mg.csv", "-g", "./g.yaml"]):
        yield Input("closing5", f"{' '.join(args)} (no -o: ./g.yaml, mg.csv's gpu_spec, its default)",
                    check=lambda f, a=args: _onto_campaign_gpu5(f, a, None, "name"))
    for columns, reads_as in (("\uff18\uff10", "80"), ("\u0668\u0660", "80"), ("\u00b2", None),
                              ("\u00b9\u2070\u2070", None), ("\u2212" + "80", None), ("8\u00a00", None)):
        yield Input("closing5", f"COLUMNS={columns!r} report -m llama-3-8b -g h200-sxm",
                    check=lambda f, c=columns, r=reads_as: _columns5(f, c, r))
    for value, ascii_value in FLOATS5.items():
        for cmd, option in ((["capacity", "-m", "llama-3-8b", "-g", "h200-sxm"], "--gpu-memory-utilization"),
                            (["serve", "-m", "llama-3-8b", "-g", "h200-sxm"], "--random-range-ratio")):
            yield Input("closing5", f"{' '.join(cmd)} {option} {value!r}", check=lambda f, c=cmd, o=option,
                        v=value, a=ascii_value: _reading5(f, c, o, v, a))
    for value, ascii_value in {**{f"int4_g{v}": (None if a is None else f"int4_g{a}")
                                  for v, a in _digits5("128").items()}}.items():
        for cmd in (["capacity", "-m", "llama-3-8b", "-g", "h200-sxm"],
                    ["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm"]):
            yield Input("closing5", f"{' '.join(cmd)} --weight-dtype {value!r}", check=lambda f, c=cmd, v=value,
                        a=ascii_value: _reading5(f, c, "--weight-dtype", v, a))


# --- running ----------------------------------------------------------------------------------------------------

# session12: what session 12 changed. --engine-version as a release or a label (f713b89, eddc435, df89b32, 6443df1),
# SGLang's DP-attention weight splits by release (f5dd6ee, cda3c0c) on capacity and the step, the step's fp8 GEMM fit
# (ad80b94) and Ctrl-C once a command's first file is in place (fd0d215).

#: --engine-version spellings: releases in and out of range, prereleases, local tags, case, whitespace, non-ASCII.
VERSIONS12 = ["0.0.1", "0.30", "99.0", "1.0", "0.11.0rc1", "0.8.5.dev1", "0.7.4.dev0+g1234", "0.10.1+cu128",
              " 0.10.1 ", "\t0.10.1\n", "", " ", "V0.8.4", "V0.10.1", "V99.0", "V0.4.6", "V0.5.3", "V1", "v1 (0.11+)",
              "0.8", "0.9", "0.10", "0.6", "0.2", "0.2.4", "0.6.4.post1", "0.4.6.post2", "0.5.2", "0.5.3", "0.5.10",
              "0.5.11", "0.5", "0.4", "v0.5", "sglang-v0.5", "vllm-v1", "vllm-0.10.1", "sglang-0.4.6", "0.10.1.1",
              "0.10." + "9" * 58, "0.10.99999", "0.9.1rc1", "0.8.0rc1", "0.20.99", "0.21", "0.6.3.post1",
              "\uff10.10.1", "0\u0660.10", "\u22120.10.1", "+0.10.1", "-0.10.1", "0.10.1\u00a0", "\u00a0v1", "v0.10.1a",
              "0.10.1-post1", "0.10.1rc", "0x0.10", "0_10_1", "0.10.1 ; rm", "1e3", "nan", "0.10.1" * 11, "v" * 70,
              "0.8.4", "v0.8.4", "0.7.3", "0.6.5", "0.4.3.post2", "0.1.17", "0.1.16", "0.4.5", "0.4.4"]
_RELEASE12 = re.compile(r"(?i)\s*v?[0-9]+(\.[0-9]+)+.*")


def _version12(folder: Path, engine: str, value: str) -> list[str]:
    """capacity --engine E --engine-version V: every invariant; on exit 0 the engine is E's, a release spelled with
    a capital V reads as the same release with a small one, and a refusal names --engine-version, not an API field."""
    base = ["capacity", "-m", "qwen3-30b-a3b", "-g", "h200-sxm", "--engine", engine, "-f", "json"]
    doc, problems, out = _run3(folder, base + ["--engine-version", value], idents=["--engine-version"])
    if problems:
        return problems
    if out.code == 2 and "EngineSettings" in out.stderr:
        return [f"--engine-version {value!r} refused naming an API field: {out.stderr.strip()[:200]}"]
    if doc is None:
        return []
    if doc["engine"] != engine:
        return [f"--engine {engine} --engine-version {value!r} planned as {doc['engine']} ({doc['accounting']}, "
                f"{doc['releases']})"]
    if _RELEASE12.fullmatch(value) and value.strip()[:1] == "V":
        small, p2, o2 = _run3(folder, base + ["--engine-version", "v" + value.strip()[1:]])
        if o2.code != 0 or (small["accounting"], small["releases"]) != (doc["accounting"], doc["releases"]):
            return [f"--engine-version {value!r} reads as {doc['accounting']} ({doc['releases']}); 'v{value.strip()[1:]}'"
                    f" as {small['accounting'] + ' (' + small['releases'] + ')' if small else 'exit ' + str(o2.code)}"]
    return []


#: A label and the release the docs say it stands for (engines.vocab.label_release: the accounting's newest, but
#: vllm-v1's v0.19.x and sglang-v0.4's v0.4.5, so that a label keeps the figures it has always had; D37 fixed).
LABELS12 = [("vllm", "v0.2", "0.6.3"), ("vllm", "v0.6.4", "0.6.4"), ("vllm", "v0.6.4", "0.6.4.post1"),
            ("vllm", "v0.8", "0.9.0.1"), ("vllm", "v0.8", "0.9.0"), ("vllm", "v1", "0.19.1"), ("vllm", "v1", "0.19"),
            ("sglang", "v0.4", "0.4.5"), ("sglang", "v0.5", "0.5.10")]


def _label12(folder: Path, model: list[str], engine: str, label: str, release: str) -> list[str]:
    """The label's figures are its release's (label_release; every term, the kv_cache_bytes)."""
    base = ["capacity", *model, "-g", "h200-sxm", "--engine", engine, "-f", "json"]
    a, p1, _ = _run3(folder, base + ["--engine-version", label], expect=0)
    b, p2, _ = _run3(folder, base + ["--engine-version", release], expect=0)
    if p1 or p2:
        return (p1 + p2)[:1]
    ta = {t["name"]: t["bytes"] for t in a["terms"]}
    tb = {t["name"]: t["bytes"] for t in b["terms"]}
    if (a["kv_cache_bytes"], ta, a["utilization"]) != (b["kv_cache_bytes"], tb, b["utilization"]):
        diff = {k: (ta.get(k), tb.get(k)) for k in set(ta) | set(tb) if ta.get(k) != tb.get(k)}
        return [f"{engine} label {label}: KV {a['kv_cache_bytes']:,} (utilisation {a['utilization']}), release {release}:"
                f" KV {b['kv_cache_bytes']:,} (utilisation {b['utilization']}); terms differ {diff}"]
    return []


HELDOUT4_V0_11_2 = ROOT / "tests/data/engine_logs/heldout4/vllm-v1-llama-3-8b-instruct-h200-maxlen1024.log"


def _log12(folder: Path, extra: list[str], why: str) -> list[str]:
    """A V1 v0.11.2 log with an option that contradicts it: refused naming the option (as 0.10.1 is)."""
    args = ["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine-log", str(HELDOUT4_V0_11_2), "-f", "json"]
    doc, problems, out = _run3(folder, args + extra, idents=[extra[0]])
    if problems:
        return problems
    if out.code == 0:
        return [f"{' '.join(extra)} with a V1 v0.11.2 log: exit 0 as {doc['accounting']} ({doc['releases']}); {why}"]
    return []


def _step_weights12(folder: Path, model: str, tp: int, dp: int, release: str, ep: int = 1) -> list[str]:
    """report --phase step --engine sglang --engine-version R under DP attention: its weights per GPU are
    capacity.gpu_weight_bytes with weight_split.dp_attention_splits at R (the one rule capacity --engine uses), and
    it refuses what capacity --engine refuses."""
    from rooflab.capacity import gpu_weight_bytes
    from rooflab.capacity.weight_split import dp_attention_splits
    from rooflab.load import load_model

    dep = ["-tp", str(tp), "--enable-dp-attention", "--dp", str(dp)] + (["--ep", str(ep)] if ep > 1 else [])
    cap, p1, o1 = _run3(folder, ["capacity", "-m", model, "-g", "h200-sxm", "--engine", "sglang", "--engine-version",
                                 release, *dep, "-f", "json"])
    step, p2, o2 = _run3(folder, ["report", "--phase", "step", "-m", model, "-g", "h200-sxm", "-b", "8", "-L", "1024",
                                  "--engine", "sglang", "--engine-version", release, *dep, "-f", "json"])
    if p1 or p2:
        return (p1 + p2)[:1]
    if (o1.code == 2) != (o2.code == 2):
        return [f"capacity exit {o1.code}, step exit {o2.code} at SGLang {release} TP {tp} DP {dp}: "
                f"{(o1.stderr or o2.stderr).strip()[:200]}"]
    if o1.code or o2.code:
        return []
    r = tuple(int(n) for n in release.split("."))
    expect = gpu_weight_bytes(load_model(model), None, tp, ep, dp, None, dp_attention_splits(tp, dp, r))
    got = int(step["weight_bytes_per_gpu"])
    if got != expect:
        return [f"step weights {got:,} B a GPU at SGLang {release} TP {tp} DP {dp}; capacity's rule at that release "
                f"{expect:,} ({dp_attention_splits(tp, dp, r)})"]
    return []


def _dp_hand12(folder: Path) -> list[str]:
    """Three hand figures. DeepSeek-V3 TP 8 DP 8 (SGLang): v0.4.4 keeps the lm_head whole, v0.4.5 splits it 8 ways:
    129,280 x 7,168 x 2 B x 7/8 x (671e9 published / derived parameters). DP 2: v0.5.7 keeps the embedding whole,
    v0.5.8 splits it 4 ways: x 3/4. Llama-3-70B TP 8 DP 2 (rooflab's bound, cda3c0c): weights embeddings / 4 + lm_head
    / 8 + attention / 4 + MLP and norms / 8 = 525,336,576 + 262,668,288 + 6,039,797,760 + 14,092,861,440 + 329,728 =
    20,920,993,792 B; (135,679,338,086 - that) // (4,096 x 81,920) x 2 = 684 sequences."""
    from rooflab.load import load_model

    m = load_model("deepseek-v3")
    scale = m.total_parameters / m.parameters.total
    out = []

    def weights(rel, dp):
        doc, p, _ = _run3(folder, ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--engine", "sglang", "-tp", "8",
                                   "--enable-dp-attention", "--dp", str(dp), "--engine-version", rel, "-f", "json"],
                          expect=0)
        out.extend(p)
        terms = {t["name"]: t for t in doc["terms"]} if doc else {}
        return terms.get("weights", {}).get("bytes", 0), terms.get("weights", {}).get("source", "")

    w44, s44 = weights("0.4.4", 8)
    w45, s45 = weights("0.4.5", 8)
    vh = 129_280 * 7_168 * 2
    absorbed = 61 * 512 * 128 * 256          # one rank's kv_b (attention TP 1), fp8 at both releases
    if "(0.953 GiB)" not in s44 or "(0.953 GiB)" not in s45:
        out.append(f"absorbed copies not 61 x 512 x 128 x 256 x 1 = {absorbed:,} B at 0.4.4 / 0.4.5: {s44[-60:]}")
    if abs((w44 - w45) - vh * 7 / 8 * scale) > 8:
        out.append(f"lm_head whole (0.4.4) - over 8 (0.4.5) = {w44 - w45:,}; hand {vh * 7 / 8 * scale:,.0f}")
    w57, _ = weights("0.5.7", 2)
    w58, _ = weights("0.5.8", 2)
    if abs((w57 - w58) - vh * 3 / 4 * scale) > 8:
        out.append(f"embedding whole (0.5.7) - over 4 (0.5.8) = {w57 - w58:,}; hand {vh * 3 / 4 * scale:,.0f}")
    doc, p, _ = _run3(folder, ["capacity", "-m", "llama-3-70b", "-g", "h200-sxm", "--tp", "8", "--enable-dp-attention",
                               "--dp", "2", "-L", "4096", "-f", "json"], expect=0)
    out.extend(p)
    if doc and (doc["weights_bytes"], doc["kv_bytes_per_token"], doc["max_sequences_paged"]) != (20_920_993_792, 81_920,
                                                                                                 684):
        out.append(f"Llama-3-70B TP 8 DP 2: {doc['weights_bytes']:,} B, {doc['kv_bytes_per_token']:,} B a token, "
                   f"{doc['max_sequences_paged']} sequences; hand 20,920,993,792, 81,920, 684")
    return out


def _vllm_dp_attention12(folder: Path) -> list[str]:
    """--enable-dp-attention is SGLang's switch: under --engine vllm it is refused, or at least vLLM's MLA copies
    follow the attention split its weights line applies (attention / 4: each rank's kv_b has 128 / 4 heads)."""
    doc, problems, out = _run3(folder, ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8",
                                        "--enable-dp-attention", "--dp", "2", "--engine", "vllm", "-f", "json"],
                               idents=["--enable-dp-attention"])
    if problems or out.code == 2:
        return problems
    src = next(t["source"] for t in doc["terms"] if t["name"].startswith("weights"))
    if "attention / 4" in src and "(0.477 GiB)" not in src:
        return [f"vLLM accounting under SGLang's --enable-dp-attention: '{src[40:]}': attention over 4 GPUs but the "
                "absorbed W_UK_T / W_UV over 8 (61 x 512 x 32 x 256 x 2 = 0.477 GiB expected)"]
    return []


def _fp8_step12(folder: Path, gpu: str, model: str, extra: list[str]) -> list[str]:
    """The step with fp8 GEMMs: every invariant; no row predicted below its floor; fp8 rows name torch_scaled_mm
    where the H200's fits transfer (NVIDIA fp8 GPUs), and no note says a fit priced what nothing priced."""
    tp = ["-tp", "8"] if model in ("deepseek-v3", "llama-3-70b") else []
    doc, problems, out = _run3(folder, ["report", "--phase", "step", "-m", model, "-g", gpu, *tp, "-b", "16", "-L",
                                        "1024", *extra, "-f", "json"], idents=["--weight-dtype", "--gemm-dtype", "-q",
                                                                              gpu, "fp8", "dense_tensor_flop_per_s"])
    if problems or doc is None:
        return problems
    bad = []
    for r in doc["rows"]:
        tp_, tf = r.get("t_predicted_s"), r.get("t_floor_s")
        if tp_ is not None and tf is not None and tp_ < tf * (1 - 1e-9):
            bad.append(f"{r['label']}: predicted {tp_:.3e} s below its floor {tf:.3e} s")
        if r.get("variant") == "gemm" and r.get("predicted_impl") and r["predicted_impl"] not in (r.get("source") or ""):
            bad.append(f"{r['label']}: predicted_impl {r['predicted_impl']} but source '{r.get('source')}'")
    if doc.get("t_predicted_s") is None and any("priced as the bf16 cuBLAS fit" in n for n in doc["notes"]):
        bad.append(f"no prediction on {gpu}, yet a note says: "
                   f"'{next(n for n in doc['notes'] if 'priced as the bf16' in n)}'")
    return bad


_BENCH_STUB12 = r"""
import sys, time
import rooflab.measure.device as dev
import rooflab.measure.run as mrun
from rooflab.measure.run import BenchResult
dev.device_name = lambda: "NVIDIA H200"
dev.check_spec_matches = lambda spec, name: None
dev.default_spec = lambda: "h200-sxm"
dev.metadata = lambda command, spec: {"command": command, "gpu_spec": spec}
def fake_run(cases, l2_bytes, with_torch=True, repeats=20, progress=sys.stderr, seed=0, after_case=None):
    result = BenchResult()
    for i in range(10):
        time.sleep(0.4)
        print(f"case {i + 1}/10", file=sys.stderr, flush=True)
        if after_case:
            after_case(result)
    return result
mrun.run = fake_run
sys.argv = ["rooflab", "bench", "-g", "h200-sxm", "-k", "gemm", "--quick", "-o", "b.csv", "--no-torch"]
from rooflab._entry import main
main()
"""


def _bench_ctrl_c12(folder: Path) -> list[str]:
    """`rooflab bench` (the console script's entry, only the GPU stubbed: ten 0.4 s cases, run_to_file saving after
    each as on a GPU) and Ctrl-C after its second case: it stops, exit 130, the cases so far kept (measure.run:
    'a run cut short keeps what it measured')."""
    (folder / "stub.py").write_text(_BENCH_STUB12)
    proc = subprocess.Popen([sys.executable, "stub.py"], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    cases = err.count("case ")
    if proc.returncode != 130:
        return [f"Ctrl-C after case 2 of 10: exit {proc.returncode} after {cases} cases ({out.strip()[-80:]!r}); "
                "expected exit 130, the CSV of what was measured kept"]
    return []


def _plot_ctrl_c12(folder: Path, how: list[str]) -> list[str]:
    """plot memory -o c.png --data d.json, Ctrl-C right after c.png is in place: both files and exit 0 (fd0d215)."""
    stub = ("import os, signal, sys, time\nimport rooflab.plot.save as ps\nimport rooflab.plot as rp\norig = ps.save_figure\n"
            "def patched(*a, **k):\n    r = orig(*a, **k)\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(0.2)\n"
            "    return r\nps.save_figure = rp.save_figure = patched\nsys.argv = ['rooflab'] + sys.argv[1:]\n"
            + ("from rooflab._entry import main\nmain()\n" if how == ["entry"] else "import runpy\n"
               "runpy.run_module('rooflab', run_name='__main__')\n"))
    (folder / "stub.py").write_text(stub)
    proc = subprocess.run([sys.executable, "stub.py", "plot", "memory", "-m", "llama-3-8b", "-g", "h200-sxm", "-o",
                           "c.png", "--data", "d.json"], cwd=folder, capture_output=True, text=True, env=_env(),
                          timeout=CHILD_TIMEOUT_S, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    have = sorted(p.name for p in folder.iterdir() if p.name in ("c.png", "d.json"))
    if proc.returncode != 0 or have != ["c.png", "d.json"]:
        return [f"Ctrl-C between the image and --data ({how[0]}): exit {proc.returncode}, files {have}, "
                f"{proc.stderr.strip()[-200:]!r}"]
    return []


def _use_v1_api12(folder: Path) -> list[str]:
    """parse_engine_version's use_v1 given as VLLM_USE_V1's own 0 / 1: taken as False / True or refused naming it,
    never a false statement about the release."""
    from rooflab.engines.vocab import parse_engine_version
    from rooflab.errors import InputError

    out = []
    for value, engine in ((0, "V0"), (1, "V1")):
        try:
            got = parse_engine_version("vllm", "0.8.4", value)
        except InputError as exc:
            if "has no" in str(exc):
                out.append(f"parse_engine_version('vllm', '0.8.4', {value}): '{exc}' (0.8.4 ships {engine})")
            continue
        if got.accounting.is_v1 is not bool(value):
            out.append(f"parse_engine_version('vllm', '0.8.4', {value}) -> {got}")
    return out


def session12_inputs() -> Iterator[Input]:
    for engine in ("vllm", "sglang"):
        for value in VERSIONS12:
            yield Input("session12", f"capacity --engine {engine} --engine-version {value!r}"[:120],
                        check=lambda f, e=engine, v=value: _version12(f, e, v))
    for cmd in (["report", "--phase", "step", "-m", "qwen3-30b-a3b", "-g", "h200-sxm"],
                ["serve", "-m", "llama-3-8b", "-g", "h100-sxm"],
                ["explain", "--phase", "step", "-m", "llama-3-8b", "-g", "h100-sxm"]):
        for engine in ("vllm", "sglang", "tensorrt-llm"):
            for value in ("V0.9.0", "0.9.0", " 0.9.0", "", "0.9.0" * 14, "\uff10.9.0", "0.4.6.post2", "v1 (0.11+)"):
                yield cli("session12", [*cmd, "--engine", engine, "--engine-version", value], idents=["--engine-version"],
                          label=f"{' '.join(cmd[:3])} --engine {engine} --engine-version {value!r}"[:120])
    for model in (["-m", "llama-3-8b", "--tp", "8"], ["-m", "qwen3-30b-a3b", "--tp", "8"], ["-m", "deepseek-v3", "--tp", "8"]):
        for engine, label, release in LABELS12:
            yield Input("session12", f"capacity {' '.join(model)} --engine {engine}: label {label} = {release}",
                        check=lambda f, m=model, e=engine, l=label, r=release: _label12(f, m, e, l, r))
    for extra in (["--vllm-use-v1", "0"], ["--vllm-use-v1", "1"], ["--vllm-use-v1", "2"], ["--vllm-use-v1", ""],
                  ["--vllm-use-v1", "\uff10"], ["--vllm-use-v1", "0", "--vllm-use-v1", "1"],
                  ["--vllm-use-v1", "0", "--engine-version", "0.8.4"], ["--vllm-use-v1", "0", "--engine-version", "0.11.0"],
                  ["--vllm-use-v1", "1", "--engine-version", "0.7.3"], ["--vllm-use-v1", "0", "--engine-version", "v1"],
                  ["--vllm-use-v1", "1", "--engine-version", "v0"], ["--vllm-use-v1", "0", "--engine-version", "V0.8.4"],
                  ["--no-flashinfer", "--engine-version", "0.10.1"], ["--engine-version", "0.8.4", "--engine-version", "0.9.0"]):
        for engine in ("vllm", "sglang"):
            yield cli("session12", ["capacity", "-m", "qwen3-30b-a3b", "-g", "h200-sxm", "--engine", engine, *extra,
                                    "-f", "json"], idents=[extra[0], "--engine-version", "--vllm-use-v1"], json_out=True)
    for extra, why in ((["--engine-version", "0.8.4"], "0.10.1 is refused as contradicting the log's v0.11.2"),
                       (["--engine-version", "V0.10.1"], "0.10.1 is refused as contradicting the log's v0.11.2"),
                       (["--vllm-use-v1", "0"], "VLLM_USE_V1=0 contradicts a V1 engine line; silently ignored")):
        yield Input("session12", f"capacity --engine-log <v0.11.2 V1 log> {' '.join(extra)}",
                    check=lambda f, x=extra, w=why: _log12(f, x, w))
    for model, tp, dps in (("deepseek-v3", 8, (1, 2, 4, 8)), ("qwen3-30b-a3b", 4, (1, 2, 4)), ("llama-3-70b", 8, (2, 8))):
        for dp in dps:
            for release in ("0.4.4", "0.4.5", "0.4.6", "0.4.7", "0.5.2", "0.5.7", "0.5.8", "0.5.10"):
                yield Input("session12", f"step vs capacity weights: {model} SGLang {release} TP {tp} DP {dp}",
                            check=lambda f, m=model, t=tp, d=dp, r=release: _step_weights12(f, m, t, d, r))
    for model, tp in (("deepseek-v3", 8), ("qwen3-30b-a3b", 8), ("llama-3-70b", 8)):
        for dp in (3, 16, 5, 1, 8):
            for ep in ([], ["--ep", "8"], ["--ep", "3"]):
                if ep and model == "llama-3-70b":
                    continue
                for engine in ([], ["--engine", "sglang"], ["--engine", "sglang", "--engine-version", "0.4.4"]):
                    yield cli("session12", ["capacity", "-m", model, "-g", "h200-sxm", "--tp", str(tp),
                                            "--enable-dp-attention", "--dp", str(dp), *ep, *engine, "-f", "json"],
                              idents=["--dp", "--ep", "--enable-dp-attention", "--engine-version"], json_out=True)
    yield Input("session12", "DP attention hand figures (DeepSeek-V3 lm_head / embedding by release; Llama-3-70B TP 8 DP 2)",
                check=_dp_hand12)
    yield Input("session12", "capacity --engine vllm --enable-dp-attention --dp 2 (DeepSeek-V3 TP 8)",
                check=_vllm_dp_attention12)
    for gpu in ("h200-sxm", "h100-sxm", "l40s", "a100-sxm-80gb", "t4", "mi300x", "b200"):
        for model in ("llama-3-8b", "qwen3-30b-a3b", "deepseek-v3"):
            for extra in (["--weight-dtype", "fp8"], ["--gemm-dtype", "fp8_e4m3"], ["-q", "fp8"],
                          ["--weight-dtype", "fp8", "--enforce-eager"], ["--weight-dtype", "fp8", "--engine", "vllm"],
                          ["--weight-dtype", "fp8", "--engine", "tensorrt-llm"]):
                if model == "deepseek-v3" and extra[0] != "--weight-dtype":
                    continue
                yield Input("session12", f"report --phase step -m {model} -g {gpu} {' '.join(extra)}",
                            check=lambda f, g=gpu, m=model, x=extra: _fp8_step12(f, g, m, x))
    for gpu in ("h200-sxm", "h100-sxm", "mi300x"):
        yield cli("session12", ["explain", "--phase", "step", "-m", "llama-3-8b", "-g", gpu, "--weight-dtype", "fp8",
                                "--json"], json_out=True, idents=["--weight-dtype"])
    yield Input("session12", "rooflab bench (GPU stubbed), Ctrl-C after case 2 of 10", check=_bench_ctrl_c12)
    yield Input("session12", "plot memory -o c.png --data d.json, Ctrl-C between them (console entry)",
                check=lambda f: _plot_ctrl_c12(f, ["entry"]))
    yield Input("session12", "plot memory -o c.png --data d.json, Ctrl-C between them (python -m rooflab)",
                check=lambda f: _plot_ctrl_c12(f, ["python -m"]))
    yield Input("session12", "parse_engine_version(..., use_v1=0 / 1)", check=_use_v1_api12)



CLASSES = {"hf_config": hf_inputs, "yaml_spec": yaml_inputs, "options": option_inputs, "files": file_inputs,
           "streams": stream_inputs, "signals": signal_inputs, "engine_logs": log_inputs,
           "environment": env_inputs, "api": api_inputs, "numbers": number_inputs,
           "options2": option2_inputs, "hf_config2": hf2_inputs, "api2": api2_inputs, "numbers2": number2_inputs,
           "classic2": classic2_inputs, "quant3": quant3_inputs, "sizes3": sizes3_inputs, "step3": step3_inputs,
           "memory3": memory3_inputs, "hybrid3": hybrid3_inputs, "amd3": amd3_inputs, "plot3": plot3_inputs,
           "closing4": closing4_inputs, "closing5": closing5_inputs, "session12": session12_inputs}


def run_case(item: Input, folder: Path) -> list[str]:
    """A CLI case's problems, run in `folder` (its setup already done)."""
    case = dataclasses.replace(item.case, outputs=[folder / p for p in item.case.outputs])
    before = fs.snapshot(folder)
    out = fs.invoke(case.args, folder)
    after = fs.snapshot(folder)
    problems = fs.problems_of(case, out, before, after, folder, {})
    return [p + " | " + out.describe().replace("\n", " / ")[:600] for p in problems]


def run_input(item: Input) -> list[str]:
    with fs.scratch("rooflab-hostile-") as folder:
        try:
            if item.setup:
                item.setup(folder)
            if item.check:
                return item.check(folder)
            return run_case(item, folder)
        finally:
            for dirpath, dirnames, _ in os.walk(folder):
                for d in dirnames:
                    try:
                        os.chmod(Path(dirpath) / d, 0o755)
                    except OSError:
                        pass
            for p in folder.rglob("*"):
                try:
                    if not p.is_symlink():
                        os.chmod(p, 0o644 if p.is_file() else 0o755)
                except OSError:
                    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="klass", action="append", choices=sorted(CLASSES))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--report", type=Path, help="write each failure as a JSON line here")
    args = parser.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    chosen = args.klass or list(CLASSES)
    totals = {}
    failures = []
    start = time.perf_counter()
    for klass in chosen:
        items = list(CLASSES[klass]())
        if args.list:
            totals[klass] = (len(items), 0)
            continue
        failed = 0
        for item in items:
            problems = run_input(item)
            if problems:
                failed += 1
                failures.append({"class": klass, "input": item.label, "problems": problems})
                print(f"FAIL [{klass}] {item.label[:100]}: {problems[0][:400]}", flush=True)
        totals[klass] = (len(items), failed)
        print(f"# {klass}: {len(items)} inputs, {len(items) - failed} passed ({time.perf_counter() - start:.0f} s)",
              flush=True)
    print("| class | inputs | passed |")
    print("| --- | --: | --: |")
    for klass, (n, failed) in totals.items():
        print(f"| {klass} | {n} | {n - failed} |")
    n_all = sum(n for n, _ in totals.values())
    print(f"| all | {n_all} | {n_all - sum(f for _, f in totals.values())} |")
    if args.report:
        args.report.write_text("".join(json.dumps(f) + "\n" for f in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
