"""The strict reader of measurements/published/ (rooflab/published/read.py): every bundled file loads, and each bad
header, row width, cell or file name is refused naming the file, the line, the column and the value."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from rooflab.errors import SpecError
from rooflab.published import FOLDERS, Convention, KernelMetric, load_published, published_dir
from support import refused

from .rows_support import GOOD_ROW, HEADER, SOURCES, _folder, _with


def test_every_bundled_file_loads():
    published = load_published()
    for folder in FOLDERS:
        for path in (published_dir() / folder).glob("*.csv"):
            assert path.stem in published.sources, path
    assert published.kernels and all(r.source in published.sources for r in published.kernels)


def test_bundled_kernel_rows_cover_150_rows_on_three_gpus_besides_the_h200():
    """Issue 27's target for the kernel collection."""
    gpus = Counter(r.gpu for r in load_published().kernels if r.gpu != "h200-sxm")
    assert sum(gpus.values()) >= 150 and len(gpus) >= 3, gpus


def test_every_bundled_rate_has_a_flop_convention():
    published = load_published()
    for row in published.kernels:
        if row.metric is KernelMetric.tflops:
            assert published.sources[row.source].convention in (Convention.fa, Convention.fa_no_half), row.where
        assert math.isfinite(published.time_s(row)) and published.time_s(row) > 0


@pytest.mark.parametrize("column, value, says", [
    ("source", "nosuch", "names no entry of sources.yaml"),
    ("gpu", "h100-sxm5", "not a bundled GPU"),
    ("gpu", "b200", "not among source 'demo''s gpus"),
    ("implementation", "flash2", "must be one of fa2"),
    ("phase", "step", "must be one of prefill, decode"),
    ("dtype", "half", "must be one of fp64"),
    ("metric", "gbps", "must be one of tflops, time_s"),
    ("batch", "0", "whole number"),
    ("batch", "-1", "whole number"),
    ("batch", "1.5", "whole number"),
    ("num_kv_heads", "3", "must divide num_qo_heads"),
    ("head_dim", "", "empty; this column is required"),
    ("causal", "yes", "true or false"),
    ("value", "nan", "number in (0"),
    ("value", "inf", "number in (0"),
    ("value", "0", "number in (0"),
    ("value", "1e6", "above 100000 TFLOP/s"),
    ("window", "1024", "no source's FLOP convention counts a window"),
])
def test_a_bad_cell_is_refused_naming_file_line_column_and_value(tmp_path, column, value, says):
    folder = _folder(tmp_path, [GOOD_ROW, _with(column, value)])
    message = refused(lambda: load_published(folder), "demo.csv", "line 3", says, error=SpecError)
    if column != "source" or value:
        assert f"'{column}'" in message and (value in message or str(float(value)) in message or not value)


@pytest.mark.parametrize("header, says", [
    (HEADER.replace(",note", ""), "the header must be exactly"),
    (HEADER.replace("causal,window", "window,causal"), "the header must be exactly"),
])
def test_a_wrong_header_is_refused(tmp_path, header, says):
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW], header=header)), "demo.csv", "line 1", says,
            error=SpecError)


def test_a_row_of_the_wrong_width_is_refused(tmp_path):
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW + ",extra"])), "line 2", "19", error=SpecError)


def test_comments_and_blank_lines_are_skipped_and_counted_in_line_numbers(tmp_path):
    folder = _folder(tmp_path, ["# a comment", "", _with("batch", "x")])
    refused(lambda: load_published(folder), "line 4", "'batch'", error=SpecError)


def test_a_file_named_after_no_source_or_holding_another_sources_rows(tmp_path):
    folder = _folder(tmp_path, [GOOD_ROW])
    (folder / "kernels" / "demo.csv").rename(folder / "kernels" / "other.csv")
    refused(lambda: load_published(folder), "other.csv", "named <source-id>.csv", error=SpecError)
    sources = SOURCES + SOURCES.split("\n", 1)[1].replace("demo:", "second:")
    folder = _folder(tmp_path, [GOOD_ROW.replace("demo,", "second,", 1)], sources)
    refused(lambda: load_published(folder), "demo.csv", "line 2", "names its source 'demo'", error=SpecError)


@pytest.mark.parametrize("root", [True, 0, 2.5, b"measurements/published", np.int64(4), ""])
def test_load_published_refuses_what_is_not_a_path(root):
    """load_published(True) ended in os.fspath's TypeError ('expected str, bytes or os.PathLike object')."""
    refused(lambda: load_published(root), "root", "path")


def test_read_rows_checks_its_arguments():
    from rooflab.published import KernelRow, read_rows, read_sources

    path, sources = sorted((published_dir() / "kernels").glob("*.csv"))[0], read_sources()
    refused(lambda: read_rows(b"x.csv", KernelRow, sources), "path")
    refused(lambda: read_rows(path, [KernelRow], sources), "kind", "KernelRow")
    refused(lambda: read_rows(path, KernelRow, None), "sources")
    assert read_rows(str(path), KernelRow, sources) == read_rows(path, KernelRow, sources)



def test_published_files_are_the_files_load_published_reads():
    """published_files (what `validate --published -o` keeps its output off): sources.yaml and one CSV for each source
    id that has rows, each under its folder, nothing else."""
    from rooflab.published import FOLDERS, load_published, published_dir, published_files

    files = published_files()
    assert files[0] == published_dir() / "sources.yaml"
    assert all(f.suffix == ".csv" and f.parent.name in FOLDERS for f in files[1:])
    published = load_published()
    with_rows = {r.source for rows in (published.kernels, published.steps, published.serving) for r in rows}
    assert {f.stem for f in files[1:]} == with_rows
