"""The lines a vLLM or SGLang start-up log prints its KV-cache figures and settings on, and how one line is read.

Each rule names a literal anchor (the phrase the engine prints) and the fields that follow it on the same line,
each a pattern that starts with a literal. A line is searched for its anchor with `str.find` and each field once
from there, so reading a line costs time linear in its length whatever it repeats (a pattern with `.*?` between
two fields rescanned the rest of the line at every occurrence of the first: 20,000 repeats of one field took
more than 30 s).

The formats and the engine source each follows are listed in logs.py's docstring. The settings a configuration
line states (vLLM's "with config:" and "non-default args:", SGLang's "server_args=ServerArgs(") are read by
`settings_of`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .vocab import Engine

#: A number as the engines print it; the sign only where a figure can be negative (vLLM V1's available memory).
_F = r"([0-9][0-9.]*)"
_SIGNED = r"(-?[0-9][0-9.]*)"


@dataclass(frozen=True)
class Rule:
    """One format: the anchor phrase, then fields {figure key: (pattern after the anchor, group, kind)}.

    kind is 'gib' (a GiB figure), 'bytes' (a byte count), 'count' (digits, commas allowed) or 'fraction'.
    """

    fmt: str
    engine: Engine
    anchor: str
    fields: tuple[tuple[str, "re.Pattern[str]", int, str], ...]


def _rule(fmt: str, engine: Engine, anchor: str, *fields: tuple[str, str, int, str]) -> Rule:
    return Rule(fmt, engine, anchor, tuple((k, re.compile(p), g, kind) for k, p, g, kind in fields))


#: The lines vLLM V1's TopKTopPSampler prints once when it picks its path (vllm v0.10.1.1 and v0.10.2
#: vllm/v1/sample/ops/topk_topp_sampler.py __init__; v0.11.2 prints the first only, when opted in: :36), each
#: with what it says ran: FlashInfer's top-k / top-p, the native sort because FlashInfer is not installed, or the
#: sort because VLLM_USE_FLASHINFER_SAMPLER=0 (explain.py reads them as EngineSettings' sampler fields).
SAMPLER_LINES = {"Using FlashInfer for top-p & top-k sampling": "flashinfer",
                 "FlashInfer is not available. Falling back to the PyTorch-native implementation": "not_installed",
                 "FlashInfer is available, but it is not enabled. Falling back": "not_enabled"}
#: What each of them says ran, in words.
SAMPLER_RAN = {"flashinfer": "FlashInfer's top-k / top-p",
               "not_installed": "the native sort (FlashInfer not installed)",
               "not_enabled": "the native sort (VLLM_USE_FLASHINFER_SAMPLER=0)"}
#: The words each sampler line opens with: a line holding them but not the whole phrase was cut by a terminal's
#: wrap (incomplete), and is joined with the line that continues it (logs.py) as a rule's line is.
SAMPLER_OPENINGS = tuple(" ".join(phrase.split()[:3]) for phrase in SAMPLER_LINES)


_V, _S = Engine.vllm, Engine.sglang
RULES: tuple[Rule, ...] = (
    _rule("vLLM V0 v0.6.5+ budget line", _V, "x gpu_memory_utilization (",
          ("total", rf"total_gpu_memory \({_F}\s*GiB\) x", 1, "gib"),
          ("utilization", rf"x gpu_memory_utilization \({_F}\)", 1, "fraction"),
          ("budget", rf"x gpu_memory_utilization \([0-9.]+\) = {_F}\s*GiB", 1, "gib")),
    _rule("vLLM V0 v0.6.5+ terms line", _V, "the rest of the memory reserved for KV Cache is",
          ("kv_bytes", rf"the rest of the memory reserved for KV Cache is {_F}\s*GiB", 1, "gib")),
    _rule("vLLM PR #10511 table", _V, "total_gpu_memory ", ("total", rf"total_gpu_memory\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM PR #10511 table", _V, "gpu_memory_utilization ",
          ("utilization", rf"gpu_memory_utilization\s+{_F}\s*$", 1, "fraction")),
    _rule("vLLM PR #10511 table", _V, "the current vLLM instance can use ",
          ("budget", rf"the current vLLM instance can use\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM PR #10511 table", _V, "available_kv_cache_memory",
          ("kv_bytes", rf"available_kv_cache_memory\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM V0 memory terms", _V, "model weights take", ("weights", rf"model weights take\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM V0 memory terms", _V, "non_torch_memory",
          ("non_torch", rf"non_torch_memory(?:\s+takes)?\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM V0 memory terms", _V, "PyTorch activation peak memory",
          ("activation", rf"PyTorch activation peak memory(?:\s+takes)?\s+{_F}\s*GiB", 1, "gib")),
    _rule("vLLM V0 v0.6.4 results line", _V, "Memory profiling results: total_gpu_memory=",
          ("total", rf"total_gpu_memory={_F}GiB", 1, "gib"), ("peak_torch", rf"peak_torch_memory={_F}GiB", 1, "gib"),
          ("non_torch", rf"non_torch_memory={_F}GiB", 1, "gib"), ("kv_bytes", rf"kv_cache_size={_F}GiB", 1, "gib"),
          ("utilization", rf"gpu_memory_utilization={_F}", 1, "fraction")),
    _rule("vLLM V0 block counts", _V, " blocks: ",
          ("gpu_blocks", r"(?:^|[\s#\]])(?!CPU\b)([A-Za-z]{1,8}) blocks: (\d+)", 2, "count")),
    _rule("vLLM V0 block counts", _V, "CPU blocks: ", ("cpu_blocks", r"CPU blocks: (\d+)", 1, "count")),
    _rule("vLLM weights line", _V, " took ",
          ("weights", rf"(?:Loading model weights|Model loading) took {_F}\s*Gi?B", 1, "gib")),
    _rule("vLLM concurrency line", _V, "Maximum concurrency for ",
          ("max_model_len", r"Maximum concurrency for ([\d,]+) tokens per request", 1, "count"),
          ("concurrency", r"tokens per request: ([0-9.]+)x", 1, "fraction_any")),
    _rule("vLLM start-up error", _V, "is larger than the maximum number of tokens that can be stored in KV cache",
          ("max_model_len", r"max seq len \((\d+)\) is larger", 1, "count"),
          ("kv_tokens", r"stored in KV cache \((\d+)\)", 1, "count")),
    _rule("vLLM V1 start-up error", _V, "KV cache is needed, which is larger than the available KV cache memory",
          ("max_model_len", r"max seq len \((\d+)\)", 1, "count"),
          ("kv_needed", rf"\({_F}\s*GiB KV cache is needed", 1, "gib"),
          ("kv_bytes", rf"available KV cache memory \({_SIGNED}\s*GiB\)", 1, "gib"),
          ("estimated_max_len", r"estimated maximum model length is (\d+)", 1, "count")),
    _rule("vLLM V1 tokens line", _V, "GPU KV cache size: ", ("kv_tokens", r"GPU KV cache size: ([\d,]+) tokens", 1, "count")),
    _rule("vLLM V1 available line", _V, "Available KV cache memory: ",
          ("kv_bytes", rf"Available KV cache memory: {_SIGNED}\s*GiB", 1, "gib")),
    # vLLM V1 from v0.11.0 with --kv-cache-memory-bytes: "Initial free memory F GiB, reserved K GiB memory for KV Cache
    # as specified by kv_cache_memory_bytes config and skipped memory profiling." (vllm/v1/worker/gpu_worker.py
    # determine_available_memory; engines/overrides.py)
    _rule("vLLM V1 given KV line", _V, " memory for KV Cache as specified by kv_cache_memory_bytes",
          ("kv_bytes", rf"reserved {_F}\s*GiB memory for KV Cache", 1, "gib")),
    _rule("vLLM V1 DEBUG lines", _V, "Requested memory: ",
          ("utilization", rf"Requested memory: {_F} \(util\)", 1, "fraction"),
          ("budget", rf"\(util\), {_F}\s*GiB", 1, "gib")),
    _rule("vLLM V1 DEBUG lines", _V, "memory snapshot:", ("total", rf"total_memory={_F}GiB", 1, "gib")),
    _rule("vLLM V1 DEBUG lines", _V, "torch peak memory increase: ",
          ("activation", rf"torch peak memory increase: {_F}\s*GiB;", 1, "gib"),
          ("non_torch", rf"non-torch forward increase memory: {_F}\s*GiB;", 1, "gib"),
          ("weights", rf"; weights memory: {_F}\s*GiB", 1, "gib")),
    _rule("vLLM V1 start-up check", _V, ") on startup is less than desired GPU memory utilization",
          ("total", rf"Free memory on device \([0-9.]+/{_F} GiB\)", 1, "gib")),
    _rule("vLLM V1 memory report", _V, ") on startup. Desired GPU memory utilization is (",
          ("free_at_start", rf"Free memory on device \({_F}/", 1, "gib"),
          ("total", rf"Free memory on device \([0-9.]+/{_F} GiB\)", 1, "gib"),
          ("utilization", rf"Desired GPU memory utilization is \({_F}, ", 1, "fraction"),
          ("budget", rf"Desired GPU memory utilization is \([0-9.]+, {_F} GiB\)", 1, "gib"),
          ("weights", rf"Actual usage is {_F} GiB for weight,", 1, "gib"),
          ("weights_non_torch", rf"Actual usage is {_F} GiB for consumed memory \(weights \+ non-torch\)", 1, "gib"),
          ("activation", rf"(?:GiB for weight|\(weights \+ non-torch\)), {_F} GiB for peak activation", 1, "gib"),
          ("non_torch", rf"GiB for peak activation, {_F} GiB for non-torch memory", 1, "gib"),
          ("cuda_graph", rf"(?:GiB for non-torch memory|GiB for peak activation), and {_F} GiB for CUDAGraph", 1, "gib"),
          ("kv_bytes", rf"Current kv cache memory in use is {_SIGNED} GiB", 1, "gib"),
          ("kv_bytes", r"Current kv cache memory in use is (-?\d+) bytes", 1, "bytes")),
    _rule("vLLM config line", _V, ") with config:", ("tensor_parallel", r"tensor_parallel_size=(\d+)", 1, "count")),
    _rule("SGLang weights lines", _S, "Load weight begin. ", ("free_before_load", rf"avail mem={_F} GB", 1, "gib")),
    _rule("SGLang weights lines", _S, "Load weight end.",
          ("free_after_load", rf"avail mem={_F} GB", 1, "gib"), ("weights", rf"mem usage={_F} GB", 1, "gib")),
    _rule("SGLang pool line", _S, "KV Cache is allocated.",
          ("kv_tokens", r"#tokens: (\d+)", 1, "count"), ("k_size", rf"\bK size: {_F} GB, V size", 1, "gib"),
          ("v_size", rf"V size: {_F} GB", 1, "gib"), ("kv_size", rf"\bKV size: {_F} GB", 1, "gib")),
    _rule("SGLang mamba pool line", _S, "Mamba Cache is allocated.",
          ("state_slots", r"max_mamba_cache_size: (\d+)", 1, "count"),
          ("conv_state", rf"conv_state size: {_F}\s*GB", 1, "gib"), ("ssm_state", rf"ssm_state size: {_F}\s*GB", 1, "gib")),
    _rule("SGLang scheduler line", _S, "max_total_num_tokens=",
          ("kv_tokens", r"max_total_num_tokens=(\d+)", 1, "count"), ("max_model_len", r"context_len=(\d+)", 1, "count"),
          ("max_running_requests", r"max_running_requests=(\d+)", 1, "count")),
)

#: Phrases that start a rule or a sampler line (SAMPLER_OPENINGS): a line holding one but matching none of its
#: fields (or not the whole sampler phrase) may have been wrapped.
ANCHORS = tuple(sorted({r.anchor.strip() for r in RULES} | set(SAMPLER_OPENINGS)))


@dataclass(frozen=True)
class Hit:
    """One field read off one line: its rule's format and engine, the figure key and its text."""

    fmt: str
    engine: Engine
    key: str
    text: str
    kind: str


