"""Read a vLLM or SGLang start-up log: every KV-cache figure it prints, with the line it came from.

Formats recognised (each line anywhere in the text, whatever its logger prefix; "GB" in these logs is GiB):

    vLLM V0 v0.2 - v0.6.3   "# GPU blocks: N, # CPU blocks: M" (vllm v0.2.4 vllm/engine/llm_engine.py;
                            v0.6.4 vllm/executor/gpu_executor.py); "# CUDA blocks: N" from v0.7.0
                            (vllm/executor/executor_base.py); "Loading model weights took X GB" (v0.4.0 on)
    vLLM V0 v0.6.4          "Memory profiling results: total_gpu_memory=XGiB ... peak_torch_memory=XGiB ...
                            non_torch_memory=XGiB kv_cache_size=XGiB gpu_memory_utilization=U"
                            (vllm v0.6.4 vllm/worker/worker.py:232-243)
    vLLM V0 PR #10511       the multi-line table "Memory profiling results:" / "total_gpu_memory  XGiB" /
                            ... / "available_kv_cache_memory  XGiB" of that PR's draft
    vLLM V0 v0.6.5 on       "the current vLLM instance can use total_gpu_memory (XGiB) x gpu_memory_utilization (U)
                            = XGiB" and "model weights take XGiB; non_torch_memory takes XGiB; PyTorch activation
                            peak memory takes XGiB; the rest of the memory reserved for KV Cache is XGiB."
                            (vllm v0.6.5 vllm/worker/worker.py:225-241)
    vLLM V0 and V1          "Maximum concurrency for L tokens per request: Xx"; the start-up error "... the maximum
                            number of tokens that can be stored in KV cache (N)"
    vLLM V1                 "Model loading took X GiB"; "Available KV cache memory: X GiB" (v0.9.1 on);
                            "GPU KV cache size: N tokens" (v0.8.0 on; vllm v0.10.0 vllm/v1/core/kv_cache_utils.py);
                            DEBUG: "Requested memory: U (util), X GiB", "total_memory=XGiB", "torch peak memory
                            increase: XGiB; non-torch forward increase memory: XGiB; weights memory: XGiB"
                            (vllm v0.10.0 vllm/v1/worker/gpu_worker.py, vllm/utils MemoryProfilingResult)
    SGLang                  "Load weight begin. avail mem=X GB", "Load weight end. ... avail mem=X GB[, mem usage=X
                            GB]", "KV Cache is allocated. [#tokens: N, ]K size: X GB, V size: X GB" (MLA: "KV size:
                            X GB"), "max_total_num_tokens=N" (sglang v0.4.6 model_runner.py, mem_cache/memory_pool.py,
                            managers/scheduler.py)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..errors import InputError
from ..load import read_bounded
from ..units import GiB
from .vocab import Accounting, Engine

#: A start-up log larger than this is refused (the lines that matter are a few hundred bytes).
MAX_LOG_BYTES = 64 << 20

#: Lines starting with this are provenance notes (rooflab's fixtures carry one on line 1), not log output.
PROVENANCE = "# source:"

#: What a reader looks for, as named in the error for a log with none of it.
LOOKED_FOR = ("'# GPU blocks: N'", "'Memory profiling results'", "'the rest of the memory reserved for KV Cache is'",
              "'Available KV cache memory'", "'GPU KV cache size: N tokens'", "'KV Cache is allocated'",
              "'max_total_num_tokens='")


@dataclass(frozen=True)
class Logged:
    """One figure read from a log: its value (bytes, a count or a fraction), the line number and the line."""

    value: float
    line_no: int
    text: str

    @property
    def source(self) -> str:
        text = self.text if len(self.text) <= 150 else self.text[:147] + "..."
        return f"line {self.line_no}: {text}"


@dataclass(frozen=True)
class EngineLog:
    """The figures a start-up log prints, each with its line; `formats` names the formats recognised."""

    name: str
    engine: Engine
    accounting: Accounting
    formats: tuple[str, ...]
    figures: dict[str, Logged] = field(default_factory=dict)

    def get(self, key: str) -> Optional[Logged]:
        return self.figures.get(key)

    def value(self, key: str) -> Optional[float]:
        figure = self.figures.get(key)
        return None if figure is None else figure.value


def _gib(text: str) -> int:
    return int(round(float(text) * GiB))


def _int(text: str) -> int:
    return int(text.replace(",", ""))


# (format name, engine, pattern, {figure: (group, converter)})
_Rule = tuple[str, Engine, "re.Pattern[str]", dict[str, tuple[int, Callable[[str], float]]]]
_F = r"([0-9][0-9.]*)"
_RULES: list[_Rule] = [
    ("vLLM V0 v0.6.5+ budget line", Engine.vllm,
     re.compile(rf"total_gpu_memory \({_F}\s*GiB\) x gpu_memory_utilization \({_F}\) = {_F}\s*GiB"),
     {"total": (1, _gib), "utilization": (2, float), "budget": (3, _gib)}),
    ("vLLM V0 v0.6.5+ terms line", Engine.vllm,
     re.compile(rf"the rest of the memory reserved for KV Cache is {_F}\s*GiB"), {"kv_bytes": (1, _gib)}),
    ("vLLM PR #10511 table", Engine.vllm, re.compile(rf"total_gpu_memory\s+{_F}\s*GiB"), {"total": (1, _gib)}),
    ("vLLM PR #10511 table", Engine.vllm, re.compile(rf"gpu_memory_utilization\s+{_F}\s*$"),
     {"utilization": (1, float)}),
    ("vLLM PR #10511 table", Engine.vllm, re.compile(rf"the current vLLM instance can use\s+{_F}\s*GiB"),
     {"budget": (1, _gib)}),
    ("vLLM PR #10511 table", Engine.vllm, re.compile(rf"available_kv_cache_memory\s+{_F}\s*GiB"),
     {"kv_bytes": (1, _gib)}),
    ("vLLM V0 memory terms", Engine.vllm, re.compile(rf"model weights take\s+{_F}\s*GiB"), {"weights": (1, _gib)}),
    ("vLLM V0 memory terms", Engine.vllm, re.compile(rf"non_torch_memory(?:\s+takes)?\s+{_F}\s*GiB"),
     {"non_torch": (1, _gib)}),
    ("vLLM V0 memory terms", Engine.vllm, re.compile(rf"PyTorch activation peak memory(?:\s+takes)?\s+{_F}\s*GiB"),
     {"activation": (1, _gib)}),
    ("vLLM V0 v0.6.4 results line", Engine.vllm, re.compile(
        rf"Memory profiling results: total_gpu_memory={_F}GiB.*?peak_torch_memory={_F}GiB.*?"
        rf"non_torch_memory={_F}GiB kv_cache_size={_F}GiB gpu_memory_utilization={_F}", re.I),
     {"total": (1, _gib), "peak_torch": (2, _gib), "non_torch": (3, _gib), "kv_bytes": (4, _gib),
      "utilization": (5, float)}),
    ("vLLM V0 block counts", Engine.vllm, re.compile(r"(?:^|[\s#\]])(?!CPU\b)([A-Za-z]+) blocks: (\d+)", re.I),
     {"gpu_blocks": (2, _int)}),
    ("vLLM V0 block counts", Engine.vllm, re.compile(r"CPU blocks: (\d+)"), {"cpu_blocks": (1, _int)}),
    ("vLLM weights line", Engine.vllm, re.compile(rf"(?:Loading model weights|Model loading) took {_F}\s*Gi?B"),
     {"weights": (1, _gib)}),
    ("vLLM concurrency line", Engine.vllm,
     re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([0-9.]+)x"),
     {"max_model_len": (1, _int), "concurrency": (2, float)}),
    ("vLLM start-up error", Engine.vllm,
     re.compile(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV "
                r"cache \((\d+)\)"), {"max_model_len": (1, _int), "kv_tokens": (2, _int)}),
    ("vLLM V1 tokens line", Engine.vllm, re.compile(r"GPU KV cache size: ([\d,]+) tokens"), {"kv_tokens": (1, _int)}),
    ("vLLM V1 available line", Engine.vllm, re.compile(rf"Available KV cache memory: {_F}\s*GiB"),
     {"kv_bytes": (1, _gib)}),
    ("vLLM V1 DEBUG lines", Engine.vllm, re.compile(rf"Requested memory: {_F} \(util\), {_F}\s*GiB"),
     {"utilization": (1, float), "budget": (2, _gib)}),
    ("vLLM V1 DEBUG lines", Engine.vllm, re.compile(rf"memory snapshot:.*total_memory={_F}GiB"), {"total": (1, _gib)}),
    ("vLLM V1 DEBUG lines", Engine.vllm, re.compile(
        rf"torch peak memory increase: {_F}\s*GiB; non-torch forward increase memory: {_F}\s*GiB; "
        rf"weights memory: {_F}\s*GiB"), {"activation": (1, _gib), "non_torch": (2, _gib), "weights": (3, _gib)}),
    ("vLLM V1 start-up check", Engine.vllm, re.compile(rf"Free memory on device \({_F}/{_F} GiB\)"),
     {"total": (2, _gib)}),
    ("vLLM config line", Engine.vllm, re.compile(r"LLM engine \(v[^)]*\) with config:.*?tensor_parallel_size=(\d+)"),
     {"tensor_parallel": (1, _int)}),
    ("SGLang weights lines", Engine.sglang, re.compile(rf"Load weight begin\. avail mem={_F} GB"),
     {"free_before_load": (1, _gib)}),
    ("SGLang weights lines", Engine.sglang, re.compile(rf"Load weight end\..*avail mem={_F} GB"),
     {"free_after_load": (1, _gib)}),
    ("SGLang weights lines", Engine.sglang, re.compile(rf"Load weight end\..*mem usage={_F} GB"),
     {"weights": (1, _gib)}),
    ("SGLang pool line", Engine.sglang, re.compile(r"KV Cache is allocated\..*?#tokens: (\d+)"),
     {"kv_tokens": (1, _int)}),
    ("SGLang pool line", Engine.sglang, re.compile(rf"KV Cache is allocated\..*?K size: {_F} GB, V size: {_F} GB"),
     {"k_size": (1, _gib), "v_size": (2, _gib)}),
    ("SGLang pool line", Engine.sglang, re.compile(rf"KV Cache is allocated\..*?\bKV size: {_F} GB"),
     {"kv_size": (1, _gib)}),
    ("SGLang scheduler line", Engine.sglang, re.compile(r"max_total_num_tokens=(\d+)"), {"kv_tokens": (1, _int)}),
    ("SGLang scheduler line", Engine.sglang, re.compile(r"max_total_num_tokens=\d+.*?context_len=(\d+)"),
     {"max_model_len": (1, _int)}),
]

#: Figures that carry a KV-cache size: a log with none of them is not recognised.
_KV_FIGURES = ("kv_bytes", "kv_tokens", "gpu_blocks")


def read_log(path: Path | str) -> EngineLog:
    """Read and parse a start-up log file; unreadable, binary or oversized files are InputErrors naming the file."""
    path = Path(path).expanduser()
    try:
        raw = read_bounded(path, MAX_LOG_BYTES)
    except OSError as exc:
        raise InputError(f"--engine-log {path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_LOG_BYTES:
        raise InputError(f"--engine-log {path}: larger than {MAX_LOG_BYTES >> 20} MiB; pass the start-up part")
    if b"\0" in raw[:4096]:
        raise InputError(f"--engine-log {path}: a binary file, not a text log")
    return parse_log(raw.decode("utf-8", errors="replace"), str(path))


#: Largest figure a log line may carry: bytes (1 PiB on one GPU) and counts (tokens, blocks, GPUs); past these the
#: line is corrupt, and 1e400 or a 400-digit number would overflow the arithmetic downstream.
_MAX_LOGGED_BYTES = 1 << 50
_MAX_LOGGED_COUNT = 1 << 40


def _checked(key: str, convert: Callable[[str], float], text: str, name: str, line_no: int) -> float:
    """One figure converted and checked, or InputError naming the log, the line and the figure."""
    where = f"--engine-log {name} line {line_no}: {key.replace('_', ' ')} {text[:40]}"
    try:
        value = convert(text)
    except (ValueError, OverflowError):
        raise InputError(f"{where} is not a number rooflab can read") from None
    if not math.isfinite(value):
        raise InputError(f"{where} is not a finite number")
    if key == "utilization" and not 0 < value <= 1:
        raise InputError(f"{where}: a memory utilisation must be in (0, 1]")
    limit = _MAX_LOGGED_BYTES if convert is _gib else _MAX_LOGGED_COUNT
    if key != "utilization" and value > limit:
        raise InputError(f"{where} is past any real GPU (at most {limit:,}{' bytes' if convert is _gib else ''})")
    return value


def parse_log(text: str, name: str = "log") -> EngineLog:
    """The figures of a vLLM or SGLang start-up log (module docstring), the first occurrence of each.

    Lines starting with '# source:' (a provenance note, as rooflab's fixtures carry) are skipped.
    """
    figures: dict[str, Logged] = {}
    formats: dict[str, None] = {}
    engines: set[Engine] = set()
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.startswith(PROVENANCE):
            continue
        for fmt, engine, pattern, groups in _RULES:
            for match in pattern.finditer(line):
                formats[fmt] = None
                engines.add(engine)
                for key, (group, convert) in groups.items():
                    if match.group(group) is not None and key not in figures:
                        value = _checked(key, convert, match.group(group), name, line_no)
                        figures[key] = Logged(value, line_no, line.strip())
    if not any(key in figures for key in _KV_FIGURES):
        raise InputError(f"--engine-log {name}: no vLLM or SGLang KV-cache line found; looked for "
                         f"{', '.join(LOOKED_FOR)}")
    if len(engines) > 1:
        raise InputError(f"--engine-log {name}: holds lines of both vLLM and SGLang; pass one engine's log")
    engine = engines.pop()
    return EngineLog(name, engine, _accounting(engine, tuple(formats), figures), tuple(formats), figures)


def _accounting(engine: Engine, formats: tuple[str, ...], figures: dict[str, Logged]) -> Accounting:
    """The accounting a log's formats belong to (vocab.Accounting)."""
    if engine is Engine.sglang:
        elapsed = any("Load weight end. elapsed=" in f.text for f in figures.values())
        return Accounting.sglang_v0_5 if elapsed else Accounting.sglang_v0_4
    if any(f.startswith("vLLM V1") for f in formats):
        return Accounting.vllm_v1
    if "vLLM V0 v0.6.4 results line" in formats:
        return Accounting.vllm_v0_6_4
    if any(f.startswith(("vLLM V0 v0.6.5", "vLLM PR #10511", "vLLM V0 memory terms")) for f in formats):
        return Accounting.vllm_v0
    blocks = figures.get("gpu_blocks")
    if blocks is not None and re.search(r"cuda blocks", blocks.text, re.I):
        return Accounting.vllm_v0
    if "weights" in figures or "vLLM start-up error" in formats:
        return Accounting.vllm_v0
    return Accounting.vllm_v0_2


__all__ = ["EngineLog", "LOOKED_FOR", "PROVENANCE", "Logged", "MAX_LOG_BYTES", "parse_log", "read_log"]
