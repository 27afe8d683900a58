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
    vLLM V1, the line alone "Maximum concurrency for L tokens per request: Xx" with no other KV figure (an excerpt):
                            taken only where the caller names a V1 accounting (parse_startups' `accounting`), as
                            concurrency_tokens = L x X: V1 prints X = num_blocks / the blocks one L-token request
                            holds with "%.2fx" (vllm v0.10.0 vllm/v1/core/kv_cache_utils.py:837-838,
                            get_max_concurrency_for_kv_cache_config :743-758; the same format at v0.9.2 :877 and
                            v0.29.0 :2033), so the figure is within 0.005 L tokens (CONCURRENCY_PRECISION); V0's
                            line means tokens / L, and the line alone says neither: without an accounting it is
                            refused. It prints no release, but its '[kv_cache_utils.py:N]' prefix is where the
                            release's logger call is (V1_CONCURRENCY_CALLS, read from the wheels): a note names the
                            release of those read that prints it there, and the accounting that release follows
                            where the caller's differs (set 8's Ray excerpts: :637 is v0.8.5's, of vllm-v0.8, and
                            :1017 v0.10.1.1's; their cases say V1 without a release)
    vLLM V1                 "Model loading took X GiB"; "Available KV cache memory: X GiB" (v0.9.1 on);
                            "GPU KV cache size: N tokens" (v0.8.0 on; vllm v0.10.0 vllm/v1/core/kv_cache_utils.py);
                            DEBUG: "Requested memory: U (util), X GiB", "total_memory=XGiB", "torch peak memory
                            increase: XGiB; non-torch forward increase memory: XGiB; weights memory: XGiB"
                            (vllm v0.10.0 vllm/v1/worker/gpu_worker.py, vllm/utils MemoryProfilingResult)
    vLLM V1 memory report   "Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, B
                            GiB). Actual usage is W GiB for weight, A GiB for peak activation, N GiB for non-torch
                            memory, and G GiB for CUDAGraph memory. Replace ... `--kv-cache-memory=...` ... Current kv
                            cache memory in use is K GiB." (vllm/v1/worker/gpu_worker.py compile_or_warm_up_model:
                            846197f, vllm#25204, DEBUG from 2c58742; 'K bytes' in 94e6b2d, vllm#21489); builds after
                            abf61aa (2026-03, no source of theirs reachable here), at INFO: "W+N GiB for consumed
                            memory (weights + non-torch), A GiB for peak activation, and G GiB for CUDAGraph memory"
                            (one figure, weights_non_torch)
    SGLang                  "Load weight begin. avail mem=X GB", "Load weight end. ... avail mem=X GB[, mem usage=X
                            GB]", "KV Cache is allocated. [#tokens: N, ]K size: X GB, V size: X GB" (MLA: "KV size:
                            X GB"), "max_total_num_tokens=N[, ..., max_running_requests=M, context_len=L]"
                            (sglang v0.4.6 model_runner.py, mem_cache/memory_pool.py, managers/scheduler.py);
                            v0.5, linear-attention models: "Mamba Cache is allocated. max_mamba_cache_size: N,
                            conv_state size: X GB, ssm_state size: Y GB" (mem_cache/memory_pool.py MambaPool)
    vLLM V1 start-up error  "... (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB).
                            Based on the available memory, the estimated maximum model length is N." (v0.9 on,
                            vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory)

Settings a configuration line states (vLLM "with config:" / "non-default args:", SGLang "server_args=") are read
too: TP size, dtype, KV-cache dtype, block size, max model len, utilisation, and the sizing overrides
(enforce_eager / disable_cuda_graph, max_total_tokens, num_gpu_blocks_override, kv_cache_memory_bytes: overrides.py)
(logrules.settings_of), vLLM V1's --logprobs-mode and the multimodal profile's limit_mm_per_prompt (its image count:
vocab.image_limit) and skip_mm_profiling; so is the line V1's sampler prints when it picks FlashInfer or
the native sort (logrules.SAMPLER_LINES: setting 'sampler'). vLLM's "Overriding num_gpu_blocks=M with
num_gpu_blocks_override=N" line is not read as the setting: from v0.19 V1 prints one for its CUDA-graph profile's
dummy cache whether the option is given or not.