def read_line(line: str) -> list[Hit]:
    """Every field of every rule whose anchor the line holds (the first occurrence of each), in linear time."""
    hits = []
    for rule in RULES:
        pos = line.find(rule.anchor)
        if pos < 0:
            continue
        start = 0   # fields may sit before the anchor ("total_gpu_memory (X GiB) x ...")
        for key, pattern, group, kind in rule.fields:
            match = pattern.search(line, start)
            if match is not None:
                hits.append(Hit(rule.fmt, rule.engine, key, match.group(group), kind))
    return hits


def incomplete(line: str) -> bool:
    """Whether the line holds a rule's anchor but lacks one of that rule's fields, or a sampler line's opening
    (SAMPLER_OPENINGS) but not its whole phrase: cut by a terminal's wrap."""
    if sampler_of(line) is None and any(opening in line for opening in SAMPLER_OPENINGS):
        return True
    for rule in RULES:
        pos = line.find(rule.anchor)
        if pos >= 0 and rule.fmt not in _OPTIONAL_FIELDS:
            start = 0
            if any(pattern.search(line, start) is None for _, pattern, _, _ in rule.fields):
                return True
    return False


#: Rules whose fields are alternatives (a line prints some of them), so a missing one is not a cut.
_OPTIONAL_FIELDS = {"vLLM V1 memory report", "SGLang mamba pool line", "SGLang pool line", "SGLang weights lines", "SGLang scheduler line", "vLLM config line",
                    "vLLM V0 block counts", "vLLM weights line", "vLLM PR #10511 table", "vLLM V0 memory terms"}


