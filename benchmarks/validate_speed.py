"""How long `rooflab validate` takes on the bundled dataset, and where the time goes (cProfile).

CPU time (time.process_time) rather than wall time, so that other work on a shared machine does not count; the
profile's top entries show which step to make cheaper next. Run: python benchmarks/validate_speed.py
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time


def main() -> None:
    from rooflab.bench.validate import validate

    start = time.process_time()
    validate()
    first_s = time.process_time() - start
    profile = cProfile.Profile()
    profile.enable()
    validate()
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
    stats.print_stats(r"(fit_group|model_times|measurement_cost|schedule_fraction|validate_fields|check_values)")
    print(f"validate() on the bundled dataset: {first_s:.2f} s CPU (first call, this process)")
    print(out.getvalue().split("ncalls", 1)[-1][:2500])


if __name__ == "__main__":
    main()
