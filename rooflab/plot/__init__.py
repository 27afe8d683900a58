"""rooflab's charts: results -> matplotlib Figure. Nothing here shows or saves a figure.

Each chart is two calls: a `*_data` / `*_sweep` function computes the numbers from specs with
rooflab's cost functions (rooflab.sweeps, which imports no matplotlib: use it where matplotlib is not
installed), and a `*_chart` function draws them:

    from rooflab import load_gpu, load_model
    from rooflab.plot import roofline_data, roofline_chart
    fig = roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h100-sxm")], seq_len=8192))
    fig.axes[0].set_title("my title")        # restyle freely; the Figure is yours
    roofline_data(...).to_frame()             # every sweep's numbers as a pandas DataFrame (long format)

The sweeps take the user's grid (time_sweep(seq_lens=[1024, 4096]), decode_sweep(context_lens=...,
batches=...)); the *_sweeps functions compute one sweep per GPU on one grid, and time_chart,
decode_chart and capacity_chart draw a sequence of them as one panel per GPU.

Figures are matplotlib.figure.Figure objects built without pyplot (a subclass that shows itself as a PNG
when it is the last expression of a notebook cell, without %matplotlib inline). `save_figure` (save.py)
writes one to .png, .svg or .pdf for the CLI, and `save_data` a chart's numbers (its to_frame()) to .csv or
.json (`rooflab plot ... --data FILE`).

The memory, time, capacity and one-panel decode charts are laid out once, as they are made (style.fit_layout:
the margins constrained layout would give, without its cost at every savefig); after restyling one so that its
texts grow (a longer title, bigger fonts), fig.set_layout_engine("constrained") refits the margins at every draw.
The other charts use constrained layout. The names below load on first use.
"""

import importlib

#: Each public name and the module it is defined in, loaded on first use (PEP 562): `rooflab plot capacity` imports
#: only the capacity chart's modules (sweeps.py, save.py), not the roofline's, the validation's nor their imports.
_LAZY = {
    **dict.fromkeys(("roofline_chart",), ".roofline"),
    **dict.fromkeys(("DATA_FORMATS", "FORMATS", "save_data", "save_figure"), ".save"),
    **dict.fromkeys(("MERGE_TOKENS", "GpuRoofs", "MeasuredPoint", "RooflineData", "RooflinePoint", "gpu_roofs",
                     "roofline_data"), "..sweeps.points"),
    **dict.fromkeys(("DECODE_BATCHES", "CapacitySweep", "DecodeSweep", "MemoryLine", "MemorySweep", "TimeSweep",
                     "capacity_sweep", "capacity_sweeps", "decode_sweep", "decode_sweeps", "memory_sweep", "time_sweep",
                     "time_sweeps"), "..sweeps.series"),
    **dict.fromkeys(("budget_chart",), ".budget"),
    **dict.fromkeys(("capacity_chart", "decode_chart", "memory_chart", "time_chart"), ".sweeps"),
    **dict.fromkeys(("validation_chart",), ".validation"),
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "roofline_data", "roofline_chart", "memory_sweep", "memory_chart", "time_sweep", "time_chart",
    "time_sweeps", "decode_sweep", "decode_sweeps", "decode_chart", "capacity_sweep", "capacity_sweeps", "capacity_chart", "budget_chart", "save_figure", "FORMATS", "save_data", "DATA_FORMATS",
    "MeasuredPoint", "RooflinePoint", "RooflineData", "GpuRoofs", "gpu_roofs", "MemorySweep", "MemoryLine",
    "TimeSweep", "DecodeSweep", "CapacitySweep", "DECODE_BATCHES", "MERGE_TOKENS", "validation_chart",
]
