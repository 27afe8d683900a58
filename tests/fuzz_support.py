"""Shared machinery of the fuzz suite (tests/test_fuzz_*.py): run a command, then check every invariant once.

The team's rule for bad input: it never reaches a traceback or a wrong answer. A command exits 0
or 2; on 2, stderr holds one or two lines, the first starting with "error:", naming the option,
file, field or value at fault, with no traceback; on 0, JSON parses strictly (no NaN, no
Infinity) and no table shows nan or inf as a figure; no file appears in the working folder but the
requested output (no .tmp, nothing on failure) and no input changes; every call ends within a time
bound and with bounded memory. `check_cli` asserts all of it for one call; `check_api` the Python
API's share (RooflabError naming the field, never a TypeError, ValueError or KeyError from deep
inside).

CLI calls run in this process through typer's CliRunner (a few hundredths of a second each), under
an alarm (a hang raises `Hang`, which no `except Exception` catches) and an address-space limit
(`resource.RLIMIT_AS`, 2 GiB above what the process holds), so a case that would allocate
gigabytes fails fast instead of taking the machine with it. `run_subprocess` runs the console
script for the few cases that need a real process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parents[1]
HARDWARE = ROOT / "hardware"
MODELS = ROOT / "models"
MEASUREMENTS = ROOT / "measurements"

#: Seconds after which a call counts as hung: a watchdog for work that never ends (an unbounded loop), not a
#: speed bound. Speed targets live in benchmarks/ and RESULTS.md; no test here fails because a call was slow.
HANG_S = 120.0
#: Bytes of address space a call may add to what the process already holds.
MEMORY_HEADROOM_BYTES = 2 << 30
#: stderr of a refused call is one or two lines; more than this many characters is not "a line or two".
MAX_ERROR_CHARS = 4000


def fuzz_settings(max_examples: int, **kw: Any) -> settings:
    """Deterministic settings for CI: derandomized, no example database, no hypothesis deadline (no test
    asserts on time; a watchdog of HANG_S catches work that never ends), no
    shrinking (a failing example is reported as drawn, in bounded time).

    ROOFLAB_FUZZ_SCALE=10 runs ten times the examples (a local deep run); ROOFLAB_FUZZ_COLLECT=FILE
    records every failure in FILE instead of stopping at the first of each test.
    """
    kw.setdefault("phases", (Phase.explicit, Phase.generate))   # no shrinking: a failure is reported as found,
    scale = float(os.environ.get("ROOFLAB_FUZZ_SCALE", "1"))     # more examples for a local deep run
    max_examples = max(1, int(max_examples * scale))
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,   # in bounded time
                    suppress_health_check=list(HealthCheck), print_blob=False, **kw)


# --- running a command -----------------------------------------------------------------------------------

class Hang(BaseException):
    """A call ran past its time bound. A BaseException, so the CLI's `except Exception` cannot swallow it."""


@dataclasses.dataclass
class Outcome:
    """What one call did: exit status, its two streams, how long it took, and an escaped exception's traceback."""

    args: list[str]
    code: int
    stdout: str
    stderr: str
    elapsed_s: float
    escaped: Optional[str] = None       # formatted traceback of an exception that left the CLI

    def describe(self) -> str:
        shown = " ".join(_shell_word(a) for a in self.args)
        if len(shown) > 400:
            shown = shown[:400] + "..."
        err = self.stderr if len(self.stderr) < 1500 else self.stderr[:1500] + "..."
        out = self.stdout if len(self.stdout) < 600 else self.stdout[:600] + "..."
        lines = [f"$ rooflab {shown}", f"exit {self.code} after {self.elapsed_s:.2f} s"]
        if err:
            lines.append("stderr:\n" + err.rstrip())
        if out:
            lines.append("stdout:\n" + out.rstrip())
        if self.escaped:
            lines.append("escaped exception:\n" + self.escaped[-1200:])
        return "\n".join(lines)


def _shell_word(text: str) -> str:
    return text if re.fullmatch(r"[\w@%+=:,./-]+", text) else repr(text)


