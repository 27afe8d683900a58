"""What several per-module test files share (not a test file: pytest collects nothing here).

- `refused`: an API call's bad-input error, its type, a short message naming what was wrong (the CLI's
  equivalent, exit 2 and one or two lines on stderr, lives with the CLI tests and the fuzz suites);
- model specs written for a layer type's rule (GEMMA3, DEEPSEEK, JAMBA_V01), each citing its source;
- measurement rows of the bench's cases without a GPU (`_row`, `_impl`, META), and hand-made rows and files
  for the records, validate and CLI tests (`_flash`, `_merge`, `_at_fraction`, `_file`, `_write_text`);
- the engine start-up logs and benchmarks/engine_capacity.py, loaded once;
- running the CLI (`invoke` through typer's CliRunner, `run_in_process` as the console script exits), reading
  a chart (`_by_gid`, `_texts`, `_legend_texts`), a table's words (`_words`), Llama-3-8B's heads (`heads`) and a
  config dict read as a spec (`read_config`), engine settings at a version (`vllm`, `sglang`).

Fixtures shared the same way (h100, llama, the bundled sweep's validation) live in tests/conftest.py.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

from rooflab.errors import InputError
from rooflab.fit.records import FORMAT_LINE, Measurement, V1_FIELDS
from rooflab.measure.cases import Case
from rooflab.vocab import Kernel

#: A message fits one or two terminal lines; the fuzz suite allows 4,000 characters, this is the intent.
SHORT = 400
#: An integer past every limit rooflab sets (and past int64).
HUGE = 10**60


def refused(call, *names: str, error: type = InputError) -> str:
    """Run `call`; it must raise `error` whose short message names each of `names` (case-insensitive)."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert len(message) <= SHORT, f"a message of {len(message):,} characters"
    for name in names:
        assert name.lower() in message.lower(), f"{name!r} not in: {message}"
    return message


# Model specs written for a layer type's rule (the explain and report tests share them); each cites its source.
_COMMON = "ffn_size: 8192\nvocab_size: 32000\nmax_context_len: 131072\n"

# Gemma 3 technical report: five local layers (window 1024) per global one; 27B: 62 layers, 32/16 heads of 128
GEMMA3 = """
name: gemma3-like
display_name: Gemma-3-like 5:1
num_layers: 62
hidden_size: 5376
num_qo_heads: 32
num_kv_heads: 16
head_dim: 128
source: Gemma 3 technical report (local:global 5:1, window 1024)
layer_types:
  local: {kind: sliding, window: 1024}
  global: {kind: full}
layer_pattern: [local, local, local, local, local, global]
""" + _COMMON

# DeepSeek-V3 technical report section 2.1.1 and its config.json
DEEPSEEK = """
name: deepseek-v3-like
display_name: DeepSeek-V3-like
num_layers: 61
hidden_size: 7168
num_qo_heads: {heads}
num_kv_heads: {heads}
head_dim: 192
v_head_dim: 128
source: DeepSeek-V3 technical report, section 2.1.1 (MLA)
layer_types:
  mla: {{kind: mla, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, q_lora_rank: 1536}}
""" + _COMMON

