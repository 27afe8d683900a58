"""Published measurements (measurements/published/): other people's numbers, held against rooflab's floors and
predictions and fitted on by nothing.

    sources.yaml        source id -> Source (title, URL or paper, section, date, GPUs, FLOP convention, ...)
    kernels/*.csv       KernelRow: one attention launch of an exact shape, a rate or a time
    steps/*.csv         StepRow: a whole-model fixed-batch engine run
    serving/*.csv       ServingRow: an engine run under a load (concurrency or request rate)

The format is measurements/published/README.md. Every problem is a SpecError naming the file, the line, the
column and the value; a row naming a source the registry lacks, or a GPU rooflab does not bundle, is one.

A kernel row's rate becomes a time through its source's FLOP convention (`Convention`), never through
rooflab's own FLOP count, which differs (rooflab counts the T(T + 1) / 2 pairs a causal mask keeps).

    kinds.py        the closed sets a row names (Convention, metrics, Statistic, Implementation, formats), bounds
    cells.py        one reader a kind of cell
    sources.py      Source and read_sources: the registry sources.yaml
    kernels.py      KernelRow, convention_flops, kernel_floor_s: a kernel row, its FLOPs and its floor
    engine_runs.py  EngineRun, StepRow, ServingRow: the engine-run rows
    read.py         read_rows, load_published -> Published: the CSVs, strictly, checked against their sources
"""

from .engine_runs import EngineRun, ServingRow, StepRow
from .kernels import KernelRow, convention_flops, kernel_floor_s
from .kinds import (DEFECT_PREFIX, KV_CACHE_DTYPES, MAX_SECONDS, MAX_TFLOPS, WEIGHT_FORMATS, Convention, Implementation,
                    KernelMetric, ServingMetric, Statistic, StepMetric)
from .read import COLUMNS, FOLDERS, MAX_CSV_BYTES, Published, load_published, published_files, read_rows
from .sources import Source, published_dir, read_sources

__all__ = ["COLUMNS", "DEFECT_PREFIX", "FOLDERS", "KV_CACHE_DTYPES", "MAX_CSV_BYTES", "MAX_SECONDS", "MAX_TFLOPS",
           "WEIGHT_FORMATS", "Convention", "EngineRun", "Implementation", "KernelMetric", "KernelRow", "Published",
           "ServingMetric", "ServingRow", "Source", "Statistic", "StepMetric", "StepRow", "convention_flops",
           "kernel_floor_s", "load_published", "published_files", "published_dir", "read_rows", "read_sources"]