A log may hold several start-ups (a post pasting two runs): each is an EngineLog of its own, never mixed. A new
start-up begins where a configuration line follows KV figures, where a figure repeats with another value (beyond the
rounding of the two prints) from the same process, or where a figure of an earlier stage follows a later one from
that process. Each line's process is its prefix (logrules.rank_of: vLLM's '(VllmWorkerProcess pid=N)', '(Worker_TP0
pid=N)', '(Worker_PP1_TP3 pid=N)', '(RayWorkerWrapper pid=N)', SGLang's 'TP1'; none for the driver or EngineCore),
so several processes' lines, interleaved, are one start-up. vLLM V1's EngineCore prints 'GPU KV cache size' and
'Maximum concurrency' once a worker with no prefix (one KV-cache config a worker, then unify_kv_cache_configs):
after an 'Initializing a V1 LLM engine' line its n-th print of them is worker n's, never a new start-up (without
that line the repeat rule stands). The same KV figure from several ranks: the smallest is kept, as the engine sizes
by it, and vLLM's memory terms (weights, activation, non-torch, total, budget) are that
rank's, not one rank's terms beside another's KV figure. A line a terminal wrapped (a rule's phrase without its
fields, a sampler line's opening without its phrase: logrules.incomplete) is joined with up to two following
lines; a configuration line a terminal wrapped (vLLM V1 prints its non-default args dict on one long line) is
joined with the lines that continue its open bracket or quote, never with a line that starts with a log prefix
(logrules.config_lines). A negative 'Available KV cache memory' (vLLM V1 when nothing is left) is read as printed.
Reading is linear in the log's size (logrules.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..errors import InputError
from ..files import read_text
from ..units import GiB
from ..vocab import engine_release
from .logrules import ANCHORS, Hit, config_lines, incomplete, rank_of, read_line, sampler_of, settings_of
from .vocab import Accounting, Engine, accounting_of, release_text

#: A start-up log larger than this is refused (the lines that matter are a few hundred bytes).
MAX_LOG_BYTES = 64 << 20

#: Lines starting with this are provenance notes (rooflab's fixtures carry one on line 1), not log output.
PROVENANCE = "# source:"

#: What a reader looks for, as named in the error for a log with none of it.
LOOKED_FOR = ("'# GPU blocks: N'", "'Memory profiling results'", "'the rest of the memory reserved for KV Cache is'",
              "'Available KV cache memory'", "'GPU KV cache size: N tokens'", "'KV Cache is allocated'",
              "'max_total_num_tokens='", "'the estimated maximum model length is'",
              "'Current kv cache memory in use is'")


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
    """One start-up's figures, each with its line; `formats` names the formats recognised, `settings` the engine
    settings a configuration line states (as text: 'fp8_e5m2', 'float16', '2'), `startup` which start-up of the
    file this is (1 for the first) and `ranks` how many ranks printed its KV figure."""

    name: str
    engine: Engine
    accounting: Accounting
    formats: tuple[str, ...]
    figures: dict[str, Logged] = field(default_factory=dict)
    settings: dict[str, Logged] = field(default_factory=dict)
    startup: int = 1
    ranks: int = 1
    notes: tuple[str, ...] = ()

    def get(self, key: str) -> Optional[Logged]:
        return self.figures.get(key)

    def value(self, key: str) -> Optional[float]:
        figure = self.figures.get(key)
        return None if figure is None else figure.value

    def setting(self, key: str) -> Optional[Logged]:
        return self.settings.get(key)


def _gib(text: str) -> int:
    return int(round(float(text) * GiB))


def _int(text: str) -> int:
    return int(text.replace(",", ""))


