"""The GPU tests' fixtures (`cp`, `rng`, `hopper`), defined in gpu_support.py, for every test file here."""

from .gpu_support import cp, hopper, rng  # noqa: F401 - pytest fixtures, found by name
