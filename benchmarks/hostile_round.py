"""Issue 24's hostile round: generate every input of the round, run each against rooflab, check every invariant.

    python benchmarks/hostile_round.py              # the whole round (about 900 inputs, a few minutes on two cores)
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
            yield cli("files", [*cmd, "-o", target], idents=[target, "--output", "-o", "too long"], setup=setup,
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
        yield cli("files", ["validate", str(csv), "-o", target], idents=[target, "--output", "-o", "too long"], setup=setup,
                  outputs=outputs, label=f"validate -o {label}")
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
        yield cli("files", ["report", "-g", target], idents=[target[:60], "--gpu"], setup=setup_in,
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
                    if not isinstance(result, RooflabError):
                        where = fs.finite_everywhere(result)
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


# --- running ----------------------------------------------------------------------------------------------------

CLASSES = {"hf_config": hf_inputs, "yaml_spec": yaml_inputs, "options": option_inputs, "files": file_inputs,
           "streams": stream_inputs, "signals": signal_inputs, "engine_logs": log_inputs,
           "environment": env_inputs, "api": api_inputs, "numbers": number_inputs}


def run_input(item: Input) -> list[str]:
    with fs.scratch("rooflab-hostile-") as folder:
        try:
            if item.setup:
                item.setup(folder)
            if item.check:
                return item.check(folder)
            case = dataclasses.replace(item.case, outputs=[folder / p for p in item.case.outputs])
            before = fs.snapshot(folder)
            out = fs.invoke(case.args, folder)
            after = fs.snapshot(folder)
            problems = fs.problems_of(case, out, before, after, folder, {})
            return [p + " | " + out.describe().replace("\n", " / ")[:600] for p in problems]
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