_CONVERT: dict[str, Callable[[str], float]] = {"gib": _gib, "bytes": _int, "count": _int, "fraction": float,
                                               "fraction_any": float}

#: Figures that carry a KV-cache size: a start-up with none of them is not recognised.
_KV_FIGURES = ("kv_bytes", "kv_tokens", "gpu_blocks", "estimated_max_len", "concurrency_tokens")
#: vLLM V1 prints its concurrency with "%.2fx" (module docstring): the line's X is within half its last digit.
CONCURRENCY_PRECISION = 0.005
#: Where each vLLM release's V1 prints its 'Maximum concurrency' line: the line of the logger call in
#: vllm/v1/core/kv_cache_utils.py, which a log line's '[kv_cache_utils.py:N]' prefix carries (the call's first line
#: where it spans several: v0.11.2's log prints :1234 for the call at 1234-1237), read from each release's wheel.
#: Two sites from v0.9.1 to v0.10.2 (the uniform and the hybrid layouts), one before and after; from v0.29.0 one line
#: prints both the tokens and the concurrency (update_kv_cache_capacity). A release names the wheel read, not its
#: patch releases (v0.8.5.post1, v0.10.1): a line of an unread release may share a location (set 5's v0.8.4 log
#: prints its line at :637, as v0.8.5 does).
V1_CONCURRENCY_CALLS: dict[tuple[int, ...], tuple[int, ...]] = {
    (0, 7, 3): (525,), (0, 8, 0): (540,), (0, 8, 5): (637,), (0, 9, 0): (640,), (0, 9, 1): (719, 874),
    (0, 9, 2): (720, 877), (0, 10, 0): (837, 1001), (0, 10, 1, 1): (853, 1017), (0, 10, 2): (868, 1032),
    (0, 11, 0): (1091,), (0, 11, 2): (1234,), (0, 12, 0): (1291,), (0, 13, 0): (1296,), (0, 14, 0): (1310,),
    (0, 29, 0): (2032,)}
_KV_CACHE_UTILS_AT = re.compile(r"\[kv_cache_utils\.py:(\d+)\]")
#: Figures each rank prints for itself: the engine sizes by the smallest (vLLM the minimum over workers, SGLang
#: the minimum free memory), so the reader keeps the smallest and its line.
_PER_RANK_MIN = ("kv_bytes", "kv_tokens", "gpu_blocks", "free_before_load", "free_after_load", "estimated_max_len",
                 "concurrency")
#: Where in a start-up each figure is printed (3 where not listed): a figure of an earlier stage after a later
#: one, from the same process, begins the next start-up.
_STAGE = {"weights": 1, "total": 1, "budget": 1, "utilization": 1, "free_before_load": 1, "free_after_load": 1,
          "activation": 2, "non_torch": 2, "peak_torch": 2, "concurrency": 4, "kv_needed": 5}
#: Formats printed at one stage whatever their figures: vLLM V1's memory report comes once the KV cache is
#: allocated (Worker.compile_or_warm_up_model), after the KV figures although it restates the budget and weights.
_FORMAT_STAGE = {"vLLM V1 memory report": 4}
#: vLLM's memory terms, each rank's own: a start-up takes them from the rank whose KV bytes are the smallest (the
#: one the engine sizes by), never one rank's terms with another's KV figure.
_RANK_TERMS = ("weights", "weights_non_torch", "activation", "non_torch", "peak_torch", "cuda_graph", "total",
               "budget", "utilization", "free_at_start", "kv_bytes")
