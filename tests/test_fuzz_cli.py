"""Fuzzing every command of the CLI: generated option values, valid and not, each call held to fuzz_support's invariants.

Each generated call takes a few valid options and at most one option with a value drawn from a
pool of bad ones (zero, negatives, 1e18, 10**19, 1e308, 1e400, NaN, inf, '', whitespace, text,
unicode, '$', '\\', '{}', near-miss names, missing files, folders), or an odd one that may be
accepted or refused. A bad value must be refused (exit 2) with a message naming the option or the
value; any call must exit 0 or 2 (never a traceback), print strict JSON and finite tables, leave no
file behind but its output, and finish in seconds. The explicit cases at the end pin each bad
input an earlier hostile run found, one by one.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import (HARDWARE, MEASUREMENTS, MODELS, Case, check_cli, fuzz_settings, invoke, run_subprocess,
                          scratch, snapshot, check_outcome)
from rooflab.limits import MAX_BATCH, MAX_GIB, MAX_GPUS, MAX_LOGIT_STD, MAX_PAGE_SIZE, MAX_SPLITS, MAX_TOKENS
from rooflab.units import DType, WeightFormat
from rooflab.vocab import EXPLAINED

try:
    from rooflab.cost.paged import MAX_Q_LEN
except ImportError:  # an older tree without --q-len
    MAX_Q_LEN = 1 << 10

GPUS = sorted(p.stem for p in HARDWARE.glob("*.yaml"))
MODEL_NAMES = sorted(p.stem for p in MODELS.glob("*.yaml"))
#: A small, fast measurement file (decode rows only): validate and plot on it take a few hundredths of a second.
SMALL_CSV = MEASUREMENTS / "h200-fp8-decode.csv"
HAS_CUPY = importlib.util.find_spec("cupy") is not None

# --- value pools ---------------------------------------------------------------------------------------------

#: Values no option that takes a number accepts.
NOT_NUMBERS = ["", " ", "\t", "abc", "nan", "NaN", "inf", "-inf", "+inf", "Infinity", "1e400", "-1e400", "${HOME}",
               "{}", "\\", "$", "None", "null", "--", "\u00bd", "\u0663", "\uff11\uff12", "\U0001f4a5", "1,5x",
               "0x1p3", "8192 tokens", "true"]
#: Values no whole-number option accepts (besides NOT_NUMBERS).
NOT_COUNTS = ["1.5", "0.5", "1e3", "1e18", "1e308", "10000000000000000000", "9" * 400, "9" * 400 + "k", "0x10", "0o17",
              "0b11", "2**31", "8192.", ".5k", "1.5K", "-8192", "-1", "_1", "1__0_", "1e-3"]


def _count_opt_values(lo: int, hi: int, typical_hi: int):
    typical_hi = min(hi, typical_hi)
    valid = st.one_of(st.integers(lo, typical_hi).map(str),
                      st.sampled_from([str(lo), str(hi), f" {lo} "] + [s for s, v in
                                      (("1k", 1000), ("2K", 2048), ("4k", 4000), ("1M", 1 << 20), ("8_192", 8192),
                                       ("25.6k", 25600), ("1Ki", 1024))
                                      if lo <= v <= hi]))
    bad = list(NOT_NUMBERS) + list(NOT_COUNTS) + [str(hi + 1), str(10**19), str(2**63), str(2**64)]
    if lo > 0:
        bad += [str(lo - 1), "0"]
    bad = [b for b in bad if not _in_range_count(b, lo, hi)]
    return valid, st.sampled_from(sorted(set(bad))), st.sampled_from(["1_", "007", "+8", "-0", "0" * 50 + "1"])


def _in_range_count(text: str, lo: int, hi: int) -> bool:
    return bool(re.fullmatch(r"[0-9]+", text)) and lo <= int(text) <= hi


def _float_opt_values(lo: float, hi: float, lo_open: bool = False):
    valid = st.floats(lo, hi, allow_nan=False, allow_infinity=False, exclude_min=lo_open).map(repr)
    bad = list(NOT_NUMBERS) + ["1e308" if hi < 1e308 else "1e400", repr(hi * 2), "1e400", "-1e400", "-1", "-0.5",
                               "1,5", "5e-324" if lo_open and lo == 0 else "-5e-324"]
    if lo_open:
        bad += [repr(lo), "0", "-0.0"] if lo == 0 else [repr(lo)]
    bad = [b for b in bad if b not in ("true",)]
    return valid, st.sampled_from(sorted(set(bad))), st.sampled_from(["1_0", " 0.5 ", "1e-300", "5e-324", "0.1"])


def _choice_values(values: list[str]):
    bad = ["", " ", "x", "\U0001f4a5", "$", "{}", "\\", "a" * 200, "fp-16", "fp16x", "none", "auto"]
    near = [v.upper() for v in values if v.upper() != v] + [v + " " for v in values[:2]] + [" " + v for v in values[:2]]
    return st.sampled_from(values), st.sampled_from([b for b in bad if b not in values]), st.sampled_from(near or ["?"])


def _near_misses(names: list[str]) -> list[str]:
    out = []
    for n in names:
        out += [n.replace("-", ""), n.replace("-", "_"), n[:-1], n + "x", n + ".yaml", "./" + n]
    return [o for o in out if o.strip().lower() not in names]


ODD_NAMES = ["", " ", "\t", "$", "$HOME", "${HOME}", "\\", "{}", "{0}", "%s", "\U0001f4a5", "\u00e9", "a" * 300,
             "../../etc/passwd", "/", ".", "..", "/etc/passwd", "/proc/self/status", "~", "~/nope.yaml", "-",
             "nope.yaml", "missing/dir/spec.yaml", "C:\\specs\\gpu.yaml", "x\x00y", "\u202eabc", "null", "None"]


def _name_values(kind: str, names: list[str]):
    folder = HARDWARE if kind == "hardware" else MODELS
    valid = st.sampled_from(names + [str(folder / f"{n}.yaml") for n in names[:3]])
    odd = [n.upper() for n in names] + [f" {n} " for n in names[:3]]
    if kind == "hardware":
        # GPU names resolve loosely by design (load.resolve_gpu_name: case, dashes and the vendor ignored, a unique
        # prefix accepted: 'h200' -> h200-sxm), so those near-misses may pass; these may not
        near = [m for n in names for m in (n + "x", "x" + n, n + ".yaml", "./" + n, n + "-2")]
        odd += [m for n in names for m in (n.replace("-", ""), n.replace("-", "_"), n[:-1])]
    else:
        near = _near_misses(names)
    bad = st.sampled_from(near + ODD_NAMES + [str(folder), str(folder / "nope.yaml")])
    return valid, bad, st.sampled_from(odd)


def _list_values(lo: int, hi: int, typical_hi: int):
    item = st.integers(lo, min(hi, typical_hi)).map(str)
    valid = st.lists(item, min_size=1, max_size=4).map(",".join)
    bad = ["", " ", ",", ",,", "1k,,2k", "1,", ",1", f"1,{lo - 1}", "1,-1", "1,abc", "8192,1e400", "1;2", "1 2",
           f"{hi + 1}", "nan,1", "1,inf", "\U0001f4a5"]
    return valid, st.sampled_from([b for b in bad if not _in_range_count(b, lo, hi)]), st.sampled_from(["1, 2", " 8k "])


@dataclasses.dataclass
class Opt:
    """One option of one command: its spellings, and values that must be accepted, refused, or either."""

    flags: tuple[str, ...]
    valid: Optional[st.SearchStrategy] = None
    bad: Optional[st.SearchStrategy] = None
    odd: Optional[st.SearchStrategy] = None
    switch: bool = False          # a boolean flag (its spellings are the values)
    kind_word: str = ""          # how messages name what the option holds ("GPU", "model")
    words: tuple[str, ...] = ()  # how messages from the API name it ("tensor parallel")
    checked_late: bool = False   # checked when used (a name or a path), so a valid combination may fail first
    never: bool = False          # listed (the catalog covers --help) but never drawn: it would launch real work

    def __repr__(self) -> str:     # hypothesis prints the drawn options: their names are enough
        return f"Opt{self.flags}"


def count_opt(flags, lo, hi, typical_hi=70_000):
    return Opt(flags, *_count_opt_values(lo, hi, typical_hi))


def float_opt(flags, lo, hi, lo_open=False):
    return Opt(flags, *_float_opt_values(lo, hi, lo_open))


def choice_opt(flags, values):
    return Opt(flags, *_choice_values(list(values)))


def list_opt(flags, lo, hi, typical_hi=70_000):
    return Opt(flags, *_list_values(lo, hi, typical_hi))


def switch(*spellings):
    return Opt(tuple(spellings), switch=True)


DTYPES = [d.value for d in DType]
WEIGHTS = [w.value for w in WeightFormat]
FORMATS = ["table", "markdown", "csv", "json"]
MODEL = Opt(("--model", "-m"), *_name_values("models", MODEL_NAMES), kind_word="model", checked_late=True)
GPU = Opt(("--gpu", "-g"), *_name_values("hardware", GPUS), kind_word="GPU", checked_late=True)
GPU_LIST = Opt(("--gpu", "-g"), st.lists(st.sampled_from(GPUS), min_size=1, max_size=3).map(",".join),
               st.sampled_from(_near_misses(GPUS)[:20] + ["", ",", "h100-sxm,", ",h100-sxm", "h100-sxm,,b200",
                                                          "h100-sxm,nope", "$", "{}", "\\"]),
               st.sampled_from(["H100-SXM", " h100-sxm , b200 "]), kind_word="GPU", checked_late=True)
FMT = choice_opt(("--format", "-f"), FORMATS)
SEQ = count_opt(("--seq-len", "-T"), 1, MAX_TOKENS)
BATCH = count_opt(("--batch", "-b"), 1, MAX_BATCH, 4096)
PAGE = count_opt(("--page-size",), 1, MAX_PAGE_SIZE, 4096)
SPLITS = count_opt(("--splits",), 1, MAX_SPLITS)
DTYPE = choice_opt(("--dtype",), DTYPES)
KV = choice_opt(("--kv-dtype",), DTYPES)
CTX_LIST = list_opt(("--context-len", "-L"), 1, MAX_TOKENS)
CEIL = dataclasses.replace(choice_opt(("--ceilings",), ["datasheet", "calibrated"]), words=("measured:",))
CAUSAL = switch("--causal", "--no-causal")
UTIL = dataclasses.replace(float_opt(("--gpu-memory-utilization",), 0, 1, lo_open=True),
                           words=("utilisation", "utilization"))
MAXLEN = count_opt(("--max-model-len",), 1, MAX_TOKENS)
TP = dataclasses.replace(count_opt(("--tensor-parallel", "--tp"), 1, MAX_GPUS, 16), words=("tensor parallel",))
WDT = choice_opt(("--weight-dtype",), WEIGHTS)

# the deployment's spellings (rooflab's, vLLM's, SGLang's: rooflab/cli/deployment_options.py), shared by the commands
#: --tp as capacity, explain and plot capacity spell it apart from the engines' --tensor-parallel-size
TP_SIZE = dataclasses.replace(count_opt(("--tensor-parallel-size", "--tp-size", "-tp"), 1, MAX_GPUS, 16),
                              words=("tensor parallel",))
#: report --phase step and serve: one option with every spelling
TP_ANY = dataclasses.replace(count_opt(("--tp", "--tensor-parallel-size", "--tp-size", "-tp"), 1, MAX_GPUS, 16),
                             words=("tensor parallel", "tp"))
DCP = dataclasses.replace(count_opt(("--dcp", "--decode-context-parallel-size", "--dcp-size", "-dcp"), 1, MAX_GPUS,
                                    16), words=("decode context parallel", "dcp"))
KVP = dataclasses.replace(count_opt(("--kv-parallel", "--kvp"), 1, MAX_GPUS, 16), words=("KV parallel",))
PCP = dataclasses.replace(count_opt(("--pcp", "--prefill-context-parallel-size", "--cp", "-pcp"), 1, MAX_GPUS, 16),
                          words=("prefill context parallel", "pcp"))
DP = dataclasses.replace(count_opt(("--dp", "--data-parallel-size", "--dp-size", "-dp"), 1, MAX_GPUS, 16),
                         words=("data parallel", "data-parallel"))
EP = dataclasses.replace(count_opt(("--expert-parallel", "--ep", "--ep-size"), 1, MAX_GPUS, 16),
                         words=("expert parallel",))
ENABLE_DP_ATTENTION = switch("--enable-dp-attention")
ENABLE_EP = switch("--enable-expert-parallel")
BLOCK = count_opt(("--block-size",), 1, MAX_PAGE_SIZE, 4096)
KV_CACHE = Opt(("--kv-cache-dtype",), st.sampled_from(["auto", "fp8", "fp8_e5m2", "fp8_e4m3", "fp8_ds_mla", "bfloat16",
                                                       "float16"]),
               st.sampled_from(["", " ", "fp4", "FP8x", "$", "{}", "int8", "nan", "\U0001f4a5", "a" * 65]),
               st.sampled_from(["FP8", "bf16", "half", " fp8 "]), checked_late=True,
               words=("kv-cache-dtype", "cache dtype", "KV dtype"))
#: the engines' --quantization: the checkpoint's own method (so a valid name may not fit the model), or a format
#: (deployment_words: the weights' one vocabulary, --weight-dtype's too)
QUANT = Opt(("--quantization", "-q"), st.sampled_from(["fp8", "awq", "gptq", "mxfp4", "compressed-tensors", "modelopt",
                                                       "bitsandbytes", "w8a8_fp8", "nvfp4", "fp8_block", "int4_g128",
                                                       "auto"]),
            st.sampled_from(["", " ", "fp5", "int3", "nope", "$", "{}", "\\", "\U0001f4a5", "a" * 65, "fp8,awq"]),
            st.sampled_from(["FP8", "AWQ", " fp8 ", "compressed_tensors"]), checked_late=True,
            words=("quantization",))
MEM_FRAC = dataclasses.replace(float_opt(("--mem-fraction-static",), 0, 1, lo_open=True),
                               words=("utilisation", "utilization"))
#: report --phase step and serve: --gpu-memory-utilization and --mem-fraction-static as one option
UTIL_ANY = dataclasses.replace(float_opt(("--gpu-memory-utilization", "--mem-fraction-static"), 0, 1, lo_open=True),
                               words=("utilisation", "utilization"))
SHAPE = Opt(("--shape",), st.sampled_from(["1,32,8,8192,128", "4,32,8,1k,128,128", "1,128,1,4096,576,512",
                                           "2,8,8,512,64", "1,1,1,1,1"]),
            st.sampled_from(["", " ", ",", "1,32,8", "1,32,8,8192", "0,32,8,8192,128", "1,32,7,8192,128",
                             "1,32,8,8192,128,128,1", "a,b,c,d,e", "1,32,8,1e400,128", "1,-32,8,8192,128",
                             "1,32,8,,128", "1,32,8,8192,0", "1,32,8,99999999999999999999,128", "$", "{}"]),
            st.sampled_from(["1, 32, 8, 8k, 128", "1,32,8,8192,128,"]), checked_late=True, words=("--shape",))

ENGINE_LOGS = sorted((Path(__file__).parent / "data" / "engine_logs").glob("*.log"))
BAD_PATHS = ["", " ", "missing.log", ".", "/etc/passwd", str(HARDWARE / "h100-sxm.yaml"), str(MEASUREMENTS), "/dev/null",
             "\U0001f4a5.log"]
#: `capacity --engine ...`: an engine's own memory accounting and its start-up logs.
ENGINE_OPTS = [
    Opt(("--engine",), st.sampled_from(["vllm", "sglang"]), st.sampled_from(["", " ", "trt", "VLLM ", "vllm,sglang", "$",
                                                                             "{}", "\U0001f4a5", "tensorrt-llm",
                                                                             "trtllm"]),
        st.sampled_from(["VLLM", "SGLang"]), checked_late=True, words=("engine",)),
    Opt(("--engine-version",), st.sampled_from(["v1", "v0", "v0.5", "0.10.1", "v0.8.4", "0.6.3.post1", "0.4.6.post2"]),
        st.sampled_from(["", " ", "v99", "latest", "$", "{}", "1e400", "nan", "v1.2.3.4.5", "0.30.0", "0.2.4",
                         "0.10.1; x", "\uff10.10.1"]),
        st.sampled_from(["1", "V1", "v0.6.4", "v0.2", "v0.4", "0.8"]), checked_late=True, words=("engine", "version")),
    Opt(("--engine-log",), st.sampled_from([str(p) for p in ENGINE_LOGS] or [str(SMALL_CSV)]),
        st.sampled_from(BAD_PATHS), checked_late=True, words=("log",)),
    Opt(("--what-if",), st.sampled_from(["kv-cache-dtype=fp8", "tp=2", "block-size=32", "max-model-len=32k",
                                         "gpu-memory-utilization=0.95", "memory-in-use=4GiB"]),
        st.sampled_from(["", "=", "tp", "tp=", "tp=0", "tp=-1", "nope=1", "tp=1e400", "max-model-len=nan",
                         "gpu-memory-utilization=2", "$=1", "block-size=0", "kv-cache-dtype=fp4", "tp=2=3"]),
        st.sampled_from(["TP=2", " tp = 2 "]), checked_late=True, words=("what-if",)),
    KV_CACHE, BLOCK, TP_SIZE, MEM_FRAC,
    count_opt(("--max-num-seqs", "--max-running-requests"), 1, MAX_TOKENS, 4096),
    count_opt(("--max-num-batched-tokens",), 1, MAX_TOKENS),
    # sizes need a unit (units.parse_bytes: '10' is no size, '4G' reads two ways; SGLang's 4Gi is taken, 0 too)
    Opt(("--memory-in-use",), st.sampled_from(["4GiB", "0GiB", "10GB", "512MiB", "4Gi", "0"]),
        st.sampled_from(["", " ", "-1GiB", "1e400GiB", "nanGiB", "4 furlongs", "99999999999999999999999999GiB", "$",
                         "{}", "200GiB", "10", "4G", "4g"]),
        st.sampled_from(["4gib", "1TB"]), checked_late=True, words=("memory", "size", "free", "unit")),
    # the linear-attention state options: each refused, naming itself, on a model without linear layers or with
    # the other engine
    Opt(("--mamba-ssm-dtype", "--mamba-ssm-cache-dtype"), st.sampled_from(["float32", "bfloat16", "float16", "auto"]),
        st.sampled_from(["", " ", "int8", "fp8", "nope", "$", "{}", "\U0001f4a5", "a" * 65]),
        st.sampled_from(["FP32", "bf16", " float32 "]), checked_late=True, words=("mamba", "ssm")),
    Opt(("--mamba-cache-mode",), st.sampled_from(["none", "align"]),
        st.sampled_from(["", " ", "all", "nope", "$", "{}", "\U0001f4a5"]), st.sampled_from(["NONE", " align "]),
        checked_late=True, words=("mamba",)),
    dataclasses.replace(count_opt(("--max-mamba-cache-size",), 1, MAX_TOKENS, 4096), checked_late=True,
                        words=("mamba",)),
    dataclasses.replace(float_opt(("--mamba-full-memory-ratio",), 0, 100, lo_open=True), checked_late=True,
                        words=("mamba", "ratio")),
    # LoRA buffers: --max-loras / --max-lora-rank need --enable-lora, vLLM takes only its ranks, SGLang needs a rank
    dataclasses.replace(switch("--enable-lora"), checked_late=True, words=("lora",)),
    # FlashInfer's sampler (vLLM V1 v0.9.1 - v0.11.0): a switch of vLLM's, refused for SGLang by name
    dataclasses.replace(switch("--no-flashinfer"), checked_late=True, words=("flashinfer",)),
    # the sizing overrides (issue 28, engines/overrides.py): each refused, naming itself, by the engine or release
    # without it; --kv-cache-memory-bytes reads bytes as vLLM's human_readable_int does (8G = 8 GiB, 8g = 8e9)
    dataclasses.replace(switch("--enforce-eager", "--disable-cuda-graph"), checked_late=True,
                        words=("eager", "cuda graph")),
    dataclasses.replace(count_opt(("--max-total-tokens",), 1, MAX_TOKENS), checked_late=True,
                        words=("total tokens",)),
    dataclasses.replace(count_opt(("--num-gpu-blocks-override",), 1, MAX_TOKENS), checked_late=True,
                        words=("blocks",)),
    Opt(("--kv-cache-memory-bytes", "--kv-cache-memory"), st.sampled_from(["8G", "8g", "20G", "8589934592", "25.6g"]),
        st.sampled_from(["", " ", "0", "-1", "1.5G", "8GiB", "nan", "1e400", "$", "{}", "\U0001f4a5"]),
        st.sampled_from(["8K", " 8G ", "1t"]), checked_late=True, words=("kv cache memory",)),
    # VLLM_USE_V1 with a numeric --engine-version (0 or 1; against a label or SGLang: refused by name)
    dataclasses.replace(count_opt(("--vllm-use-v1",), 0, 1, 1), checked_late=True, words=("v1", "v0", "vllm")),
    dataclasses.replace(count_opt(("--max-loras", "--max-loras-per-batch"), 1, 1024, 64), checked_late=True,
                        words=("lora",)),
    dataclasses.replace(count_opt(("--max-lora-rank",), 1, 4096, 512), checked_late=True, words=("lora", "rank")),
    # above the GPU's memory refused (GpuSpec.cuda_visible_problem): a valid size may not fit the GPU drawn
    Opt(("--cuda-visible-memory",), st.sampled_from(["79.22GiB", "85GB", "80 GiB", "81559MiB", "20Gi"]),
        st.sampled_from(["", " ", "0", "0GiB", "-1GiB", "1e400GiB", "nanGiB", "infGB", "80", "80 furlongs", "1e3GB",
                         "99999999999999999999999999GiB", "$", "{}", "80GiB80GiB", "80G", "1TiB", "100TB"]),
        st.sampled_from(["80gib", "1GB", "20 gi"]), checked_late=True, words=("memory", "size", "unit")),
    float_opt(("--non-torch-gib",), 0, MAX_GIB),
    float_opt(("--activation-gib",), 0, MAX_GIB),
]

#: `report --phase step`, `explain --phase step`, `serve`: the engine release whose kernels price the step
RELEASE = Opt(("--engine-version",), st.sampled_from(["0.9.0", "0.5.0", "0.7.4.dev181+gf35f8e22", "0.4.3.post2", "1.0"]),
              st.sampled_from(["", " ", "latest", "x.y", "$", "{}", "nan", "\U0001f4a5", "a" * 300]),
              st.sampled_from(["v0.9.0", "v1", "1.2.3.4.5", "0.8"]), checked_late=True, words=("engine",))
STEP_ENGINE = Opt(("--engine",), st.sampled_from(["vllm", "sglang", "tensorrt-llm"]),
                  st.sampled_from(["", " ", "trt", "vllm,sglang", "nope", "$", "{}", "\U0001f4a5", "a" * 300]),
                  st.sampled_from(["VLLM", "trtllm", "tensorrt_llm", " sglang "]), checked_late=True,
                  words=("engine",))
#: `serve` and `plot serve` (rooflab/cli/serve.py): the engines' scheduler options and the benchmark's workload
MAX_PROMPTS = 10_000_000
#: serve's -q and --weight-dtype are capacity's (DeploymentWords.resolve with the checkpoint)
SERVE_QUANT = [QUANT, dataclasses.replace(WDT, checked_late=True, words=("weight format", "weight-dtype"))]
SERVE_KV = Opt(("--kv-cache-dtype",), st.sampled_from(["auto", "fp8", "bf16", "fp16"]),
               st.sampled_from(["", " ", "fp4", "int8", "nope", "$", "{}", "\U0001f4a5", "a" * 300]),
               st.sampled_from(["FP8", "bfloat16", "float16", "fp8_e5m2", "fp8_ds_mla", "auto "]), checked_late=True,
               words=("kv-cache-dtype", "KV"))
SERVE_OPTS = [
    Opt(("--engine",), st.sampled_from(["vllm", "sglang", "tensorrt-llm"]),
        st.sampled_from(["", " ", "trt", "vllm,sglang", "nope", "$", "{}", "\U0001f4a5", "a" * 300]),
        st.sampled_from(["VLLM", "SGLang", "trtllm", "tensorrt_llm", " vllm "]), checked_late=True, words=("engine",)),
    RELEASE,
    dataclasses.replace(count_opt(("--input-len", "--random-input-len"), 1, MAX_TOKENS, 8192), words=("input",)),
    dataclasses.replace(count_opt(("--output-len", "--random-output-len"), 1, MAX_TOKENS, 2048), words=("output",)),
    dataclasses.replace(float_opt(("--random-range-ratio",), 0, 1), words=("ratio", "range")),
    dataclasses.replace(choice_opt(("--lengths",), ["vllm", "inferencex"]), checked_late=True, words=("lengths",)),
    dataclasses.replace(count_opt(("--block-size", "--page-size"), 1, MAX_PAGE_SIZE, 4096), words=("page",)),
    UTIL_ANY,
    count_opt(("--max-num-seqs", "--max-running-requests", "--max_batch_size"), 1, MAX_TOKENS, 4096),
    count_opt(("--max-num-batched-tokens", "--chunked-prefill-size", "--max_num_tokens"), 1, MAX_TOKENS),
    switch("--enable-mixed-chunk", "--no-mixed-chunk"),
    dataclasses.replace(float_opt(("--prefix-cache-hit-rate",), 0, 0.999), words=("prefix", "hit rate")),
    # the step's parallelism and graphs (serve.Parallel): DP ranks and pipelines refused under load, naming them;
    # --ep N refused under vLLM (the default engine), naming vLLM's switch
    dataclasses.replace(DCP, checked_late=True), dataclasses.replace(DP, checked_late=True),
    dataclasses.replace(ENABLE_DP_ATTENTION, checked_late=True, words=("dp-attention", "data ranks")),
    dataclasses.replace(EP, flags=("--ep", "--ep-size", "--expert-parallel"), checked_late=True,
                        words=("expert parallel", "--ep", "EP")),
    dataclasses.replace(ENABLE_EP, checked_late=True, words=("expert",)),
    dataclasses.replace(count_opt(("--pp", "--pipeline-parallel-size", "--pp-size", "-pp"), 1, MAX_GPUS, 16),
                        checked_late=True, words=("pipeline", "--pp")),
    switch("--enforce-eager", "--disable-cuda-graph"),
]

IMPL = Opt(("--impl",), st.sampled_from(["rooflab", "rooflab_hopper", "torch_cudnn", "torch_flash"]),
           st.sampled_from(["", " ", "nope", "$", "{}", "\\", "\U0001f4a5", "a" * 300, "rooflab "]),
           st.sampled_from(["ROOFLAB", "torch_eager"]), checked_late=True)

#: Every command and its options; test_every_option_is_fuzzed holds this against `--help`.
COMMANDS: dict[str, list[Opt]] = {
    "report": [MODEL, GPU, choice_opt(("--phase",), ["prefill", "decode", "step", "step"]), SEQ, BATCH, DTYPE, CAUSAL,
               CTX_LIST, PAGE, BLOCK, KV, KV_CACHE, SPLITS, count_opt(("--q-len",), 1, MAX_Q_LEN, 64),
               count_opt(("--prefill-chunk",), 1, MAX_TOKENS), CEIL, IMPL, SHAPE,
               dataclasses.replace(float_opt(("--published-tflops",), 0, 1e5, lo_open=True), words=("--shape",)),
               dataclasses.replace(choice_opt(("--convention",), ["fa", "fa_no_half"]), checked_late=True,
                                   words=("--shape", "--published-tflops", "convention")),
               switch("--must-fit", "--no-must-fit"), choice_opt(("--step",), ["decode", "prefill"]),
               # --phase step's deployment (each refused, naming itself, in another phase)
               TP_ANY, DCP, KVP, PCP,
               dataclasses.replace(count_opt(("--pp", "--pipeline-parallel-size", "--pp-size", "-pp"), 1, MAX_GPUS,
                                             16), words=("pipeline parallel",)),
               dataclasses.replace(count_opt(("--micro-batches",), 1, MAX_TOKENS, 64), words=("micro-batch", "--pp")),
               DP, ENABLE_DP_ATTENTION,
               dataclasses.replace(EP, flags=("--ep", "--ep-size", "--expert-parallel")), ENABLE_EP,
               dataclasses.replace(float_opt(("--expert-imbalance",), 1, 1e3), words=("imbalance",)),
               # --weight-dtype (a format) and -q (the engines' method): capacity's two options, one vocabulary
               dataclasses.replace(WDT, checked_late=True, words=("weight format", "weight-dtype")), QUANT,
               dataclasses.replace(choice_opt(("--gemm-dtype",), DTYPES), checked_late=True, words=("dtype", "GEMM")),
               Opt(("--speculative-config",),
                   st.sampled_from(['{"method": "eagle", "num_speculative_tokens": 3}',
                                    '{"method": "mtp", "num_speculative_tokens": 1}',
                                    '{"method": "ngram", "num_speculative_tokens": 4}',
                                    '{"method": "eagle3", "num_speculative_tokens": 2}',
                                    '{"model": "llama-3-8b", "num_speculative_tokens": 4}']),
                   st.sampled_from(["", " ", "{}", "[]", "null", "{", "3", '"eagle"', '{"method": "eagle"}',
                                    '{"num_speculative_tokens": 3}', '{"method": "nope", "num_speculative_tokens": 3}',
                                    '{"method": "eagle", "num_speculative_tokens": 0}',
                                    '{"method": "eagle", "num_speculative_tokens": -1}',
                                    '{"method": "eagle", "num_speculative_tokens": 1e400}',
                                    '{"method": "eagle", "num_speculative_tokens": NaN}',
                                    '{"method": "eagle", "num_speculative_tokens": "3"}',
                                    '{"method": "eagle", "num_speculative_tokens": true}',
                                    '{"method": "eagle", "num_speculative_tokens": 2.5}',
                                    '{"method": "eagle", "num_speculative_tokens": 10000000000000000000}',
                                    '{"method": ["eagle"], "num_speculative_tokens": 3}',
                                    '{"method": null, "num_speculative_tokens": 3}',
                                    '{"method": "draft_model", "num_speculative_tokens": 3}',
                                    '{"model": "nope", "num_speculative_tokens": 3}',
                                    '{"model": 7, "num_speculative_tokens": 3}', "$", "\U0001f4a5"]),
                   st.sampled_from(['{"method": "EAGLE", "num_speculative_tokens": 3}',
                                    '{"method": "deepseek_mtp", "num_speculative_tokens": 1}',
                                    '{"method": "eagle", "num_speculative_tokens": 3, "extra": 1}',
                                    '{"method": "eagle", "num_speculative_tokens": 64}']),
                   checked_late=True, words=("speculative", "num_speculative_tokens", "method", "draft")),
               dataclasses.replace(choice_opt(("--speculative-algorithm",), ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE",
                                                                             "NGRAM"]),
                                   checked_late=True, words=("speculative",)),
               dataclasses.replace(count_opt(("--speculative-num-draft-tokens",), 2, 65, 65), words=("speculative",)),
               dataclasses.replace(count_opt(("--speculative-num-steps",), 1, 64, 64), checked_late=True,
                                   words=("speculative",)),
               dataclasses.replace(count_opt(("--speculative-eagle-topk",), 1, 64, 64), checked_late=True,
                                   words=("speculative", "topk", "tree")),
               dataclasses.replace(Opt(("--speculative-draft-model-path",), *_name_values("models", MODEL_NAMES)),
                                   kind_word="model", checked_late=True, words=("speculative", "draft")),
               dataclasses.replace(float_opt(("--acceptance-rate",), 0, 1), words=("acceptance",)),
               switch("--enforce-eager", "--disable-cuda-graph"),
               switch("--fused-elementwise", "--unfused-elementwise"), UTIL_ANY, STEP_ENGINE, RELEASE,
               FMT],
    "capacity": [MODEL, GPU, dataclasses.replace(count_opt(("--context-len", "-L"), 1, MAX_TOKENS),
                                                 words=("context length",)), PAGE, WDT, KV, UTIL,
                 float_opt(("--activation-reserve-gib",), 0, MAX_GIB), MAXLEN, TP,
                 dataclasses.replace(count_opt(("--shared-prefix",), 0, MAX_TOKENS, 4096), words=("shared prefix",)),
                 EP, switch("--dp-attention", "--no-dp-attention"), DP, ENABLE_DP_ATTENTION, ENABLE_EP,
                 choice_opt(("--window-allocation",), ["hybrid", "full"]), DCP, KVP, QUANT,
                 # --pp: a stage count the model's layers may not allow (checked when the model is known)
                 dataclasses.replace(count_opt(("--pp", "--pipeline-parallel-size", "--pp-size", "-pp"), 1, MAX_GPUS,
                                               16), checked_late=True, words=("pipeline", "--pp", "stage")),
                 Opt(("--pp-layer-partition",), st.sampled_from(["16,16", "40,40", "1,31", "8,8,8,8"]),
                     st.sampled_from(["", " ", ",", "a,b", "40,", "0,32", "-1,33", "1e400", "nan", "$", "{}",
                                      "\U0001f4a5", "9" * 40]),
                     st.sampled_from(["16, 16", " 16,16 "]), checked_late=True, words=("--pp-layer-partition", "--pp")),
                 dataclasses.replace(choice_opt(("--dtype",), ["auto"] + DTYPES), words=("dtype",)),
                 # vLLM V1's multimodal profile (a vision-language model's encoder cache): checked with --engine vllm
                 Opt(("--limit-mm-per-prompt",), st.sampled_from(['{"image": 0}', '{"image": 2}', '{}']),
                     st.sampled_from(["", "{", "[]", '{"image": -1}', '{"image": "x"}', '{"video": 1}', "nan",
                                      '{"image": 1e400}', "\U0001f4a5"]),
                     st.sampled_from(['{"image": 999}']), checked_late=True, words=("--limit-mm-per-prompt",)),
                 dataclasses.replace(switch("--skip-mm-profiling"), checked_late=True),
                 *ENGINE_OPTS, FMT],
    "numerics": [DTYPE, count_opt(("--seq-len", "-T"), 2, MAX_TOKENS), float_opt(("--logit-std",), 0, MAX_LOGIT_STD, True),
                 FMT],
    "explain": [choice_opt(("--variant", "-v"), [v.value for v in EXPLAINED]), MODEL, GPU, SEQ, BATCH,
                DTYPE, CAUSAL, CTX_LIST, PAGE, KV, SPLITS, CEIL, choice_opt(("--format", "-f"), ["text", "markdown"]),
                Opt(("--layer-type",), st.sampled_from(["full"]), st.sampled_from(["", " ", "nope", "$", "{}", "\\",
                                                                                  "FULL", "full ", "\U0001f4a5"]),
                    st.sampled_from(["sliding", "mla", "linear"]), checked_late=True, words=("layer type",)),
                count_opt(("--q-len",), 1, MAX_Q_LEN, 64), switch("--mla-sparse-fp8", "--no-mla-sparse-fp8"), IMPL,
                BLOCK, KV_CACHE, SHAPE, TP, TP_SIZE, DCP, KVP],
    "list gpus": [FMT],
    "list models": [FMT],
    "plot roofline": [MODEL, GPU_LIST, SEQ, BATCH, DTYPE, CAUSAL, count_opt(("--decode-batch",), 1, MAX_BATCH, 4096),
                      switch("--flash-tiled", "--no-flash-tiled"), switch("--exp-roof", "--no-exp-roof"),
                      Opt(("--measurements",), st.just(str(SMALL_CSV)),
                          st.sampled_from(["", "missing.csv", ".", str(HARDWARE / "h100-sxm.yaml"), "/etc/passwd",
                                           str(MEASUREMENTS)]), checked_late=True)],
    "plot memory": [MODEL, GPU_LIST, count_opt(("--batch", "-b"), 1, MAX_BATCH, 4096), DTYPE,
                    count_opt(("--max-seq-len",), 512, MAX_TOKENS)],
    "plot time": [MODEL, GPU, count_opt(("--batch", "-b"), 1, MAX_BATCH, 4096), DTYPE, CAUSAL, SEQ,
                  count_opt(("--max-seq-len",), 512, MAX_TOKENS)],
    "plot decode": [MODEL, GPU, list_opt(("--batch", "-b"), 1, MAX_BATCH, 4096), PAGE, BLOCK, DTYPE, KV, KV_CACHE,
                    count_opt(("--max-context-len",), 512, MAX_TOKENS)],
    "plot capacity": [MODEL, GPU, PAGE, BLOCK, WDT, QUANT, KV, KV_CACHE, UTIL, MEM_FRAC, MAXLEN, TP, TP_SIZE],
    "plot validation": [switch("--peers", "--no-peers")],
    "fit": [GPU, FMT],
    "schema": [],
    "validate": [GPU, FMT, Opt(("--fit-from",), st.sampled_from([str(MEASUREMENTS / "h200-splits.csv")]),
                               st.sampled_from(["", "missing.csv", ".", str(HARDWARE / "h100-sxm.yaml"), "/etc/passwd",
                                                str(MEASUREMENTS)]), checked_late=True),
                 switch("--wide"), switch("--published")],
    "calibrate": [GPU, float_opt(("--copy-gib",), 0.01, 64), switch("--collectives"),
                  dataclasses.replace(switch("--fp8"), never=True),      # times fp8 GEMMs through PyTorch on the GPU
                  count_opt(("--nproc",), 2, 64, 8),
                  Opt(("--from",), st.sampled_from([str(SMALL_CSV)]), st.sampled_from(BAD_PATHS), checked_late=True)],
    "bench": [GPU, choice_opt(("--kernel", "-k"), ["naive", "flash", "paged", "merge"]), switch("--quick"),
              switch("--torch", "--no-torch"), count_opt(("--repeats",), 3, 10_000, 50), switch("--second-campaign"), switch("--new-kernels"),
              # each a campaign on the GPU, not a modifier: never drawn
              dataclasses.replace(switch("--gap-campaign"), never=True),
              dataclasses.replace(switch("--mla-sweep"), never=True),
              # --distributed launches torchrun (with --cpu, on this machine's CPUs): never drawn
              dataclasses.replace(switch("--distributed"), never=True), dataclasses.replace(switch("--cpu"), never=True),
              dataclasses.replace(count_opt(("--nproc",), 1, 64, 8), never=True),
              dataclasses.replace(Opt(("--section",), st.sampled_from(["check"]), st.sampled_from(["nope"])),
                                  never=True)],
    "serve": [MODEL, GPU, *SERVE_OPTS, TP_ANY, *SERVE_QUANT, SERVE_KV,
              list_opt(("--max-concurrency",), 1, MAX_TOKENS, 256),
              Opt(("--request-rate",), st.sampled_from(["1", "0.5", "20", "inf", "1e3", "Infinity"]),
                  st.sampled_from(NOT_NUMBERS[:9] + ["0", "-1", "1e10", "1e400", "-inf", "1,5", "$", "5e-324x"]),
                  st.sampled_from(["INF", " inf ", "1e-300", "5e-324", "1e9"]), words=("rate",)),
              dataclasses.replace(float_opt(("--burstiness",), 0, 1e6, lo_open=True), words=("--request-rate",)),
              dataclasses.replace(count_opt(("--num-prompts",), 1, MAX_PROMPTS, 200), words=("--request-rate",)),
              switch("--simulate"), count_opt(("--seed",), 0, 2**31),
              *(Opt((flag,), st.sampled_from(["200ms", "0.2s", "0.2", "30ms", "1s", "5e-3"]),
                    st.sampled_from(["", " ", "ms", "s", "0ms", "0", "-1s", "nan", "nanms", "infms", "inf", "1e400s",
                                     "abc", "1h", "200 millis", "$", "{}", "\U0001f4a5", "2e6s"]),
                    st.sampled_from(["200 ms", "0.2 s", "1e-300s", "1000000s", "200MS"]), words=("time",))
                for flag in ("--ttft-slo", "--tpot-slo")),
              dataclasses.replace(float_opt(("--target-rate",), 0, 1e12, lo_open=True), words=("--ttft-slo",)),
              FMT],
    "plot serve": [MODEL, GPU_LIST, *SERVE_OPTS,
                   dataclasses.replace(list_opt(("--tensor-parallel-size", "--tp", "-tp"), 1, MAX_GPUS, 16),
                                       words=("tensor parallel", "--tp")),
                   *SERVE_QUANT, SERVE_KV, list_opt(("--max-concurrency",), 1, MAX_TOKENS, 256)],
}
# every chart with a length axis takes --lengths (a comma list, instead of the default grid)
for _chart in ("plot memory", "plot time", "plot decode", "plot capacity"):
    COMMANDS[_chart].append(list_opt(("--lengths",), 1, MAX_TOKENS))
# explain --phase step takes report --phase step's options (declared once, in rooflab/cli/report.py) and --json
_EXPLAIN_FLAGS = {f for o in COMMANDS["explain"] for f in o.flags}
COMMANDS["explain"] += [choice_opt(("--phase",), ["step"]), switch("--json")] + [
    o for o in COMMANDS["report"] if o.flags[0] not in _EXPLAIN_FLAGS and o.flags[0] in {
        "--step", "--pcp", "--pp", "--micro-batches", "--dp", "--enable-dp-attention", "--ep",
        "--enable-expert-parallel", "--expert-imbalance", "--weight-dtype", "--quantization", "--gemm-dtype",
        "--speculative-config", "--speculative-algorithm", "--speculative-num-draft-tokens", "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-draft-model-path", "--acceptance-rate", "--enforce-eager", "--fused-elementwise",
        "--gpu-memory-utilization", "--prefill-chunk", "--engine", "--engine-version"}]

# serve and plot serve take report --phase step's speculative options (declared once, in rooflab/cli/report.py)
_SPECULATIVE_FLAGS = {"--speculative-config", "--speculative-algorithm", "--speculative-num-draft-tokens",
                      "--speculative-num-steps", "--speculative-eagle-topk",
                      "--speculative-draft-model-path", "--acceptance-rate"}
for _serve in ("serve", "plot serve"):
    COMMANDS[_serve] += [o for o in COMMANDS["report"] if o.flags[0] in _SPECULATIVE_FLAGS]

#: Commands that write an image (-o) or a file.
PLOTS = [c for c in COMMANDS if c.startswith("plot ")]
OUTPUT_FLAGS = {c: ("--output", "-o") for c in PLOTS + ["validate", "calibrate", "bench", "fit", "schema"]}
DEFAULT_OUTPUT = {"plot roofline": "roofline.png", "plot memory": "memory.png", "plot time": "time.png",
                  "plot decode": "decode.png", "plot capacity": "capacity.png", "plot validation": "validation.png",
                  "plot serve": "serve.png", "bench": "rooflab-bench.csv", "fit": "h200-sxm.yaml"}
#: Commands that also write the chart's numbers (--data: .csv or .json, the suffix picks; no default name).
DATA_FLAGS = {c: ("--data",) for c in PLOTS}
#: Time bound of one call per command (CI has 2 slow cores; a plot or a fit takes about a second here).


def _flag_and_value(opt: Opt, value: str, long: bool) -> list[str]:
    flag = opt.flags[0] if long or len(opt.flags) == 1 else opt.flags[-1]
    if value.startswith("-") and value != "-":
        return [f"{opt.flags[0]}={value}"]          # `-b -1` would read -1 as an option
    return [flag, value]


def _idents(opt: Opt, value: Optional[str]) -> list[str]:
    out = [f for f in opt.flags if f.startswith("--")]
    if opt.kind_word:
        out.append(f"{opt.kind_word} '")
    out += list(opt.words)
    if value is not None and value.strip():
        out.append(value)
    return out


def _output_case(data, command: str, folder: Path) -> tuple[list[str], list[Path], list[str], Optional[int]]:
    """-o for commands that write: a good path, or a bad one (must be refused), or none (the default name)."""
    if command not in OUTPUT_FLAGS:
        return [], [], [], None
    image = command.startswith("plot")
    exts = [".png", ".svg", ".pdf"] if image else [".yaml", ".yml"] if command in ("fit", "calibrate") else \
        [".json"] if command == "schema" else [".txt", ".md", ".json", ""]
    ext = data.draw(st.sampled_from(exts), "ext")
    (folder / "existing-dir").mkdir(exist_ok=True)
    kind = data.draw(st.sampled_from(["good", "good", "good", "default", "odd-name", "missing-folder", "folder",
                                      "dot", "empty", "bad-ext", "trailing-slash"] if image else
                                     ["good", "good", "default", "odd-name", "missing-folder", "folder", "dot", "empty",
                                      "trailing-slash"]), "output kind")
    if kind == "trailing-slash":    # 'out.png/' names a folder; writing out.png instead is accepted here
        return ["-o", f"out{ext}/"], [folder / f"out{ext}"], [], None
    if kind == "default":
        default = DEFAULT_OUTPUT.get(command)
        return [], ([folder / default] if default else []), [], None
    if kind == "good":
        return ["-o", f"out{ext}"], [folder / f"out{ext}"], [], None
    if kind == "odd-name":
        name = data.draw(st.sampled_from(["$x{}", "a b", "\u00e9\U0001f4a5", "x\\y", "%d", "-dash", "OUT"]), "name")
        return ["-o", f"{name}{ext}"], [folder / f"{name}{ext}"], [], None
    bad_path = {"missing-folder": f"no/such/folder/out{ext}", "folder": "existing-dir", "dot": ".", "empty": "",
                "bad-ext": "out.txt", "trailing-slash": f"out{ext}/"}[kind]
    idents = ["--output", "-o", "out.txt", "existing-dir", "no/such/folder", "folder", "empty", "extension"]
    return ["-o", bad_path], [], idents, 2


def _data_case(data, command: str, folder: Path) -> tuple[list[str], list[Path], list[str], Optional[int]]:
    """--data for the charts: none, a good .csv or .json, or a bad one (must be refused, the image not left behind)."""
    if command not in DATA_FLAGS:
        return [], [], [], None
    kind = data.draw(st.sampled_from(["none", "none", "csv", "json", "odd-name", "bad-ext", "no-ext", "empty",
                                      "missing-folder", "folder", "image"]), "data kind")
    if kind == "none":
        return [], [], [], None
    if kind in ("csv", "json"):       # the file is written under the name given, its case kept
        name = f"numbers.{kind.upper() if data.draw(st.booleans(), 'upper') else kind}"
        return ["--data", name], [folder / name], [], None
    if kind == "odd-name":
        name = data.draw(st.sampled_from(["$x{}.csv", "a b.json", "\u00e9\U0001f4a5.csv", "-dash.json"]), "name")
        return [f"--data={name}"], [folder / name], [], None
    (folder / "existing.csv").mkdir(exist_ok=True)
    bad_path = {"bad-ext": "numbers.txt", "no-ext": "numbers", "empty": "", "missing-folder": "no/such/folder/d.csv",
                "folder": "existing.csv", "image": "numbers.png"}[kind]
    return [f"--data={bad_path}"], [], ["--data", "numbers", "existing.csv", "no/such/folder", "empty", ".csv"], 2


def build_case(data, command: str, folder: Path) -> Case:
    """A generated call of `command`: up to three valid options and at most one bad or odd one."""
    opts = [o for o in COMMANDS[command] if not o.never]
    if command in ("calibrate", "bench") and HAS_CUPY:
        mode = "bad"            # a valid call would really run on this machine's GPU
    else:
        mode = data.draw(st.sampled_from(["bad", "bad", "bad", "odd", "valid", "valid"]), "mode")
    candidates = [o for o in opts if not o.switch and (mode != "odd" or o.odd is not None)] if mode != "valid" else opts
    by_name = {o.flags[0]: o for o in opts}
    target = by_name[data.draw(st.sampled_from([o.flags[0] for o in candidates]), "option")] \
        if candidates and mode != "valid" else None
    others = [o.flags[0] for o in opts if o is not target]
    chosen = [by_name[n] for n in data.draw(st.lists(st.sampled_from(others), max_size=3, unique=True), "others")] \
        if others else []
    args: list[str] = command.split()
    idents: list[str] = []
    late: list[str] = []
    for opt in chosen:
        long = data.draw(st.booleans(), "long")
        if opt.switch:
            args.append(data.draw(st.sampled_from(opt.flags), "switch"))
            late += list(opt.flags)
            continue
        value = data.draw(opt.valid, f"{opt.flags[0]} value")
        args += _flag_and_value(opt, value, long)
        late += _idents(opt, value)     # a valid option may still be refused in this combination
    expect = None
    if target is not None:
        pool = target.bad if mode == "bad" else target.odd
        value = data.draw(pool, f"{target.flags[0]} {mode} value")
        args += _flag_and_value(target, value, data.draw(st.booleans(), "long"))
        idents += _idents(target, value)
        expect = 2 if mode == "bad" else None
    if command in ("calibrate", "bench") and not (mode == "bad" and target is GPU):
        idents.append("CuPy")      # no GPU here: that refusal comes first (a bad --gpu must still be named)
    extra, outputs, out_idents, out_expect = _output_case(data, command, folder)
    args += extra
    if out_expect is not None:
        idents += out_idents
        expect = expect if expect is not None else None if mode == "odd" else 2
    extra, data_outputs, data_idents, data_expect = _data_case(data, command, folder)
    args += extra
    outputs = outputs + data_outputs if out_expect is None and data_expect is None else []
    if data_expect is not None:
        idents += data_idents
        expect = expect if expect is not None else None if mode == "odd" else 2
    inputs = [SMALL_CSV] if any(a.startswith(str(MEASUREMENTS)) for a in args) else []
    if command in ("validate", "plot validation", "fit"):
        # no FILE: validate and plot validation fit the bundled dataset (35-45 s on 2 cores), so only beside a bad
        # option (refused first); tests/cli/test_measure.py runs that default whole
        kinds = ["small", "small", "missing", "folder", "yaml", "empty-arg"]
        file_kind = data.draw(st.sampled_from(kinds + ["none"] if mode == "bad" and target is not None or
                                              command == "fit" else kinds), "file")
        file_arg = {"small": str(SMALL_CSV), "missing": "missing.csv", "folder": str(MEASUREMENTS),
                    "yaml": str(HARDWARE / "h100-sxm.yaml"), "empty-arg": "", "none": None}[file_kind]
        if file_arg is not None:
            args.insert(len(command.split()), file_arg)
            inputs.append(SMALL_CSV)
        if file_kind in ("missing", "folder", "yaml", "empty-arg"):
            idents += [file_arg, "FILE", "empty", "''"] if file_arg else ["FILE", "empty", "''"]
            expect = 2
        if file_kind == "none" and command == "fit":
            idents += ["FILES", "Missing argument", "files"]
            expect = 2
        elif file_kind == "none":
            inputs.append(MEASUREMENTS / "h200-sweep.csv")
    if command == "schema":
        which = data.draw(st.sampled_from(["gpu", "model", "gpu", "model", "", "GPU", "nope", "measurements", None]),
                          "which")
        if which is not None:
            args.insert(1, which)
        if which not in ("gpu", "model"):
            idents += ["which", "WHICH", "Missing argument", "gpu", "model"]
            expect = 2
    fmt = "json" if command == "schema" and "-o" not in args else None
    for i, a in enumerate(args):
        if a in ("-f", "--format") and i + 1 < len(args):
            fmt = args[i + 1]
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
    if "CuPy" in idents and out_idents:
        idents.remove("CuPy")      # a bad -o must be refused before an hour of measuring, not after
    return Case(args, idents + late if idents else late, expect, outputs, inputs, json=fmt == "json", note=f"{mode} value")


def fuzz(command: str, data) -> None:
    with scratch() as folder:
        check_cli(build_case(data, command, folder), folder)


# --- the generated calls, one test per command -------------------------------------------------------------

@fuzz_settings(60)
@given(st.data())
def test_fuzz_report(data):
    fuzz("report", data)


@fuzz_settings(50)
@given(st.data())
def test_fuzz_capacity(data):
    fuzz("capacity", data)


@fuzz_settings(30)
@given(st.data())
def test_fuzz_numerics(data):
    fuzz("numerics", data)


@fuzz_settings(40)
@given(st.data())
def test_fuzz_explain(data):
    fuzz("explain", data)


@fuzz_settings(8)
@given(st.data())
def test_fuzz_list(data):
    fuzz(data.draw(st.sampled_from(["list gpus", "list models"])), data)


@pytest.mark.parametrize("command", PLOTS)
@fuzz_settings(8)
@given(data=st.data())
def test_fuzz_plot(command, data):
    fuzz(command, data)


@fuzz_settings(20)
@given(st.data())
def test_fuzz_validate(data):
    fuzz("validate", data)


@fuzz_settings(12)
@given(st.data())
def test_fuzz_schema(data):
    fuzz("schema", data)


@pytest.mark.parametrize("command", ["calibrate", "bench"])
@fuzz_settings(10)
@given(data=st.data())
def test_fuzz_gpu_commands(command, data):
    fuzz(command, data)


def test_every_command_is_fuzzed():
    """Every command `rooflab --help` (and its groups) lists is in the fuzz catalog."""
    with scratch() as folder:
        listed = set()
        for group in ([], ["list"], ["plot"]):
            out = invoke([*group, "--help"], folder)
            block = out.stdout.split("Commands:", 1)[-1]
            names = re.findall(r"^\s{2}([a-z][a-z-]*)\s", block, re.MULTILINE)
            listed |= {" ".join([*group, n]) for n in names if n not in ("list", "plot")}
        missing = sorted(listed - set(COMMANDS))
        assert not missing, f"commands not in the fuzz catalog: {missing}"


def test_every_option_is_fuzzed():
    """The catalog above covers every option each command's --help lists (a new option gets fuzzed or this fails)."""
    with scratch() as folder:
        for command, opts in COMMANDS.items():
            out = invoke([*command.split(), "--help"], folder)
            assert out.code == 0, out.describe()
            defined = [line for line in out.stdout.splitlines() if re.match(r"\s{1,4}(-\w+, )?--[a-z]", line)]
            listed = {m for line in defined for m in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*)", line.split("  ")[1]
                                                               if line.startswith("  -") else line)} - {"--help"}
            known = {f for o in opts for f in o.flags} | {"--output", *DATA_FLAGS.get(command, ())} | \
                {f"--no-{f[2:]}" for o in opts for f in o.flags}
            missing = sorted(listed - known)
            assert not missing, f"rooflab {command}: options not in the fuzz catalog: {missing}"