def _vm_size_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@contextlib.contextmanager
def bounded(limit_s: float = HANG_S, headroom_bytes: int = MEMORY_HEADROOM_BYTES):
    """Run the body under a watchdog alarm of `limit_s` (raising Hang) and an address-space limit `headroom_bytes` above now."""

    def on_alarm(signum, frame):  # noqa: ARG001
        raise Hang(f"still running after {limit_s:g} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = _vm_size_bytes()
    limited = False
    if vm:
        cap = vm + headroom_bytes
        if hard == resource.RLIM_INFINITY or cap < hard:
            try:
                resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
                limited = True
            except (ValueError, OSError):
                pass
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if limited:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def invoke(args: Sequence[str], cwd: Path, limit_s: float = HANG_S, env: Optional[dict] = None) -> Outcome:
    """`rooflab *args` in this process (typer's CliRunner), in folder `cwd`, bounded in time and memory."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    runner = CliRunner(env={"ROOFLAB_TRACEBACK": None, "COLUMNS": "200", **(env or {})})
    args = [str(a) for a in args]
    here = os.getcwd()
    os.chdir(cwd)
    start = time.perf_counter()
    try:
        with bounded(limit_s):
            result = runner.invoke(app, args, catch_exceptions=True)
    except Hang as exc:
        elapsed = time.perf_counter() - start
        return Outcome(args, -1, "", "", elapsed, f"Hang: {exc}")
    finally:
        os.chdir(here)
    elapsed = time.perf_counter() - start
    escaped = None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        escaped = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else repr(result.exception)
    return Outcome(args, result.exit_code, result.stdout, result.stderr, elapsed, escaped)


def run_subprocess(args: Sequence[str], cwd: Path, limit_s: float = HANG_S,
                   memory_bytes: int = 2 << 30) -> Outcome:
    """`python -m rooflab.cli *args` in a child process with RLIMIT_AS of `memory_bytes` and a timeout."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    env = {k: v for k, v in os.environ.items() if k != "ROOFLAB_TRACEBACK"}
    env["MPLBACKEND"] = "Agg"
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "rooflab.cli", *map(str, args)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=limit_s, preexec_fn=limit)
    except subprocess.TimeoutExpired as exc:
        return Outcome(list(map(str, args)), -1, _text(exc.stdout), _text(exc.stderr),
                       time.perf_counter() - start, f"Hang: timed out after {limit_s:g} s")
    return Outcome(list(map(str, args)), proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start)


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


# --- files ---------------------------------------------------------------------------------------------------

def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under `folder` (relative path -> size and SHA-1), hidden ones included."""
    out = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            try:
                if not stat.S_ISREG(path.stat().st_mode):   # a FIFO's open() waits for a writer: only regular files
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            out[str(path.relative_to(folder))] = (len(data), hashlib.sha1(data).hexdigest())
    return out


def digest(path: Path) -> Optional[str]:
    try:
        return hashlib.sha1(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


@contextlib.contextmanager
def scratch(prefix: str = "rooflab-fuzz-"):
    """A fresh empty folder, removed afterwards (hypothesis calls a test body many times per fixture)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        yield Path(name).resolve()


# --- strict output checks ------------------------------------------------------------------------------------