#: The line that opens a vLLM V1 start-up (vllm v0.8.4 and v0.10.2 vllm/v1/engine/core.py EngineCore.__init__).
V1_ENGINE_INIT = "Initializing a V1 LLM engine"
#: What V1's EngineCore prints once for each worker, without a worker's prefix: _initialize_kv_caches builds one
#: KV-cache config a worker (get_kv_cache_config, which logs these two lines) and unify_kv_cache_configs gives
#: every worker the fewest blocks (vllm v0.8.4 and v0.10.2 vllm/v1/engine/core.py, vllm/v1/core/kv_cache_utils.py).
_CORE_PER_WORKER = ("kv_tokens", "concurrency")
#: The most lines a terminal's wrap is joined back from.
_MAX_WRAP_LINES = 3
#: vLLM V1's worker line under --kv-cache-memory-bytes (vllm/v1/worker/gpu_worker.py determine_available_memory,
#: v0.11.0 on): where no configuration line states the option, this line does, at the GiB it prints (two decimals
#: at most: within 0.005 GiB of the bytes given).
_GIVEN_KV = re.compile(r"reserved (\d+(?:\.\d+)?)\s*GiB memory for KV Cache as specified by kv_cache_memory_bytes")
#: Settings read as numbers (into figures, where explain.py takes them); the others stay text.
_NUMERIC_SETTINGS = {"tensor_parallel": "count", "block_size": "count", "max_model_len": "count",
                     "utilization": "fraction", "max_total_tokens": "count", "num_gpu_blocks_override": "count",
                     "kv_cache_memory_bytes": "bytes"}


def read_log(path: Path | str, startup: Optional[int] = None, accounting: Optional[Accounting] = None) -> EngineLog:
    """Read and parse a start-up log file (parse_log); unreadable, binary or oversized files are InputErrors naming
    the file. 'FILE@N' (a file of that name not existing) picks start-up N of a log that holds several.
    `accounting`: the engine version the caller knows (parse_startups)."""
    path, startup = _split_startup(Path(path).expanduser(), startup)
    text = read_text(path, MAX_LOG_BYTES, "a text log", lambda problem: InputError(f"--engine-log {path}: {problem}"),
                     too_large="pass the start-up part", lenient=True)
    return parse_log(text, str(path), startup, accounting)


def read_startups(path: Path | str, accounting: Optional[Accounting] = None) -> tuple[EngineLog, ...]:
    """Every start-up of a log file, each explained on its own (parse_startups)."""
    first = read_log(path, 1, accounting)
    return (first,) + tuple(read_log(path, n, accounting) for n in range(2, _count_startups(first) + 1))


def _split_startup(path: Path, startup: Optional[int]) -> tuple[Path, Optional[int]]:
    match = re.fullmatch(r"(.+)@(\d{1,4})", path.name)
    if startup is None and match and not path.exists():
        return path.with_name(match.group(1)), int(match.group(2))
    return path, startup


#: Largest figure a log line may carry: bytes (1 PiB on one GPU) and counts (tokens, blocks, GPUs); past these the
#: line is corrupt, and 1e400 or a 400-digit number would overflow the arithmetic downstream.
_MAX_LOGGED_BYTES = 1 << 50
_MAX_LOGGED_COUNT = 1 << 40


def _checked(key: str, kind: str, text: str, name: str, line_no: int) -> float:
    """One figure converted and checked, or InputError naming the log, the line and the figure."""
    where = f"--engine-log {name} line {line_no}: {key.replace('_', ' ')} {text[:40]}"
    try:
        value = _CONVERT[kind](text)
    except (ValueError, OverflowError):
        raise InputError(f"{where} is not a number rooflab can read") from None
    if not math.isfinite(value):
        raise InputError(f"{where} is not a finite number")
    if kind == "fraction" and not 0 < value <= 1:
        raise InputError(f"{where}: a memory utilisation must be in (0, 1]")
    limit = _MAX_LOGGED_BYTES if kind in ("gib", "bytes") else _MAX_LOGGED_COUNT
    if kind != "fraction" and abs(value) > limit:
        raise InputError(f"{where} is past any real GPU (at most {limit:,}{'' if kind == 'count' else ' bytes'})")
    if value < 0 and key != "kv_bytes":
        raise InputError(f"{where} is negative")
    return value