# --- explicit cases: each bad input an earlier hostile run found, and its neighbours ---------------------------

def _case(args, idents=(), expect=2, fmt_json=False, outputs=(), inputs=(), note=""):
    return Case(list(args), list(idents), expect, list(outputs), list(inputs), json=fmt_json,
                note=note)


REGRESSIONS = [
    # numbers past what is real, or not numbers
    _case(["report", "-b", "10000000000000000000"], ["--batch"], note="10**19 batch"),
    _case(["report", "-b", "1e18"], ["--batch"]),
    _case(["report", "-T", "1e160"], ["--seq-len"]),
    _case(["report", "-T", "1e400"], ["--seq-len"]),
    _case(["report", "-T", "9" * 400 + "k"], ["--seq-len"], note="a count past a float"),
    _case(["report", "-T", "9" * 400], ["--seq-len"]),
    _case(["report", "--phase", "decode", "--splits", "1000000000"], ["--splits"]),
    _case(["report", "--phase", "decode", "-b", "1000000000"], ["--batch"]),
    _case(["report", "--phase", "decode", "-L", "lots"], ["--context-len", "lots"]),
    _case(["numerics", "--logit-std", "1e308"], ["--logit-std"]),
    _case(["numerics", "--logit-std", "nan"], ["--logit-std"]),
    _case(["numerics", "--logit-std", "inf"], ["--logit-std"]),
    _case(["numerics", "--logit-std", "0"], ["--logit-std"]),
    _case(["numerics", "--logit-std", "5e-324"], ["--logit-std"], expect=None, note="the smallest subnormal"),
    _case(["capacity", "--activation-reserve-gib", "nan"], ["--activation-reserve-gib"]),
    _case(["capacity", "--activation-reserve-gib", "inf"], ["--activation-reserve-gib"]),
    _case(["capacity", "--activation-reserve-gib", "1e400"], ["--activation-reserve-gib"]),
    _case(["capacity", "--activation-reserve-gib", "-1"], ["--activation-reserve-gib"]),
    _case(["capacity", "-L", "8192", "--shared-prefix", "8192"], ["--shared-prefix", "shared prefix"]),
    _case(["capacity", "-L", "8192", "--shared-prefix", "9000"], ["--shared-prefix", "shared prefix"]),
    _case(["capacity", "--gpu-memory-utilization", "0"], ["--gpu-memory-utilization"]),
    _case(["capacity", "--gpu-memory-utilization", "1.5"], ["--gpu-memory-utilization"]),
    # 0 and '' are values, not "not given"
    _case(["plot", "memory", "--max-seq-len", "0", "-o", "m.png"], ["--max-seq-len"]),
    _case(["report", "--phase", "decode", "-L", ""], ["--context-len"]),
    _case(["report", "--phase", "decode", "-L", " "], ["--context-len"]),
    _case(["report", "--phase", "decode", "-L", "1k,,2k"], ["--context-len"]),
    _case(["report", "-L", ""], ["--context-len"], note="-L '' in a prefill report: a bad value, even if unused"),
    _case(["report", "-L", "lots"], ["--context-len"], note="-L lots in a prefill report"),
    _case(["report", "--phase", "decode", "--splits", "0"], ["--splits"]),
    _case(["report", "--page-size", "0"], ["--page-size"]),
    _case(["report", "-b", "0"], ["--batch"]),
    _case(["report", "-T", "0"], ["--seq-len"]),
    _case(["capacity", "--max-model-len", "0"], ["--max-model-len"]),
    _case(["capacity", "--tp", "0"], ["--tensor-parallel", "--tp"]),
    _case(["validate", ""], ["FILE", "empty", "''"], note="an empty path is not the current folder"),
    _case(["validate", str(SMALL_CSV), "-o", ""], ["--output", "empty", "''"], inputs=[SMALL_CSV],
          note="an empty -o is not the current folder"),
    _case(["plot", "roofline", "-o", ""], ["--output", "empty", "''"], note="an empty -o is not the current folder"),
    _case(["plot", "memory", "-g", ""], ["--gpu"]),
    _case(["plot", "decode", "-b", ""], ["--batch"]),
    # names
    _case(["report", "--gpu", "nope"], ["nope"]),
    _case(["report", "--gpu", "h100"], ["h100"]),
    _case(["report", "--model", "llama3-8b"], ["llama3-8b"]),
    _case(["report", "--gpu", ""], ["--gpu", "GPU ''"]),
    _case(["report", "--gpu", "a" * 100_000], ["--gpu", "GPU '"], note="a 100k-character name: one short line"),
    _case(["report", "--model", str(MODELS)], [str(MODELS)]),
    _case(["report", "--gpu", "/etc/passwd"], ["/etc/passwd"]),
    _case(["report", "--gpu", "missing/dir/gpu.yaml"], ["missing/dir/gpu.yaml"]),
    _case(["report", "--ceilings", "calibrated", "--gpu", "h100-sxm"], ["h100-sxm", "measured"],
          note="calibrated ceilings need a measured: section"),
    # huge work: closed form or refused with the limit named
    _case(["report", "--phase", "decode", "-b", str(MAX_BATCH), "-L", str(MAX_TOKENS), "-f", "json"], expect=0,
          fmt_json=True, note="the largest uniform decode batch, closed form"),
    _case(["report", "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH), "-f", "json"], expect=0, fmt_json=True,
          note="the largest prefill: figures near 1e33, still finite"),
    _case(["report", "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH)], expect=0, note="the largest prefill, as a table"),
    _case(["explain", "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH)], expect=0, note="explain at the limits"),
    _case(["explain", "-v", "merge", "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH)], expect=0),
    _case(["explain", "-v", "split_kv", "-L", str(MAX_TOKENS), "-b", str(MAX_BATCH), "--splits", str(MAX_SPLITS)],
          expect=0),
    _case(["report", "--phase", "decode", "--splits", str(MAX_SPLITS), "-L", "1"], expect=0,
          note="more splits than tokens"),
    _case(["report", "--phase", "decode", "--page-size", str(MAX_PAGE_SIZE), "-L", str(MAX_TOKENS), "-b",
           str(MAX_BATCH), "--splits", str(MAX_SPLITS), "-f", "json"], expect=0, fmt_json=True),
    _case(["report", "--phase", "decode", "-L", ",".join(["8192"] * 65536)], expect=0,
          note="the longest ragged list"),
    _case(["report", "--phase", "decode", "-L", ",".join(["8192"] * 65537)], ["--context-len"],
          note="one past the longest ragged list"),
    _case(["capacity", "-L", str(MAX_TOKENS), "--page-size", "1", "-f", "json"], fmt_json=True, expect=None),
    _case(["capacity", "--tp", str(MAX_GPUS), "--ep", str(MAX_GPUS), "-f", "json"], fmt_json=True, expect=None),
    _case(["capacity", "--activation-reserve-gib", str(MAX_GIB), "-f", "json"], ["--activation-reserve-gib",
          "reserve", "activation"], fmt_json=True, expect=None),
    _case(["numerics", "-T", str(MAX_TOKENS), "--logit-std", str(MAX_LOGIT_STD), "-f", "json"], fmt_json=True,
          expect=0),
    _case(["numerics", "--dtype", "fp8_e4m3", "-T", str(MAX_TOKENS), "--logit-std", str(MAX_LOGIT_STD)], expect=0),
    _case(["plot", "memory", "--max-seq-len", str(MAX_TOKENS), "-b", str(MAX_BATCH), "-o", "m.png"], expect=0,
          outputs=["m.png"]),
    _case(["plot", "time", "--max-seq-len", str(MAX_TOKENS), "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH), "-o",
           "t.png"], expect=0, outputs=["t.png"]),
    _case(["plot", "decode", "--max-context-len", str(MAX_TOKENS), "-b", str(MAX_BATCH), "-o", "d.png"], expect=0,
          outputs=["d.png"]),
    _case(["plot", "roofline", "-T", str(MAX_TOKENS), "-b", str(MAX_BATCH), "--decode-batch", str(MAX_BATCH), "-o",
           "r.png"], expect=0, outputs=["r.png"]),
    _case(["plot", "capacity", "--max-model-len", str(MAX_TOKENS), "--page-size", "1", "-o", "c.png"], expect=None,
          outputs=["c.png"]),
    # capacity's engine options
    _case(["capacity", "--kv-cache-dtype", ""], ["--kv-cache-dtype"], note="'' is a value, not 'auto'"),
    _case(["capacity", "--engine", "tensorrt-llm"], ["--engine", "TensorRT-LLM", "KV-cache accounting"],
          note="an engine rooflab models for step / serve, not for capacity"),
    _case(["capacity", "--engine", "vllm", "--kv-cache-dtype", ""], ["--kv-cache-dtype"],
          note="'' is a value, not 'auto'"),
    _case(["capacity", "--engine", "vllm", "--cuda-visible-memory", "99999999999999999999999999GiB"],
          ["--cuda-visible-memory"]),
    _case(["capacity", "--engine", "vllm", "--memory-in-use", "200GiB"], ["--memory-in-use", "nothing is free"]),
    _case(["capacity", "--engine", "vllm", "--memory-in-use", "20GiB"], ["--memory-in-use", "refuse to start"],
          note="vLLM V1's start-up check: free below utilisation x total"),
    _case(["capacity", "--engine", "sglang", "-m", "qwen3-next-80b-a3b", "-tp", "4", "--mamba-cache-mode", "align"],
          ["--mamba-cache-mode", "vLLM's"]),
    _case(["capacity", "--engine", "vllm", "--mamba-ssm-dtype", "float32"], ["--mamba-ssm-dtype", "linear-attention"],
          note="a state option on a model without linear layers"),
    _case(["capacity", "--engine", "vllm", "--enable-lora", "--max-lora-rank", "24"], ["--max-lora-rank"]),
    _case(["capacity", "--engine", "sglang", "--enable-lora"], ["--enable-lora", "--max-lora-rank"]),
    _case(["capacity", "-m", "llama-3-8b", "--engine-log", ""], ["--engine-log", "empty", "''"],
          note="an empty path is not the current folder"),
    _case(["capacity", "-m", "llama-3-8b", "--engine-log", "/etc/passwd"], ["/etc/passwd"]),
    *([_case(["capacity", "-m", "llama-3-8b", "--engine-log", str(ENGINE_LOGS[0]), "--what-if",
              "max-model-len=99999999999999999999999999999k"], ["--what-if", "max-model-len"]),
       _case(["capacity", "-m", "llama-3-8b", "--engine-log", str(ENGINE_LOGS[0]), "--what-if", "tp=4096"],
             ["tp", "tensor parallel"])] if ENGINE_LOGS else []),
    # the GPU commands: their options are checked before the device (no GPU here: CuPy is missing)
    _case(["calibrate", "--gpu", "nope"], ["nope"], note="a bad --gpu is named before the device is looked at"),
    _case(["bench", "--gpu", "nope"], ["nope"], note="a bad --gpu is named before the device is looked at"),
    _case(["bench", "-o", "no/such/folder/x.csv"], ["no/such/folder", "--output"],
          note="an unwritable -o is refused before measuring, not after the first case"),
    _case(["calibrate", "-o", "no/such/folder/x.yaml"], ["no/such/folder", "--output"],
          note="an unwritable -o is refused before measuring"),
    _case(["schema"], ["which", "WHICH"], note="a missing choice argument: two lines, not click's list of choices"),
    # outputs
    _case(["validate", str(SMALL_CSV), "-o", str(SMALL_CSV)], ["--output", "input", SMALL_CSV.name],
          inputs=[SMALL_CSV]),
    _case(["plot", "roofline", "-o", "x.txt"], ["x.txt"]),
    _case(["plot", "roofline", "-o", "no/such/folder/x.png"], ["no/such/folder"]),
    _case(["plot", "roofline", "-o", "r.png", "--data", "no/such/folder/d.csv"], ["--data", "no/such/folder"],
          note="a refused --data left the image behind and was named as -o"),
    _case(["plot", "serve", "-m", "llama-3-8b", "--max-concurrency", "1,4", "-o", "s.png", "--data", "existing"],
          ["--data", "existing"], note="--data without .csv or .json"),
    _case(["serve", "-f", "json"], expect=0, fmt_json=True,
          note="the defaults (llama-3-70b on one H100) did not fit: `rooflab serve` alone was refused"),
    _case(["plot", "serve", "-o", "s.png"], expect=0, outputs=["s.png"], note="the defaults fit"),
    _case(["plot", "memory", "-o", "/proc/x.png"], ["/proc/x.png"],
          note="a folder that takes no new files: the temporary file failed inside rooflab once"),
    # a hostile run's finds: a silently ignored option, a list that took minutes
    _case(["capacity", "-m", "llama-3-8b", "--ep", "2"], ["--ep", "expert parallel"],
          note="--ep on a dense model was printed as 'experts split 2 ways' and changed nothing"),
    _case(["capacity", "-m", "mixtral-8x7b", "--ep", "16"], ["--ep", "expert parallel"],
          note="more expert-parallel GPUs than the 8 experts"),
    _case(["capacity", "-m", "mixtral-8x7b", "--tp", "2", "--ep", "2", "-f", "json"], expect=0, fmt_json=True),
    _case(["capacity", "-m", "mixtral-8x7b", "--ep", "2"], ["--ep", "TP x PCP x DP"]),
    _case(["bench", "--section", "gemm"], ["--section", "--distributed"],
          note="--section without --distributed was ignored (the single-GPU bench ran, or CuPy was named instead)"),
    _case(["report", "--phase", "decode", "--q-len", "4", "-L", "2"], ["--q-len"],
          note="more new tokens than the context: the message named neither option"),
    _case(["capacity", "-m", "llama-3-8b", "--engine", "vllm", "--kv-cache-dtype", "fp8_ds_mla"],
          ["--kv-cache-dtype", "fp8_ds_mla"], note="DeepSeek's sparse MLA layout on a model without MLA: priced as fp8"),
    _case(["plot", "roofline", "-g", ",".join(["h100-sxm"] * 500), "-o", "r.png"], ["--gpu"],
          note="500 GPUs on one chart ran for minutes"),
    # session 7 (issue 24): paths the system refuses, repeated single-value options
    _case(["report", "-m", "m" * 300], ["m" * 100, "File name too long"],
          note="a model name longer than the system allows: exit 70 (OSError from Path.exists)"),
    _case(["validate", str(SMALL_CSV), "-o", "v" * 300 + ".csv"], ["v" * 100, "--output", "-o"],
          inputs=[SMALL_CSV], note="an output name longer than the system allows: exit 70"),
    _case(["report", "-b", "4", "-b", "8"], ["-b given 2 times"], note="click kept the last silently"),
    _case(["report", "--causal", "--no-causal"], ["--causal and --no-causal"], note="the last switch won silently"),
    _case(["report", "-T", "1k", "--seq-len=2k"], ["-T and --seq-len"]),
    _case(["validate", str(SMALL_CSV), "-f", "csv", "--format", "json"], ["-f and --format"], inputs=[SMALL_CSV]),
    _case(["report", "--phase", "decode", "-L", "1k", "-L", "2k"], expect=0, note="a list option still repeats"),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=lambda c: " ".join(c.args)[:80])
def test_regression(case):
    with scratch() as folder:
        case = dataclasses.replace(case, outputs=[folder / p for p in case.outputs])
        check_cli(case, folder)


def test_output_equal_to_input_through_a_symlink():
    with scratch() as folder:
        link = folder / "link.csv"
        os.symlink(SMALL_CSV, link)
        check_cli(_case(["validate", str(SMALL_CSV), "-o", str(link)], ["--output", "input", "link.csv"],
                        inputs=[SMALL_CSV]), folder)


def test_output_to_a_fifo_is_not_replaced_by_a_regular_file():
    """`-o /dev/stdout` or a named pipe: writing through a temp file and a rename would replace the device or pipe
    with a regular file (as root, /dev/stdout itself). Tested on a FIFO in a scratch folder."""
    with scratch() as folder:
        fifo = folder / "pipe.txt"
        os.mkfifo(fifo)
        out = invoke(["validate", str(SMALL_CSV), "-o", str(fifo)], folder)
        assert fifo.is_fifo(), f"the FIFO was replaced by a regular file\n{out.describe()}"
        assert out.code in (0, 2), out.describe()


def test_plot_with_a_dollar_in_the_gpu_display_name():
    """A $ or a backslash in a display name reached matplotlib's mathtext once; the chart must draw it as text."""
    text = (HARDWARE / "h100-sxm.yaml").read_text()
    with scratch() as folder:
        spec = folder / "gpu.yaml"
        spec.write_text(text.replace("display_name: NVIDIA H100 SXM5 80GB", "display_name: 'Cheap $GPU$ \\frac{a}{b} ^_ {}'"))
        for command in (["plot", "roofline"], ["plot", "memory"], ["plot", "time"], ["plot", "decode"],
                        ["plot", "capacity"]):
            check_cli(_case([*command, "--gpu", str(spec), "-o", "x.png"], expect=0, outputs=[folder / "x.png"],
                            inputs=[spec]), folder)
            (folder / "x.png").unlink()


def test_console_script_under_a_memory_limit():
    """The riskiest calls through a real process with 2 GiB of address space: bounded work, exit 0 or 2."""
    calls = [
        (["report", "--phase", "decode", "-b", str(MAX_BATCH), "-L", str(MAX_TOKENS), "--splits", str(MAX_SPLITS)], 0),
        (["report", "-b", "10000000000000000000"], 2),
        (["report", "--phase", "decode", "--splits", "1000000000"], 2),
    ]
    with scratch() as folder:
        for args, expect in calls:
            before = snapshot(folder)
            out = run_subprocess(args, folder)
            check_outcome(_case(args, expect=expect), out, folder, before, {})