def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity (Python's default accepts them)."""
    return json.loads(text, parse_constant=_refuse_constant)


def non_finite_in(doc: Any, where: str = "$") -> Optional[str]:
    """Where in a parsed JSON document a non-finite float sits (a float past 1e308 parses to inf), or None."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return where
    if isinstance(doc, dict):
        for k, v in doc.items():
            found = non_finite_in(v, f"{where}.{k}")
            if found:
                return found
    if isinstance(doc, list):
        for i, v in enumerate(doc):
            found = non_finite_in(v, f"{where}[{i}]")
            if found:
                return found
    return None


#: nan / inf / infinity as a figure: not inside a word ("info", "inference", "Infinity Fabric" excepted below).
_NON_FINITE_TOKEN = re.compile(r"(?<![\w.])[-+]?(nan|inf|infinity)(?![\w])", re.IGNORECASE)


def non_finite_tokens(text: str) -> list[str]:
    """Lines of a table or CSV that show nan or inf as a figure."""
    bad = []
    for line in text.splitlines():
        if _NON_FINITE_TOKEN.search(line):
            bad.append(line.strip()[:200])
    return bad


IMAGE_MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".svg": None, ".pdf": b"%PDF"}


# --- the checker ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One CLI call and what is known about it.

    idents: strings that identify the bad input (option names, the value, the file); on exit 2 at least
        one of them must appear in the message. Empty: any refusal is accepted if it is well formed.
    expect: None (0 or 2 both fine), 0 (valid input: must succeed) or 2 (invalid: must be refused).
    outputs: paths the call may create or replace (only on exit 0).
    inputs: files the call reads; they must be byte-identical afterwards.
    json: stdout is JSON on success.
    table: stdout is a table / CSV / text on success (checked for nan and inf figures).
    """

    args: list[str]
    idents: list[str] = dataclasses.field(default_factory=list)
    expect: Optional[int] = None
    outputs: list[Path] = dataclasses.field(default_factory=list)
    inputs: list[Path] = dataclasses.field(default_factory=list)
    json: bool = False
    table: bool = True
    note: str = ""


def identifier_forms(text: str) -> list[str]:
    """The ways a message may show `text`: as given, stripped, repr'd (escapes), and a path's name.

    A text of one or two characters ('.', '$') counts only quoted or followed by a colon, so that it
    does not match by accident; a number counts from three digits on ('4096', not '0').
    """
    if re.fullmatch(r"[-+]?[0-9.]*[0-9][0-9.]*", text.strip()) and len(text.strip()) < 3:
        return []
    forms = {text, text.strip(), repr(text)[1:-1], ascii(text)[1:-1]}
    if "/" in text or text.endswith((".yaml", ".yml", ".csv", ".png", ".svg", ".pdf")):
        forms.update({Path(text).name, Path(text).stem})
    out = []
    for form in forms:
        if len(form) >= 3:
            out.append(form)
        elif form.strip():
            out += [f"'{form}'", f'"{form}"', f"{form}:"]
    return out


def names_input(stderr: str, idents: Iterable[str]) -> bool:
    low = stderr.lower()
    for ident in idents:
        for form in identifier_forms(ident):
            if form.lower() in low:
                return True
    return False


def problems_of(case: Case, out: Outcome, before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]],
                folder: Path, input_digests: dict[Path, Optional[str]]) -> list[str]:
    """Every invariant `out` breaks, as sentences (empty: all hold)."""
    problems: list[str] = []
    if out.escaped and out.escaped.startswith("Hang"):
        return [f"hang: {out.escaped}"]
    if out.escaped:
        last = out.escaped.strip().splitlines()[-1]
        problems.append(f"exception escaped the CLI: {last}")
    if out.code not in (0, 2):
        problems.append(f"exit status {out.code} (only 0 and 2 are allowed)")
    if case.expect is not None and out.code in (0, 2) and out.code != case.expect:
        problems.append(f"exit {out.code} where {case.expect} was expected ({case.note or 'see the case'})")
    if "Traceback" in out.stderr or "Traceback" in out.stdout:
        problems.append("a traceback in the output")
    if out.code == 2:
        lines = out.stderr.rstrip("\n").splitlines()
        if not lines or not lines[0].startswith("error:"):
            problems.append("exit 2 without an 'error:' line first on stderr")
        if not 1 <= len(lines) <= 2:
            problems.append(f"exit 2 with {len(lines)} lines on stderr (one or two expected)")
        if len(out.stderr) > MAX_ERROR_CHARS:
            problems.append(f"exit 2 with {len(out.stderr):,} characters on stderr")
        low = out.stderr.lower()
        if "internal error" in low or "this is a bug" in low or "out of memory" in low:
            problems.append("the refusal says it is a bug or ran out of memory: bad input got through")
        if case.idents and not names_input(out.stderr, case.idents):
            problems.append(f"the message names none of {[i[:60] for i in case.idents]}")
        if out.stdout.strip():
            problems.append("exit 2 after writing to stdout (half an answer)")
    if out.code == 0:
        if case.json:
            try:
                doc = strict_json(out.stdout)
            except ValueError as exc:
                problems.append(f"--format json output is not strict JSON: {exc}")
            else:
                where = non_finite_in(doc)
                if where:
                    problems.append(f"JSON holds a non-finite number at {where}")
        elif case.table:
            bad = non_finite_tokens(out.stdout)
            if bad:
                problems.append(f"output shows nan/inf as a figure: {bad[0]!r}")
    # files: only the requested outputs may appear, only on success; inputs never change
    allowed = {str(p.resolve().relative_to(folder)) for p in case.outputs if _under(p, folder)} if out.code == 0 else set()
    if out.code == 0:       # a symlink named as an output: the link itself (its content, read through it, changes)
        allowed |= {os.path.relpath(p, folder) for p in case.outputs if os.path.islink(p)}
    for name in sorted(set(after) - set(before)):
        if name not in allowed:
            problems.append(f"left a file behind: {name}")
    for name in sorted(set(before) & set(after)):
        if before[name] != after[name] and name not in allowed:
            problems.append(f"changed an existing file: {name}")
    for name in sorted(set(before) - set(after)):
        problems.append(f"removed a file: {name}")
    for path, old in input_digests.items():
        if digest(path) != old:
            problems.append(f"modified an input file: {path}")
    if out.code == 0:
        for p in case.outputs:
            if p.suffix.lower() in IMAGE_MAGIC and _under(p, folder) and p.exists():
                magic = IMAGE_MAGIC[p.suffix.lower()]
                head = p.read_bytes()[:16]
                if magic is not None and not head.startswith(magic):
                    problems.append(f"{p.name} is not a {p.suffix} image")
    return problems