def _records(text: str) -> tuple[list[int], list[str]]:
    """The log's line numbers and lines, with a configuration line a terminal wrapped joined to the lines that
    continue its open bracket or quote (logrules.config_lines), numbered by its first line."""
    lines = text.splitlines()
    numbers, records, i = [], [], 0
    while i < len(lines):
        used = 1 if lines[i].startswith(PROVENANCE) else config_lines(lines, i)
        numbers.append(i + 1)
        records.append("".join(lines[i:i + used]))
        i += used
    return numbers, records


def _lines(text: str):
    """(line number, line) with provenance notes skipped and lines a terminal wrapped joined back."""
    numbers, lines = _records(text)
    i = 0
    while i < len(lines):
        line, used = lines[i], 1
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not line.startswith(PROVENANCE) and any(a in line + nxt and a not in nxt for a in ANCHORS):
            fields = _read_count(line)
            for extra in range(1, _MAX_WRAP_LINES):
                if i + extra >= len(lines) or any(a in lines[i + extra] for a in ANCHORS):
                    break
                tail = "".join(lines[i + 1:i + extra + 1])
                joined = max((line + tail, line.rstrip() + " " + tail.lstrip()), key=lambda j: _read_count(j, tail))
                if _read_count(joined, tail) > fields and not incomplete(joined) or \
                        incomplete(line) and not incomplete(joined):
                    line, used = joined, extra + 1
                    break
        if not line.startswith(PROVENANCE):
            yield numbers[i], line
        i += used


def _read_count(line: str, tail: str = "") -> int:
    """What a line says, for the wrap's join: its rules' fields (read_line) and its sampler line (sampler_of), where
    that does not lie whole in the `tail` joined to it (a line of its own then, never a cut one's rest)."""
    sampler = sampler_of(line) is not None and sampler_of(tail.strip()) is None
    return len(read_line(line)) + sampler


@dataclass
class _Startup:
    """A start-up being read: its figures, formats, settings and where it stands."""

    figures: dict[str, Logged] = field(default_factory=dict)
    ranks: dict[str, set] = field(default_factory=dict)     # figure -> ranks that printed it
    by_rank: dict[Optional[str], dict[str, tuple[Logged, float]]] = field(default_factory=dict)  # rank -> figure ->
    #                                                           (its first line, half the last digit it was printed to)
    formats: dict[str, None] = field(default_factory=dict)
    engines: set = field(default_factory=set)
    settings: dict[str, Logged] = field(default_factory=dict)
    stage: dict[Optional[str], int] = field(default_factory=dict)   # rank -> latest stage
    v1_engine: bool = False     # opened by V1's 'Initializing a V1 LLM engine' line (V1_ENGINE_INIT)
    core_prints: dict[str, int] = field(default_factory=dict)       # _CORE_PER_WORKER figure -> prints so far

    @property
    def has_kv(self) -> bool:
        return any(k in self.figures for k in _KV_FIGURES)

    @property
    def kept(self) -> bool:
        """A start-up to report: a KV figure, or vLLM's concurrency line alone (_concurrency_only decides)."""
        return self.has_kv or "concurrency" in self.figures

    def starts_anew(self, hit: Hit, value: float, rank: Optional[str]) -> bool:
        """Whether this figure belongs to the next start-up (module docstring)."""
        if not self.has_kv:
            return False
        old = self.by_rank.get(rank, {}).get(hit.key)     # the same process printing it again, otherwise
        if old is not None and abs(old[0].value - value) > old[1] + _slack(hit):
            return True
        return _stage(hit) < self.stage.get(rank, 0) and hit.key not in self.figures

    def worker_of(self, hit: Hit, rank: Optional[str]) -> Optional[str]:
        """The rank a figure is one worker's print of: V1's EngineCore prints _CORE_PER_WORKER once a worker, with
        no prefix, so within a start-up its V1 line opened the n-th print is worker n's (the first keeps None)."""
        if rank is not None or not self.v1_engine or hit.key not in _CORE_PER_WORKER:
            return rank
        n = self.core_prints.get(hit.key, 0)
        self.core_prints[hit.key] = n + 1
        return f"EngineCore's print {n + 1}" if n else None

    def add(self, hit: Hit, value: float, rank: Optional[str], line_no: int, line: str) -> None:
        self.formats[hit.fmt] = None
        self.engines.add(hit.engine)
        self.stage[rank] = max(self.stage.get(rank, 0), _stage(hit))
        old = self.figures.get(hit.key)
        self.ranks.setdefault(hit.key, set()).add(rank)
        logged = Logged(value, line_no, line.strip())
        self.by_rank.setdefault(rank, {}).setdefault(hit.key, (logged, _slack(hit)))
        if old is None or (hit.key in _PER_RANK_MIN and value < old.value):
            self.figures[hit.key] = logged

    def sized(self) -> dict[str, Logged]:
        """The figures, with the memory terms of the rank whose KV bytes are the smallest where several printed them
        (the other ranks' terms fill in what that rank did not print)."""
        printed = [r for r, figures in self.by_rank.items() if "kv_bytes" in figures]
        if len(printed) < 2:
            return self.figures
        rank = min(printed, key=lambda r: self.by_rank[r]["kv_bytes"][0].value)
        return {**self.figures, **{k: v[0] for k, v in self.by_rank[rank].items() if k in _RANK_TERMS}}