# --- settings a configuration line states --------------------------------------------------------------------------

#: Lines that state an engine's settings (vLLM V0/V1 config lines and arguments, SGLang's server arguments).
CONFIG_MARKERS = (") with config:", "non-default args:", "server_args=ServerArgs(", "args: Namespace(")
_Q = r"""['"]?"""
_SETTING_PATTERNS = {
    "tensor_parallel": re.compile(rf"\b(?:tensor_parallel_size|tp_size){_Q}\s*[:=]\s*(\d+)"),
    "kv_cache_dtype": re.compile(rf"\bkv_cache_dtype{_Q}\s*[:=]\s*{_Q}([A-Za-z0-9_]+)"),
    "dtype": re.compile(rf"(?<![A-Za-z_]){_Q}dtype{_Q}\s*[:=]\s*{_Q}(?:torch\.)?([A-Za-z0-9_]+)"),
    "block_size": re.compile(rf"\b(?:block_size|page_size){_Q}\s*[:=]\s*(\d+)"),
    "max_model_len": re.compile(rf"\b(?:max_model_len|max_seq_len|context_length){_Q}\s*[:=]\s*(\d+)"),
    "utilization": re.compile(rf"\b(?:gpu_memory_utilization|mem_fraction_static){_Q}\s*[:=]\s*([0-9.]+)"),
    # vLLM's 'Initializing a V1 LLM engine (v0.10.0) with config:', V0's 'Initializing an LLM engine (v0.4.1) ...'
    "release": re.compile(r"LLM engine \(v([0-9]+(?:\.[0-9]+)+[0-9A-Za-z.+-]*)\) with config:"),
    # the sizing overrides (engines/overrides.py): vLLM's config line and non-default args, SGLang's server_args
    "enforce_eager": re.compile(rf"\b(?:enforce_eager|disable_cuda_graph){_Q}\s*[:=]\s*(True|False)\b"),
    "max_total_tokens": re.compile(rf"\bmax_total_tokens{_Q}\s*[:=]\s*(\d+)"),
    "num_gpu_blocks_override": re.compile(rf"\bnum_gpu_blocks_override{_Q}\s*[:=]\s*(\d+)"),
    "kv_cache_memory_bytes": re.compile(rf"\bkv_cache_memory_bytes{_Q}\s*[:=]\s*(\d+)"),
    # vLLM V1's --logprobs-mode (vocab.LogprobsMode), as its non-default args print it
    "logprobs_mode": re.compile(rf"\blogprobs_mode{_Q}\s*[:=]\s*{_Q}(?:LogprobsMode\.)?([A-Za-z_]+)"),
    # vLLM's multimodal profile options (profile.py encoder_cache), as its non-default args print them: a dict
    # ({'image': 0}, or per modality {'image': {'count': 0}}; vocab.image_limit reads it) and a flag
    "limit_mm_per_prompt": re.compile(r"\blimit_mm_per_prompt" + _Q + r"\s*[:=]\s*(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})"),
    "skip_mm_profiling": re.compile(rf"\bskip_mm_profiling{_Q}\s*[:=]\s*(True|False)\b"),
}

