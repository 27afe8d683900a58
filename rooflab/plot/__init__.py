"""rooflab's charts: results -> matplotlib Figure. Nothing here shows or saves a figure.

Each chart is two calls: a `*_data` / `*_sweep` function computes the numbers from specs with
rooflab's cost functions (series.py, no matplotlib), and a `*_chart` function draws them:

    from rooflab import load_gpu, load_model
    from rooflab.plot import roofline_data, roofline_chart
    fig = roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h100-sxm")], seq_len=8192))
    fig.axes[0].set_title("my title")        # restyle freely; the Figure is yours

Figures are matplotlib.figure.Figure objects built without pyplot. `save_figure` (save.py)
writes one to .png, .svg or .pdf for the CLI.
"""

from .roofline import roofline_chart
from .save import FORMATS, save_figure
from .series import (DECODE_BATCHES, MERGE_TOKENS, CapacitySweep, DecodeSweep, GpuRoofs, MeasuredPoint,
                     MemoryLine, MemorySweep, RooflineData, RooflinePoint, TimeSweep, capacity_sweep,
                     decode_sweep, gpu_roofs, memory_sweep, roofline_data, time_sweep)
from .sweeps import budget_chart, capacity_chart, decode_chart, memory_chart, time_chart
from .validation import validation_chart

__all__ = [
    "roofline_data", "roofline_chart", "memory_sweep", "memory_chart", "time_sweep", "time_chart",
    "decode_sweep", "decode_chart", "capacity_sweep", "capacity_chart", "budget_chart", "save_figure", "FORMATS",
    "MeasuredPoint", "RooflinePoint", "RooflineData", "GpuRoofs", "gpu_roofs", "MemorySweep", "MemoryLine",
    "TimeSweep", "DecodeSweep", "CapacitySweep", "DECODE_BATCHES", "MERGE_TOKENS", "validation_chart",
]