def _under(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
        return True
    except ValueError:
        return False


def check_cli(case: Case, folder: Path) -> Outcome:
    """Run `case` in `folder` and assert every invariant; the assertion message shows the call and what broke."""
    inputs = {Path(p): digest(Path(p)) for p in case.inputs}
    before = snapshot(folder)
    out = invoke(case.args, folder)
    after = snapshot(folder)
    problems = problems_of(case, out, before, after, folder, inputs)
    if problems and _collect(problems, out.describe()):
        return out
    assert not problems, "; ".join(problems) + "\n" + out.describe()
    return out


def _collect(problems: list[str], described: str) -> bool:
    """ROOFLAB_FUZZ_COLLECT=FILE: append each failure to FILE (JSON lines) and go on, to see every failure class
    of a run at once instead of the first per test. Returns whether it recorded."""
    target = os.environ.get("ROOFLAB_FUZZ_COLLECT")
    if not target:
        return False
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"test": test, "problems": problems, "call": described}) + "\n")
    return True


def check_outcome(case: Case, out: Outcome, folder: Path, before: dict, input_digests: dict) -> None:
    """The same checks for an Outcome obtained another way (run_subprocess)."""
    problems = problems_of(case, out, before, snapshot(folder), folder, input_digests)
    if problems and _collect(problems, out.describe()):
        return
    assert not problems, "; ".join(problems) + "\n" + out.describe()


# --- the Python API ------------------------------------------------------------------------------------------

def check_api(call: Callable[[], Any], idents: Sequence[str] = (), expect_error: Optional[bool] = None,
              what: str = "") -> Any:
    """Call `call`: it returns, or raises a RooflabError naming one of `idents`; never another exception type.

    expect_error True: it must raise; False: it must return. Returns the value or the error.
    """
    from rooflab.errors import RooflabError

    problem, value = None, None
    try:
        with bounded():
            value = call()
    except Hang as exc:
        problem = f"hang: {exc}"
    except RooflabError as exc:
        value = exc
        message = str(exc)
        if expect_error is False:
            problem = f"refused valid input: {type(exc).__name__}: {message[:300]}"
        elif message.strip().count("\n") > 1:
            problem = f"a multi-line error: {message[:300]!r}"
        elif len(message) > MAX_ERROR_CHARS:
            problem = f"an error of {len(message):,} characters: {message[:200]!r}..."
        elif idents and not names_input(message, idents):
            problem = f"{type(exc).__name__} names none of {[i[:40] for i in idents]}: {message[:300]}"
    except MemoryError:
        problem = "MemoryError: the work was not bounded"
    except RecursionError:
        problem = "RecursionError from inside rooflab instead of a RooflabError"
    except Exception as exc:  # noqa: BLE001 - the point of the check
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(frames)
                      if "rooflab" in f.filename and "tests" not in f.filename), "?")
        problem = f"{type(exc).__name__} from inside rooflab ({where}) instead of a RooflabError: {str(exc)[:300]}"
    else:
        if expect_error is True:
            problem = f"accepted bad input, returned {value!r:.300}"
    if problem is not None:
        if _collect([problem], what or "api call"):
            return value
        raise AssertionError(f"{what}: {problem}" if what else problem)
    return value


def finite_everywhere(obj: Any, where: str = "result", depth: int = 0) -> Optional[str]:
    """Where a result (dataclass, mapping, sequence, NumPy array) holds a NaN or an infinity, or None."""
    import numpy as np

    if depth > 6:
        return None
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, bytes)):
        return None
    if isinstance(obj, (int,)):
        return None
    if isinstance(obj, float):
        return None if math.isfinite(obj) else where
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc" and not np.all(np.isfinite(obj)):
            return where
        if obj.dtype.kind == "O":
            for i, v in enumerate(obj.ravel()[:1000]):
                found = finite_everywhere(v, f"{where}[{i}]", depth + 1)
                if found:
                    return found
        return None
    if isinstance(obj, np.generic):
        return finite_everywhere(obj.item(), where, depth)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            found = finite_everywhere(getattr(obj, f.name, None), f"{where}.{f.name}", depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = finite_everywhere(v, f"{where}[{k!r}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj[:1000]):
            found = finite_everywhere(v, f"{where}[{i}]", depth + 1)
            if found:
                return found
    return None