def sampler_of(line: str) -> Optional[str]:
    """What a vLLM V1 sampler line says ran (SAMPLER_LINES), or None for any other line."""
    return next((ran for phrase, ran in SAMPLER_LINES.items() if phrase in line), None)


def settings_of(line: str) -> dict[str, str]:
    """The settings a configuration line states ({} for any other line), as text; None values are not stated."""
    if not any(marker in line for marker in CONFIG_MARKERS):
        return {}
    found = {}
    for key, pattern in _SETTING_PATTERNS.items():
        match = pattern.search(line)
        if match is not None:
            found[key] = match.group(1)
    return found


# --- configuration records a terminal wrapped -----------------------------------------------------------------------

#: The start of a log record: a process tag ('(APIServer pid=N)', '(VllmWorker TP0 pid=N)', '(VllmWorker rank=N
#: pid=M)'), vLLM's level and date ('INFO 08-28 '), SGLang's '[2025-10-16 12:00:00' or '[12:00:00', or a timestamp,
#: after any colour codes, indentation or a container's 'name  | '. A line starting so is a record of its own.
_RECORD_START = re.compile(r"(?:\x1b\[[0-9;]*m|\s)*(?:[\w.-]+\s+\|\s+)?"
                           r"(?:\([A-Za-z][\w ]*? (?:pid|rank)=\d+"
                           r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d "
                           r"|\[\d{4}-\d\d-\d\d[ T]\d|\[\d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[ T]\d\d:)")
