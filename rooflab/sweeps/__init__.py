"""Each chart's numbers, computed without matplotlib: specs + workload -> frozen dataclasses of arrays.

A sweep is priced by rooflab's cost functions through rooflab.cost.layers, as the reports are, and drawn by
rooflab.plot (which needs matplotlib); every sweep's to_frame() gives its numbers as a pandas DataFrame (pandas is
imported only then). So a notebook or a script without matplotlib can compute and inspect every chart's numbers:

    from rooflab import load_gpu, load_model
    from rooflab.sweeps import decode_sweep
    sweep = decode_sweep(load_model("llama-3-8b"), load_gpu("h200"))    # no matplotlib imported

    points.py  roofline_data: each GPU's roofs and the attention kernels as points (RooflineData)
    series.py  memory_sweep, time_sweep(s), decode_sweep(s), capacity_sweep(s) (MemorySweep, TimeSweep, ...)
    grid.py    the x axis: the default length grid, or the user's lengths (checked)
    frames.py  long-format DataFrames for to_frame()

These modules were rooflab/plot/series.py, points.py, grid.py and frames.py; those paths and rooflab.plot's
names re-export them for one release.
"""

from __future__ import annotations

#: Where each public name lives: the modules load on first use (PEP 562), so a capacity chart does not import the
#: roofline points (and with them the measured-data reader) it never draws.
_HOMES = {
    **dict.fromkeys(("MERGE_TOKENS", "GpuRoofs", "MeasuredPoint", "RooflineData", "RooflinePoint", "beaten_text",
                     "floor_beaters", "gpu_roofs", "roofline_data"), "points"),
    **dict.fromkeys(("DECODE_BATCHES", "CapacitySweep", "DecodeSweep", "MemoryLine", "MemorySweep", "TimeSweep",
                     "capacity_sweep", "capacity_sweeps", "decode_sweep", "decode_sweeps", "memory_sweep",
                     "time_sweep", "time_sweeps"), "series"),
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["DECODE_BATCHES", "MERGE_TOKENS", "CapacitySweep", "DecodeSweep", "GpuRoofs", "MeasuredPoint", "MemoryLine",
           "MemorySweep", "RooflineData", "RooflinePoint", "TimeSweep", "beaten_text", "capacity_sweep",
           "capacity_sweeps", "decode_sweep", "decode_sweeps", "floor_beaters", "gpu_roofs", "memory_sweep",
           "roofline_data", "time_sweep", "time_sweeps"]
