"""rooflab: an analytical roofline and memory calculator for LLM attention.

The data flow reads straight through:
YAML (hardware/, models/) -> specs (specs/, read by load) -> cost (cost/) -> physical floors (floors)
beside fitted times (predict) -> rows (rows) -> the answers (report, capacity, step, ...) -> render / plot / cli.
The README's "How it is built" maps every module in its layer.
"""

from .errors import RooflabError, SpecError

__version__ = "0.1.0"

#: Names loaded on first use (PEP 562), so that `import rooflab` is quick: the console script's interrupt handling
#: (rooflab._entry) starts before NumPy and the specs load.
_LAZY = {"available": "load", "load_gpu": "load", "load_model": "load", "AttentionHeads": "specs",
         "GpuSpec": "specs", "ModelSpec": "specs", "DType": "dtypes"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):              # a submodule, as `import rooflab` once loaded load, specs and units
        import importlib

        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'rooflab' has no attribute {name!r}")

__all__ = ["AttentionHeads", "DType", "GpuSpec", "ModelSpec", "RooflabError", "SpecError",
           "available", "load_gpu", "load_model", "__version__"]