def _stage(hit: Hit) -> int:
    return 5 if "error" in hit.fmt else _FORMAT_STAGE.get(hit.fmt, _STAGE.get(hit.key, 3))


def _slack(hit: Hit) -> float:
    """Half the last digit a figure was printed to (vLLM prints the weights as 14.9889 and 14.99 GiB): two prints
    of one value from one process differ by at most the sum of theirs."""
    whole, _, decimals = hit.text.partition(".")
    return 0.5 * 10.0 ** -len(decimals) * (GiB if hit.kind == "gib" else 1) if hit.kind != "count" else 0.0


def parse_startups(text: str, name: str = "log", accounting: Optional[Accounting] = None) -> tuple[EngineLog, ...]:
    """Every start-up of a vLLM or SGLang log (module docstring), each with the first occurrence of its figures
    (the smallest over ranks for per-rank figures). `accounting` is the engine version the caller knows (a case's,
    --engine-version's): it is needed only to read vLLM's concurrency line alone (_concurrency_only)."""
    done: list[_Startup] = []
    cur = _Startup()
    for line_no, line in _lines(text):
        stated = settings_of(line)
        if stated and cur.has_kv:
            done.append(cur)
            cur = _Startup()
        for key, raw in stated.items():
            value = _checked(key, _NUMERIC_SETTINGS[key], raw, name, line_no) if key in _NUMERIC_SETTINGS else raw
            cur.settings.setdefault(key, Logged(value, line_no, line.strip()))
            if key in _NUMERIC_SETTINGS and key not in cur.figures:
                cur.figures[key] = Logged(value, line_no, line.strip())
        ran = sampler_of(line)
        if ran is not None:
            cur.settings.setdefault("sampler", Logged(ran, line_no, line.strip()))
        given = _GIVEN_KV.search(line)
        if given is not None and "kv_cache_memory_bytes" not in cur.settings:
            value = _checked("kv_cache_memory_bytes", "gib", given.group(1), name, line_no)
            cur.settings["kv_cache_memory_bytes"] = Logged(value, line_no, line.strip())
            cur.figures.setdefault("kv_cache_memory_bytes", Logged(value, line_no, line.strip()))
        if V1_ENGINE_INIT in line:
            cur.v1_engine = True
        rank = rank_of(line)
        hits = [(hit, _checked(hit.key, hit.kind, hit.text, name, line_no)) for hit in read_line(line)]
        ranks = [cur.worker_of(hit, rank) for hit, _ in hits]
        if any(cur.starts_anew(hit, value, r) for (hit, value), r in zip(hits, ranks)):   # a line is never split
            done.append(cur)
            cur = _Startup()
            ranks = [cur.worker_of(hit, rank) for hit, _ in hits]
        for (hit, value), r in zip(hits, ranks):
            cur.add(hit, value, r, line_no, line)
    done.append(cur)
    found: list[_Startup] = []
    for s in done:   # a configuration line after the last KV figure, with none after it, belongs to that start-up
        if s.kept or not found:
            found.append(s)
        else:
            for key, logged in s.settings.items():
                found[-1].settings.setdefault(key, logged)
                if key in _NUMERIC_SETTINGS:
                    found[-1].figures.setdefault(key, logged)
    found = [s for s in found if s.kept]
    if not found:
        raise InputError(f"--engine-log {name}: no vLLM or SGLang KV-cache line found; looked for "
                         f"{', '.join(LOOKED_FOR)}")
    logs = []
    for n, s in enumerate(found, 1):
        if len(s.engines) > 1:
            raise InputError(f"--engine-log {name}: holds lines of both vLLM and SGLang; pass one engine's log")
        engine = s.engines.pop()
        formats = tuple(s.formats)
        ranks = max((len(s.ranks.get(k, ())) for k in _KV_FIGURES), default=1)
        figures, notes = s.sized(), ()
        read_as = _accounting(engine, formats, figures, s.settings)
        if not s.has_kv:
            figures, notes = _concurrency_only(name, figures, accounting)
            read_as = accounting
        logs.append(EngineLog(name, engine, read_as, formats, figures, s.settings, n, ranks, notes))
    return tuple(logs)


