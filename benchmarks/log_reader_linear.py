"""The start-up log reader's time against its input size: linear, including lines of one field repeated.

    python3 benchmarks/log_reader_linear.py

For each adversarial field (issue 24: 20,000 repeats of one field on one line took more than 30 s when a pattern
held `.*?` between two fields), for a plain log and for configuration records a terminal wrapped (one left open with
every later line continuing it, or every line opening one), prints the seconds to read 5,000 to 40,000 repeats and
the ratio of the time per repeat at the largest size to the smallest (about 1 for a linear reader, the size ratio,
8, for a quadratic one). Not a test: times depend on the machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.engines.logs import parse_startups  # noqa: E402

FIELDS = ("KV Cache is allocated. ", "Memory profiling results: total_gpu_memory=1GiB ", "LLM engine (v1) with config: ",
          "Load weight end. ", "max_total_num_tokens=1 ", "Maximum concurrency for ", "aaaaaaa ")
SIZES = (5000, 10000, 20000, 40000)
#: Configuration lines a terminal wrapped (logrules.config_lines): a record left open, followed by lines that
#: continue it without closing it, or by lines each opening a record of its own.
OPEN_CONFIG = "INFO 08-28 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen\n"
WRAPPED = (("open config record, unclosed continuations", "aaaaaaa', 'b': {'c\n"),
           ("open config record, every line a new one", "non-default args: {'model': 'Q\n"))
PLAIN = "INFO 08-19 14:58:40 [gpu_worker.py:277] Available KV cache memory: 112.61 GiB\n"


def seconds(text: str) -> float:
    start = time.perf_counter()
    try:
        parse_startups(text, "bench")
    except Exception:  # noqa: BLE001 - only the time matters here
        pass
    return time.perf_counter() - start


def main() -> None:
    print(f"{'input':<52}" + "".join(f"{n:>10,}" for n in SIZES) + "   per-repeat ratio")
    cases = [(repr(f), lambda n, f=f: f * n + "\nGPU KV cache size: 5 tokens\n") for f in FIELDS]
    cases.append(("plain log lines (one per repeat)", lambda n: PLAIN * n))
    for label, line in WRAPPED:
        cases.append((label, lambda n, line=line: OPEN_CONFIG + line * n + PLAIN))
    for label, make in cases:
        times = [seconds(make(n)) for n in SIZES]
        ratio = (times[-1] / SIZES[-1]) / (times[0] / SIZES[0]) if times[0] else float("nan")
        print(f"{label[:50]:<52}" + "".join(f"{t:>10.3f}" for t in times) + f"   {ratio:>6.2f}")


if __name__ == "__main__":
    main()
