"""Issue 27's every-GPU check: the published kernel rows against rooflab's floors and the H200 fits transferred.

    python benchmarks/published_predictions.py        (the same text as `rooflab validate --published`)

Reads measurements/published/ (rooflab.published), fits nothing on it, and prints the floors beaten, the errors per
source / GPU / family and per family off the H200 against the 12% / 30% target (RESULTS.md, "Session 7: every-GPU
predictions").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.fit.published_check import published_text  # noqa: E402

if __name__ == "__main__":
    sys.stdout.write(published_text())