# Jamba-v0.1's shape as a config.json (the hf, engines and capacity tests share it): the keys rooflab's reader
# requires, with transformers' JambaConfig defaults (configuration_jamba.py, release 5.24.0, auto_docstring
# checkpoint ai21labs/Jamba-v0.1); every other key takes the same defaults (rooflab/hf/table.py). Not the
# checkpoint's own file: no verbatim copy of it could be collected.
JAMBA_V01 = {"architectures": ["JambaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536,
             "torch_dtype": "bfloat16"}


# Measurement rows of the bench's cases without a GPU (the bench and fit tests share them).
META = {"gpu_spec": "h200-sxm", "device_name": "NVIDIA H200", "date": "fixture"}
#: Timed repeats a row records.
REPEATS = 20


def _row(case: Case, impl: str = "rooflab", time_s: float = 1e-3) -> Measurement:
    return case.measurement(impl, time_s, time_s, time_s, REPEATS, 1e-3)


def _impl(case: Case) -> str:
    """The implementation rooflab's bench records on an H200 (ours.impl_name without a GPU): the wgmma kernels for
    flash (d 128) and for MLA with a 16-bit latent and >= 64 query rows a sequence."""
    if case.kernel is Kernel.flash_window:
        return "rooflab_hopper"
    if case.kernel is Kernel.mla_decode and case.kv_dtype is None and case.q_len * case.heads.num_qo_heads >= 64:
        return "rooflab_hopper"
    return "rooflab"


#: The engines' public start-up logs and the cases built on them (tests/data/engine_logs/SOURCES.md).
ENGINE_LOGS = Path(__file__).resolve().parent / "data" / "engine_logs"


@functools.cache
def engine_capacity_bench():
    """benchmarks/engine_capacity.py as a module (its cases and how each is evaluated), loaded once for every test
    file that checks the engines against the logged runs."""
    spec = importlib.util.spec_from_file_location(
        "engine_capacity", Path(__file__).resolve().parents[1] / "benchmarks" / "engine_capacity.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_capacity"] = module        # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


# Hand-made measurement rows and files (the records, validate and CLI tests share them).
FULL_HEADER = ",".join(V1_FIELDS)   # the first campaigns' columns: the later ones are optional
GOOD_ROW = "flash,rooflab,fp16,0.001,,1,32,8,128,4096,,0,0,1,0,,,20,0.001"


def _flash(t: int, time_s: float, impl: str = "rooflab") -> Measurement:
    return Measurement(kernel="flash", impl=impl, dtype="fp16", time_s=time_s, batch=1, num_qo_heads=32,
                       num_kv_heads=8, head_dim=128, seq_len=t)


def _merge(tokens: int, time_s: float) -> Measurement:
    return Measurement(kernel="merge", impl="rooflab", dtype="bf16", time_s=time_s, num_qo_heads=32,
                       num_kv_heads=32, head_dim=128, tokens=tokens)


def _at_fraction(m: Measurement, fraction: float, overhead: float = 0.0,
                 units_per_sm: float | None = None) -> Measurement:
    """A row timed exactly as the model says: overhead + t_model / fraction (h100-sxm has no measured ceilings,
    so the model runs on its datasheet roofs; units_per_sm None: no parallelism term)."""
    from rooflab.fit.fitting import model_times
    from rooflab.load import load_gpu

    t_model = float(model_times([m], load_gpu("h100-sxm"), units_per_sm)[0][0])
    return Measurement(**{**m.__dict__, "time_s": overhead + t_model / fraction})


def _write_text(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return str(path)


def _file(*rows: str, head: str = f"# {FORMAT_LINE}\n# gpu_spec: h100-sxm\n", header: str = FULL_HEADER) -> str:
    return head + header + "\n" + "".join(r + "\n" for r in rows)


# Running the CLI.
def invoke(*args: str):
    """`rooflab ARGS` through typer's CliRunner: the result's exit_code, stdout and stderr."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    return CliRunner().invoke(app, list(args))


def run_in_process(args, capsys) -> tuple[int, str, str]:
    """`rooflab ARGS` as the console script runs it, in this process: (exit code, stdout, stderr)."""
    from rooflab.cli import app

    with pytest.raises(SystemExit) as done:
        app(args)
    out = capsys.readouterr()
    return done.value.code or 0, out.out, out.err


# Reading what a chart or a table shows.
def _by_gid(ax, prefix: str) -> list:
    return [line for line in ax.lines if str(line.get_gid()).startswith(prefix)]


def _texts(fig) -> str:
    return "\n".join(t.get_text() for t in fig.axes[0].texts)


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _words(text: str) -> set[str]:
    """The words of a rendered table, its rules of dashes aside."""
    return {w for w in text.split() if set(w) != {"-"}}


# Specs.
def heads():
    """Llama-3-8B's attention heads: 32 query heads, 8 KV heads of 128."""
    from rooflab.specs import AttentionHeads

    return AttentionHeads(32, 8, 128)


def read_config(data: dict, where: str = "config.json"):
    """A config.json's dict read as a model spec (a copy: the reader never sees the caller's dict change)."""
    import copy

    from rooflab.hf import from_hf_config

    return from_hf_config(copy.deepcopy(data), where)


# Engine settings as the engines' tests write them: an engine's accounting at a version, then its options.
def vllm(version: str = "v1", **kw):
    from rooflab.engines import Engine, EngineSettings, parse_accounting

    return EngineSettings(parse_accounting(Engine.vllm, version), **kw)


def sglang(version: str = "v0.4", **kw):
    from rooflab.engines import Engine, EngineSettings, parse_accounting

    return EngineSettings(parse_accounting(Engine.sglang, version), **kw)