#: How far into a line a record's prefix is looked for (colour codes and two process tags fit).
_PREFIX_CHARS = 200
#: The most lines one configuration record is joined from (vLLM V1's config line is ~3,000 characters: ~40 lines at
#: 80 columns); a record still open after them is left as printed.
MAX_CONFIG_LINES = 256
_OPENERS, _CLOSERS, _QUOTES = "{[(", "}])", "'\""
_SPECIAL = re.compile(r"[{}\[\]()'\"\\]")


def starts_record(line: str) -> bool:
    """Whether the line begins with a log prefix (a new record, never the continuation of another)."""
    return _RECORD_START.match(line[:_PREFIX_CHARS]) is not None


@dataclass(frozen=True)
class Nesting:
    """Where a configuration record stands: open brackets ({[( counted together) and the quote it is inside ('' for
    none). Python's repr of a dict or a Namespace quotes strings with ' or " and escapes with a backslash."""

    depth: int = 0
    quote: str = ""
    escaped: bool = False

    @property
    def open(self) -> bool:
        return self.depth > 0 or bool(self.quote)

    def after(self, text: str) -> "Nesting":
        """The state after `text`, in time linear in its length (only brackets, quotes and backslashes are
        visited). A closing bracket with none open is ignored (V0's config line ends with a ')' opened before
        its marker)."""
        depth, quote = self.depth, self.quote
        skip = 0 if self.escaped else -1          # the position a backslash escapes
        for match in _SPECIAL.finditer(text):
            c, pos = match.group(), match.start()
            if pos == skip:
                continue
            if quote:
                if c == "\\":
                    skip = pos + 1
                elif c == quote:
                    quote = ""
            elif c in _QUOTES:
                quote = c
            elif c in _OPENERS:
                depth += 1
            elif c in _CLOSERS:
                depth = max(depth - 1, 0)
        escaped = bool(quote) and skip == len(text)   # a backslash ending the text escapes the next one's first
        return Nesting(depth, quote, escaped)