def _concurrency_only(name: str, figures: dict[str, Logged], accounting: Optional[Accounting]):
    """(figures, notes) of a start-up whose only KV sign is vLLM's 'Maximum concurrency' line: V1's X is blocks over
    the blocks one request holds, so L x X is the tokens of L-token requests the cache holds, within
    CONCURRENCY_PRECISION x L (module docstring); V0's line and a line without an accounting are refused."""
    line = figures["concurrency"]
    length = figures.get("max_model_len")
    if accounting is None or accounting.engine is not Engine.vllm or not accounting.is_v1 or length is None:
        what = "no engine version was given" if accounting is None else f"the engine version is {accounting}"
        raise InputError(f"--engine-log {name}: its only KV-cache figure is vLLM's concurrency line ({line.source}), "
                         f"which counts blocks per request under V1 and tokens under V0; {what}: give a vLLM V1 "
                         "version (--engine-version v1 or a V1 release) to read it")
    tokens = length.value * line.value
    slack = CONCURRENCY_PRECISION * length.value
    note = (f"KV figure from the concurrency line alone: {int(length.value):,} x {line.value:.2f} = {tokens:,.0f} "
            f"tokens of {int(length.value):,}-token requests, within {slack:,.0f} tokens ({100 * slack / tokens:.2f}%: "
            "V1 prints X to two decimals)")
    located = _release_note(line.text, accounting)
    return {**figures, "concurrency_tokens": Logged(tokens, line.line_no, line.text)}, (note,) + located


def releases_printing_at(text: str) -> tuple[tuple[int, ...], ...]:
    """The releases read (V1_CONCURRENCY_CALLS) whose V1 prints a concurrency line where `text`'s
    '[kv_cache_utils.py:N]' prefix says it was printed; none for a line without one or a location no release read
    prints it at."""
    at = _KV_CACHE_UTILS_AT.search(text)
    if at is None:
        return ()
    return tuple(r for r, calls in V1_CONCURRENCY_CALLS.items() if int(at.group(1)) in calls)


def _release_note(text: str, accounting: Accounting) -> tuple[str, ...]:
    """What the concurrency line's location says of the release that printed it (releases_printing_at), where it
    names one: the line alone prints no release, and a caller's V1 label may stand for another range's rules."""
    releases = releases_printing_at(text)
    if not releases:
        return ()
    named = " or ".join(release_text(r) for r in releases)
    at = _KV_CACHE_UTILS_AT.search(text).group(0)
    note = (f"the line's location {at} is where vLLM {named} prints it, of the {len(V1_CONCURRENCY_CALLS)} "
            "releases whose kv_cache_utils.py was read")
    others = {accounting_of(Engine.vllm, r, True) for r in releases} - {accounting}
    if others:
        note += (f"; {named} is not {accounting}'s release range but "
                 f"{' or '.join(str(a) if a else 'no V1 accounting' for a in sorted(others, key=str))}'s")
    return (note,)


