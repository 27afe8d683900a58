"""Deprecated alias of rooflab.floors, kept for one release: import from rooflab.floors.

The old names returned physical floors under the words of a prediction; they are floors.py's names now:
`predict` is `floor`, `predict_kernel` is `floor_kernel`, `Prediction` is `Floors` (the same objects).
Fitted times are predict.py's (`predict_time`).
"""

from __future__ import annotations

from .floors import (EMULATED_EXP_FLOP, MAX_ROOF, Ceilings, Floors, emulated_exps, floor, floor_kernel,
                     shared_fma_time)

predict = floor
predict_kernel = floor_kernel
Prediction = Floors

__all__ = ["EMULATED_EXP_FLOP", "MAX_ROOF", "Ceilings", "Floors", "Prediction", "emulated_exps", "floor",
           "floor_kernel", "predict", "predict_kernel", "shared_fma_time"]
