"""Sweeps as pandas DataFrames in long format: one row per (series, x), SI units, ready for concat and groupby.

pandas is imported inside the functions: it is slow to import and only notebooks need it.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def long_frame(x_name: str, x: np.ndarray, series: Mapping[str, np.ndarray], value_name: str,
               **constants: Any):
    """Rows of `constants` (model, gpu, ...), then `series` (the series' name), `x_name` (whole tokens) and
    `value_name`, for every x of every series, in the order given."""
    import pandas as pd

    xs = np.asarray(x, dtype=np.float64)
    parts = []
    for label, values in series.items():
        part = {name: [value] * len(xs) for name, value in constants.items()}
        part.update({"series": [label] * len(xs), x_name: xs.astype(np.int64),
                     value_name: np.broadcast_to(np.asarray(values, dtype=np.float64), xs.shape)})
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True)