def parse_log(text: str, name: str = "log", startup: Optional[int] = None,
              accounting: Optional[Accounting] = None) -> EngineLog:
    """The figures of one start-up of a vLLM or SGLang log (parse_startups): the only one, or start-up `startup`
    (1-based); a log of several start-ups without `startup` is an InputError listing them.

    Lines starting with '# source:' (a provenance note, as rooflab's fixtures carry) are skipped.
    """
    logs = parse_startups(text, name, accounting)
    if startup is None and len(logs) > 1:
        where = "; ".join(f"{name}@{log.startup} from line {min(f.line_no for f in log.figures.values())}"
                          for log in logs)
        raise InputError(f"--engine-log {name}: holds {len(logs)} start-ups, each explained on its own: {where}")
    n = startup or 1
    if not 1 <= n <= len(logs):
        raise InputError(f"--engine-log {name}@{n}: the log holds {len(logs)} start-up(s)")
    return dataclass_replace_count(logs[n - 1], len(logs))


def dataclass_replace_count(log: EngineLog, count: int) -> EngineLog:
    """The log with how many start-ups its file holds recorded (read_startups reads the rest)."""
    object.__setattr__(log, "_count", count)
    return log


def _count_startups(log: EngineLog) -> int:
    return getattr(log, "_count", 1)


def _accounting(engine: Engine, formats: tuple[str, ...], figures: dict[str, Logged],
                settings: Optional[dict[str, Logged]] = None) -> Accounting:
    """The accounting a log belongs to (vocab.Accounting): where its engine line states a release, the accounting of
    that release among those of the engine its formats show (V0 or V1: vocab.RELEASE_RANGE); else its formats'."""
    by_format = _format_accounting(engine, formats, figures)
    logged = (settings or {}).get("release")
    release = engine_release(logged.value) if logged is not None else None
    if release is None:
        return by_format
    return accounting_of(engine, release, by_format.is_v1) or by_format


def _format_accounting(engine: Engine, formats: tuple[str, ...], figures: dict[str, Logged]) -> Accounting:
    """The accounting a log's formats belong to (vocab.Accounting)."""
    if engine is Engine.sglang:
        elapsed = any("Load weight end. elapsed=" in f.text for f in figures.values())
        hybrid = "SGLang mamba pool line" in formats     # linear-attention pools arrived in v0.5
        return Accounting.sglang_v0_5 if elapsed or hybrid else Accounting.sglang_v0_4
    if any(f.startswith("vLLM V1") for f in formats):
        return Accounting.vllm_v1
    if "vLLM V0 v0.6.4 results line" in formats:
        return Accounting.vllm_v0_6_4
    if any(f.startswith(("vLLM V0 v0.6.5", "vLLM PR #10511", "vLLM V0 memory terms")) for f in formats):
        return Accounting.vllm_v0
    blocks = figures.get("gpu_blocks")
    if blocks is not None and ("kv_cache_utils" in blocks.text or "gpu_model_runner" in blocks.text):
        return Accounting.vllm_v1   # V1 before v0.7.3 printed '# GPU blocks' from kv_cache_utils.py
    if blocks is not None and re.search(r"cuda blocks", blocks.text, re.I):
        return Accounting.vllm_v0
    if "weights" in figures or "vLLM start-up error" in formats:
        return Accounting.vllm_v0
    return Accounting.vllm_v0_2


__all__ = ["CONCURRENCY_PRECISION", "EngineLog", "LOOKED_FOR", "PROVENANCE", "Logged", "MAX_LOG_BYTES",
           "V1_CONCURRENCY_CALLS", "parse_log", "parse_startups", "read_log", "read_startups", "releases_printing_at"]