def config_lines(lines: list[str], i: int) -> int:
    """How many lines, from lines[i], one configuration record takes: 1 unless lines[i] states settings
    (CONFIG_MARKERS, or the start of one the wrap cut) and leaves a bracket or quote open from its marker on, and the
    lines after it close it. A continuation never starts with a log prefix (starts_record), is blank or has a
    marker start in it; a record those cut before it closes (a stored source cut the line) is left as printed, never
    merged with what follows. The lines looked at stop where the next marker starts, so each line is scanned at
    most twice."""
    state, used = _opened(lines, i)
    if not used:
        return 1
    while state.open:
        if used == MAX_CONFIG_LINES or not _continues(lines, i + used):
            return 1
        state = state.after(lines[i + used])
        used += 1
    return used


def _continues(lines: list[str], i: int) -> bool:
    """Whether lines[i] exists and may continue a record: not blank, no log prefix, no marker starting in it."""
    return i < len(lines) and bool(lines[i].strip()) and not starts_record(lines[i]) and _marker_in(lines, i) < 0


def _opened(lines: list[str], i: int) -> tuple[Nesting, int]:
    """The state after the marker of the record lines[i] starts, and the lines read to find it (0: no record):
    one, or two where the wrap cut the marker itself ('non-d' / 'efault args: {')."""
    at = _marker_in(lines, i)
    if at < 0:
        return Nesting(), 0
    line = lines[i]
    if _marker_at(line) >= 0:
        return Nesting().after(line[at:]), 1
    return Nesting().after(line[at:]).after(lines[i + 1]), 2


def _marker_in(lines: list[str], i: int) -> int:
    """Where in lines[i] a configuration marker starts, whole or cut by the wrap at its end (the next line holding
    the rest and continuing it), or -1; it looks at lines[i] and the start of lines[i + 1] only."""
    line = lines[i]
    at = _marker_at(line)
    if at >= 0 or i + 1 >= len(lines) or not lines[i + 1].strip() or starts_record(lines[i + 1]):
        return at
    tail = line[-_MARKER_EDGE:]
    cut = _marker_at(tail + lines[i + 1][:_MARKER_EDGE])
    return len(line) - len(tail) + cut if 0 <= cut < len(tail) else -1


def _marker_at(text: str) -> int:
    """Where the first configuration marker in `text` starts, or -1."""
    return min((p for p in (text.find(m) for m in CONFIG_MARKERS) if p >= 0), default=-1)


_MARKER_EDGE = max(len(m) for m in CONFIG_MARKERS) - 1   # the most of a cut marker one side of the cut holds


def rank_of(line: str) -> Optional[str]:
    """The worker a line's prefix names ('Worker_PP1_TP3', 'TP1', 'pid=1786'), or None for the main process (vLLM's
    driver or EngineCore, SGLang's launcher): vLLM V1 '(Worker_TP0 pid=N)', '(Worker_PP1_TP3 pid=N)',
    '(VllmWorker rank=N pid=M)'; V0 '(VllmWorkerProcess pid=N)'; Ray '(RayWorkerWrapper pid=N[, ip=A])';
    SGLang 'TP1'."""
    match = _RANK.search(line[:120])
    return next((g for g in match.groups() if g), None) if match else None


_RANK = re.compile(r"\((Worker_[A-Za-z0-9_]+) pid=\d+[,)]|(?:Worker_|\s|\[)(TP\d+)\b"
                   r"|\((?:VllmWorkerProcess|RayWorkerWrapper|VllmWorker[^)]*?) (pid=\d+)[,)]")


__all__ = ["ANCHORS", "CONFIG_MARKERS", "Hit", "MAX_CONFIG_LINES", "Nesting", "RULES", "Rule", "config_lines",
           "SAMPLER_LINES", "SAMPLER_OPENINGS", "SAMPLER_RAN", "incomplete", "rank_of", "read_line", "sampler_of",
           "settings_of",
           "starts_record"]
