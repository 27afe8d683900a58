"""Fuzzing measurement files: a small valid file, mutated, read by read_measurements, `rooflab validate FILE`,
`validate FILE -o OUT`, `plot roofline --measurements FILE` and `plot validation FILE`.

A file that cannot be used is refused with a message naming the file (and, where it is one row,
the line); a row is never read with defaults for what it lacks, a cell never half-read, metadata
that contradicts itself or the GPU spec never trusted. Accepted files give finite, strict output.
"""

from __future__ import annotations

import csv
import dataclasses
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import HARDWARE, MEASUREMENTS, Case, check_api, check_cli, fuzz_settings, scratch
from rooflab.bench.records import read_measurements
from rooflab.errors import RooflabError

SWEEP = MEASUREMENTS / "h200-sweep.csv"


def _base() -> tuple[list[str], list[str], list[list[str]]]:
    """The bundled sweep cut down to a few rows of every kernel: (metadata lines, header, rows)."""
    lines = SWEEP.read_text().splitlines()
    meta = [line for line in lines if line.startswith("#")]
    body = [line for line in lines if line and not line.startswith("#")]
    header = next(csv.reader([body[0]]))
    rows = list(csv.reader(body[1:]))
    kernel = header.index("kernel")
    impl = header.index("impl")
    picked: list[list[str]] = []
    for name, who, n in (("naive", "rooflab", 4), ("naive_softmax", "rooflab", 2), ("flash", "rooflab_hopper", 4),
                         ("flash", "torch_flash", 2), ("paged", "rooflab", 4), ("split_kv", "rooflab", 4),
                         ("merge", "rooflab", 4), ("paged", "torch_cudnn_dense", 2)):
        picked += [r for r in rows if r[kernel] == name and r[impl] == who][:n]
    return meta, header, picked


META, HEADER, ROWS = _base()
COL = {name: i for i, name in enumerate(HEADER)}
INT_COLUMNS = [c for c in HEADER if c in ("batch", "num_qo_heads", "num_kv_heads", "head_dim", "seq_len", "page_size",
                                          "splits", "tokens", "repeats")]
FLOAT_COLUMNS = ["time_s", "time_p10_s", "time_p90_s", "max_rel_err"]


def render(meta: list[str], header: list[str], rows: list[list[str]], newline: str = "\n") -> str:
    return newline.join([*meta, ",".join(header), *(",".join(r) for r in rows)]) + newline


BASE_TEXT = render(META, HEADER, ROWS)

#: Cells no column of its kind accepts.
BAD_INT = ["-1", "1.5", "1e3", "abc", "nan", "inf", "0x10", "\uff11", "99999999999999999999999", str(2**62 + 1),
           "1_000", "--1", "1 2", "\U0001f4a5", "$", "{}", "\\"]
BAD_FLOAT = ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "1e400", "abc", "-0.5", "0x1p-3", "1,5", "\u00bd",
             "1e-3e4"]
BAD_TIME = BAD_FLOAT + ["0", "0.0", "1e-300", "5e-324", "3601", "1e308"]
BAD_BOOL = ["2", "yes", "no", "-1", "t", "f", "on", "nan", "\u2713"]
BAD_KERNEL = ["", "Naive", "flash2", "naïve", "paged ", "\U0001f4a5", "$\\frac{a}{b}$", "merge,", "split-kv"]
BAD_DTYPE = ["FP16", "fp8", "float16", "half", "fp 16", "\U0001f4a5", "int8"]
BAD_CONTEXT = ["lots", "8192x0", "0x5", "x", "8192x", "1;;2", "1;-2", "8192x99999999999", "8192X4", "8192 x 4",
               "9" * 30 + "x1", "1;", ";1", "0", "0;1", "1e3", "8192x1;4", "\U0001f4a5"]
#: Values a column may take: huge but well formed, where the cost model must refuse or stay finite.
HUGE_INT = [str(2**31), str(2**40), str(2**62), "65537", "1000000"]
ODD_IMPL = ["$x$", "\\frac{a}{b}", "{}", "%s", "\u00e9\U0001f4a5", "a" * 300, "torch flash", "<b>", "_", "rooflab_x"]

METADATA_CASES = {
    # name: (metadata lines, must be refused, strings that name it)
    "gpu_spec contradicts device_name": ([m.replace("gpu_spec: h200-sxm", "gpu_spec: h100-sxm") for m in META], True,
                                         ["gpu_spec", "device_name", "h100-sxm"]),
    "gpu_spec as a YAML of another GPU": ([m.replace("gpu_spec: h200-sxm", f"gpu_spec: {HARDWARE / 'h100-sxm.yaml'}")
                                          for m in META], True, ["gpu_spec", "device_name", "h100-sxm"]),
    "gpu_spec twice, different": (META + ["# gpu_spec: h100-sxm"], True, ["gpu_spec", "twice", "h100-sxm"]),
    "gpu_spec unknown": ([m.replace("gpu_spec: h200-sxm", "gpu_spec: h200") for m in META], True,
                         ["gpu_spec", "h200"]),
    "gpu_spec missing yaml": ([m.replace("gpu_spec: h200-sxm", "gpu_spec: nowhere/gpu.yaml") for m in META], True,
                              ["gpu_spec", "nowhere/gpu.yaml"]),
    "gpu_spec dollar": ([m.replace("gpu_spec: h200-sxm", "gpu_spec: $x{}") for m in META], True, ["gpu_spec", "$x{}"]),
    "gpu_spec empty": ([m.replace("gpu_spec: h200-sxm", "gpu_spec:") for m in META], True, ["gpu_spec", "--gpu"]),
    "no gpu_spec": ([m for m in META if "gpu_spec" not in m], True, ["gpu_spec", "--gpu"]),
    "device_name weird": ([m.replace("device_name: NVIDIA H200", "device_name: $\\frac{x}{y}$") for m in META], None,
                          ["device_name"]),
    "device_name of another GPU": ([m.replace("device_name: NVIDIA H200", "device_name: NVIDIA A100-SXM4-80GB")
                                    for m in META], True, ["device_name", "A100", "gpu_spec"]),
    "no format line": (META[1:], True, ["format", "rooflab measurements v1", "line 1"]),
    "format v2": (["# rooflab measurements v2"] + META[1:], True, ["v2", "format"]),
    "format v1 unspaced": (["#rooflab measurements v1"] + META[1:], None, ["format"]),
    "format v1 upper": (["# ROOFLAB MEASUREMENTS V1"] + META[1:], None, ["format"]),
    "format v10": (["# rooflab measurements v10"] + META[1:], True, ["v10", "format"]),
    "format line after metadata": (META[1:3] + [META[0]] + META[3:], True, ["format", "line 1"]),
    "format line twice": ([META[0]] + META, None, ["format"]),
    "metadata without colon": (META + ["# just a comment"], None, []),
    "metadata huge": (META + ["# note: " + "x" * 100_000], None, []),
    "leading blank lines": (["", "   "] + META, None, []),
}


#: Metadata the reader may take as it is (no GPU spec named, or one that does not load); validate must refuse it.
READ_MAY_PASS = {"gpu_spec unknown", "gpu_spec missing yaml", "gpu_spec dollar", "gpu_spec empty", "no gpu_spec"}


@dataclasses.dataclass
class FileCase:
    text: Optional[str]
    data: Optional[bytes]
    must_fail: Optional[bool]
    idents: list[str]
    what: str
    read_may_pass: bool = False     # refused by validate (it needs a usable GPU spec), not by the reader itself

    def bytes(self) -> bytes:
        return self.data if self.data is not None else self.text.encode()


def _with_cell(row_index: int, column: str, value: str) -> str:
    rows = [list(r) for r in ROWS]
    rows[row_index][COL[column]] = value
    return render(META, HEADER, rows)


@st.composite
def file_cases(draw) -> FileCase:
    op = draw(st.sampled_from(["cell", "cell", "cell", "huge", "shape", "shape", "metadata", "header", "bytes",
                               "impl", "rows", "consistency"]))
    i = draw(st.integers(0, len(ROWS) - 1))
    line = len(META) + 2 + i
    at = [f"line {line}"]
    if op == "cell":
        column = draw(st.sampled_from(HEADER))
        if column in INT_COLUMNS:
            value = draw(st.sampled_from(BAD_INT))
        elif column == "time_s":
            value = draw(st.sampled_from(BAD_TIME))
        elif column in FLOAT_COLUMNS:
            value = draw(st.sampled_from(BAD_FLOAT))
        elif column == "causal":
            value = draw(st.sampled_from(BAD_BOOL))
        elif column == "kernel":
            value = draw(st.sampled_from(BAD_KERNEL))
        elif column in ("dtype", "kv_dtype"):
            value = draw(st.sampled_from(BAD_DTYPE))
        elif column == "context_lens":
            value = draw(st.sampled_from(BAD_CONTEXT))
            kernel = ROWS[i][COL["kernel"]]
            if kernel not in ("paged", "split_kv"):
                return FileCase(_with_cell(i, column, value), None, None, at + [column], f"{column}={value!r} on {kernel}")
        else:  # impl
            value = draw(st.sampled_from(["", " "]))
        if "," in value or '"' in value:
            return FileCase(_with_cell(i, column, value), None, True, at, f"{column}={value!r}")
        return FileCase(_with_cell(i, column, value), None, True, at + [column, value], f"{column}={value!r}")
    if op == "huge":
        column = draw(st.sampled_from(INT_COLUMNS))
        value = draw(st.sampled_from(HUGE_INT))
        return FileCase(_with_cell(i, column, value), None, None, at + [column, value], f"{column}={value}")
    if op == "shape":
        how = draw(st.sampled_from(["truncate", "extra", "empty-row-cells", "join-rows", "quote-newline",
                                    "quoted-cell", "trailing-comma", "only-commas", "semicolons"]))
        rows = [list(r) for r in ROWS]
        if how == "truncate":
            k = draw(st.integers(1, len(HEADER) - 1))
            rows[i] = rows[i][:-k]
            return FileCase(render(META, HEADER, rows), None, True, at + ["cells"], f"{how} {k}")
        if how == "extra":
            rows[i] = rows[i] + [draw(st.sampled_from(["", "1", "x", "nan"]))]
            return FileCase(render(META, HEADER, rows), None, True, at + ["cells"], how)
        if how == "empty-row-cells":
            rows[i] = [""] * len(HEADER)
            return FileCase(render(META, HEADER, rows), None, True, at + ["kernel"], how)
        if how == "join-rows" and i + 1 < len(rows):
            rows[i] = rows[i] + rows.pop(i + 1)
            return FileCase(render(META, HEADER, rows), None, True, at + ["cells"], how)
        if how == "quote-newline":
            rows[i][COL["impl"]] = '"roof\nlab"'
            return FileCase(render(META, HEADER, rows), None, None, at + [f"line {line + 1}", "impl"], how)
        if how == "quoted-cell":
            rows[i][COL["seq_len"]] = f'"{rows[i][COL["seq_len"]]}"'
            return FileCase(render(META, HEADER, rows), None, None, at, how)
        if how == "trailing-comma":
            text = render(META, HEADER, rows).replace("\n" + ",".join(rows[i]) + "\n", "\n" + ",".join(rows[i]) + ",\n")
            return FileCase(text, None, True, at + ["cells"], how)
        if how == "semicolons":
            rows[i] = [";".join(rows[i])]
            return FileCase(render(META, HEADER, rows), None, True, at + ["cells"], how)
        rows[i] = [""] * (len(HEADER) - 1)
        return FileCase(render(META, HEADER, rows).replace(",".join(rows[i]), "," * (len(HEADER) - 1)), None, True,
                        at, how)
    if op == "metadata":
        name = draw(st.sampled_from(sorted(METADATA_CASES)))
        meta, must, idents = METADATA_CASES[name]
        return FileCase(render(meta, HEADER, ROWS), None, must, idents, name, read_may_pass=name in READ_MAY_PASS)
    if op == "header":
        how = draw(st.sampled_from(["duplicated", "missing-column", "unknown-column", "reordered", "renamed-case",
                                    "twice-column", "header-again-later", "no-header", "only-header", "spaces"]))
        if how == "duplicated":
            return FileCase(render(META, HEADER, [HEADER] + ROWS), None, True, ["header", "line", "kernel"], how)
        if how == "header-again-later":
            return FileCase(render(META, HEADER, ROWS[:3] + [HEADER] + ROWS[3:]), None, True,
                            ["header", "line", "kernel"], how)
        if how == "missing-column":
            c = draw(st.sampled_from(HEADER))
            j = COL[c]
            rows = [r[:j] + r[j + 1:] for r in ROWS]
            return FileCase(render(META, HEADER[:j] + HEADER[j + 1:], rows), None, True, [c, "missing"], how)
        if how == "unknown-column":
            return FileCase(render(META, HEADER + ["gpu"], [r + ["h200"] for r in ROWS]), None, True, ["gpu", "unknown"],
                            how)
        if how == "reordered":
            order = draw(st.permutations(range(len(HEADER))))
            return FileCase(render(META, [HEADER[j] for j in order], [[r[j] for j in order] for r in ROWS]), None,
                            False, [], how)
        if how == "renamed-case":
            return FileCase(render(META, [h.upper() if h == "kernel" else h for h in HEADER], ROWS), None, True,
                            ["KERNEL", "kernel"], how)
        if how == "twice-column":
            return FileCase(render(META, HEADER + ["kernel"], [r + [r[0]] for r in ROWS]), None, True,
                            ["kernel", "twice"], how)
        if how == "no-header":
            return FileCase(render(META, ROWS[0], ROWS[1:]), None, True, ["header", "column", "line"], how)
        if how == "only-header":
            return FileCase(render(META, HEADER, []), None, True, ["no measurements", "header"], how)
        return FileCase(render(META, [f" {h}" for h in HEADER], ROWS), None, None, ["column", "kernel"], how)
    if op == "bytes":
        how = draw(st.sampled_from(["bom", "crlf", "cr", "empty", "whitespace", "non-utf8", "nul", "utf16", "huge",
                                    "tabs", "no-final-newline", "latin1"]))
        if how == "bom":
            return FileCase(None, b"\xef\xbb\xbf" + BASE_TEXT.encode(), False, [], how)
        if how == "crlf":
            return FileCase(render(META, HEADER, ROWS, "\r\n"), None, False, [], how)
        if how == "cr":
            return FileCase(render(META, HEADER, ROWS, "\r"), None, None, [], how)
        if how == "no-final-newline":
            return FileCase(BASE_TEXT.rstrip("\n"), None, False, [], how)
        if how == "empty":
            return FileCase("", None, True, ["empty"], how)
        if how == "whitespace":
            return FileCase(" \n\t\n\n", None, True, ["empty", "format"], how)
        if how == "non-utf8":
            return FileCase(None, BASE_TEXT.encode().replace(b"# host: vm", b"# host: v\xff\xfem"), True,
                            ["UTF-8", "utf-8"], how)
        if how == "latin1":
            return FileCase(None, BASE_TEXT.replace("# host: vm", "# host: caf\u00e9").encode("latin-1"), True,
                            ["UTF-8"], how)
        if how == "utf16":
            return FileCase(None, BASE_TEXT.encode("utf-16"), True, ["UTF-8", "format"], how)
        if how == "nul":
            return FileCase(BASE_TEXT.replace("\nnaive,", "\nnai\x00ve,", 1), None, True, ["line", "kernel", "NUL"], how)
        if how == "tabs":
            return FileCase(render(META, HEADER, ROWS).replace(",", "\t"), None, True, ["column", "line"], how)
        return FileCase(BASE_TEXT + "".join(render([], [], [r for r in ROWS]).split("\n", 1)[1]
                                            for _ in range(40_000)), None, None, ["MiB", "large", "rows"], how)
    if op == "impl":
        value = draw(st.sampled_from(ODD_IMPL))
        return FileCase(_with_cell(i, "impl", value), None, None, at + ["impl"], f"impl={value!r}")
    if op == "rows":
        how = draw(st.sampled_from(["duplicate-row", "one-row", "reversed", "blank-lines", "comment-between",
                                    "all-same"]))
        if how == "duplicate-row":
            return FileCase(render(META, HEADER, ROWS + [ROWS[i]]), None, None, at, how)
        if how == "one-row":
            return FileCase(render(META, HEADER, [ROWS[i]]), None, False, [], how)
        if how == "reversed":
            return FileCase(render(META, HEADER, ROWS[::-1]), None, False, [], how)
        if how == "blank-lines":
            return FileCase(BASE_TEXT.replace("\nnaive,", "\n\n  \nnaive,", 1), None, None, [], how)
        if how == "comment-between":
            return FileCase(render(META, HEADER, ROWS[:3] + [["# gpu_spec: h100-sxm"]] + ROWS[3:]), None, True,
                            ["gpu_spec", "h100-sxm", "line"], how)
        return FileCase(render(META, HEADER, [ROWS[0]] * 8), None, None, [], how)
    # consistency within a row
    how = draw(st.sampled_from(["p10>p90", "p10>time", "heads-not-dividing", "kv-heads>qo", "head-dim-odd",
                                "splits>tokens", "merge-with-seq", "page-bigger-than-context", "causal-decode",
                                "repeats-zero", "max-rel-err-huge"]))
    rows = [list(r) for r in ROWS]
    kernel = rows[i][COL["kernel"]]
    if how == "p10>p90":
        rows[i][COL["time_p10_s"]], rows[i][COL["time_p90_s"]] = "0.5", "0.1"
        return FileCase(render(META, HEADER, rows), None, None, at + ["time_p10_s", "time_p90_s"], how)
    if how == "p10>time":
        rows[i][COL["time_p10_s"]] = str(float(rows[i][COL["time_s"]]) * 10)
        return FileCase(render(META, HEADER, rows), None, None, at + ["time_p10_s"], how)
    if how == "heads-not-dividing":
        rows[i][COL["num_qo_heads"]], rows[i][COL["num_kv_heads"]] = "32", "7"
        must = True if kernel != "merge" else None
        return FileCase(render(META, HEADER, rows), None, must, at + ["num_kv_heads", "num_qo_heads"], how)
    if how == "kv-heads>qo":
        rows[i][COL["num_qo_heads"]], rows[i][COL["num_kv_heads"]] = "8", "32"
        must = True if kernel != "merge" else None
        return FileCase(render(META, HEADER, rows), None, must, at + ["num_kv_heads", "num_qo_heads"], how)
    if how == "head-dim-odd":
        rows[i][COL["head_dim"]] = "3"
        return FileCase(render(META, HEADER, rows), None, None, at + ["head_dim"], how)
    if how == "splits>tokens":
        rows[i][COL["splits"]] = "4096"
        return FileCase(render(META, HEADER, rows), None, None, at + ["splits"], how)
    if how == "merge-with-seq":
        rows[i][COL["seq_len"]] = "8192"
        return FileCase(render(META, HEADER, rows), None, None, at + ["seq_len"], how)
    if how == "page-bigger-than-context":
        rows[i][COL["page_size"]] = str(2**20)
        return FileCase(render(META, HEADER, rows), None, None, at + ["page_size"], how)
    if how == "causal-decode":
        rows[i][COL["causal"]] = "1"
        return FileCase(render(META, HEADER, rows), None, None, at + ["causal"], how)
    if how == "repeats-zero":
        rows[i][COL["repeats"]] = "0"
        return FileCase(render(META, HEADER, rows), None, None, at + ["repeats"], how)
    rows[i][COL["max_rel_err"]] = "1e300"
    return FileCase(render(META, HEADER, rows), None, None, at + ["max_rel_err"], how)


# --- the entry points -------------------------------------------------------------------------------------------

def check_read(fc: FileCase) -> None:
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_bytes(fc.bytes())
        must = None if fc.read_may_pass else fc.must_fail
        result = check_api(lambda: read_measurements(path), [path.name], expect_error=must,
                           what=f"read_measurements with {fc.what[:80]}")
        if isinstance(result, RooflabError):
            assert "sweep.csv" in str(result), f"{fc.what}: the error does not name the file: {result}"
        elif result is not None:
            meta, rows = result
            assert rows, f"{fc.what}: read no rows and said nothing"
            for row in rows:
                assert row.time_s > 0, f"{fc.what}: a row with time {row.time_s}"


def check_validate(fc: FileCase, extra: list[str], json_out: bool, with_output: bool) -> None:
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_bytes(fc.bytes())
        out = folder / "report.json"
        args = ["validate", str(path), *extra] + (["-f", "json"] if json_out else []) + \
               (["-o", str(out)] if with_output else [])
        # a refusal must name the file; the content's own words (line, column) are welcome but the file is the must
        case = Case(args, [path.name, str(path)] if fc.must_fail is not False else [],
                    None if fc.must_fail is None else (2 if fc.must_fail else 0),
                    outputs=[out] if with_output else [], inputs=[path], json=json_out, note=fc.what)
        result = check_cli(case, folder)
        if with_output and result.code == 0 and out.exists():
            assert out.read_text() == result.stdout, "validate -o wrote something else than it printed"


@fuzz_settings(250)
@given(file_cases())
def test_fuzz_read_measurements(fc):
    check_read(fc)


@fuzz_settings(45)
@given(file_cases(), st.booleans(), st.booleans())
def test_fuzz_validate(fc, json_out, with_output):
    check_validate(fc, [], json_out, with_output)


@fuzz_settings(10)
@given(file_cases(), st.sampled_from(["roofline", "validation"]))
def test_fuzz_plot_measurements(fc, chart):
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_bytes(fc.bytes())
        target = folder / "x.png"
        args = (["plot", "roofline", "--measurements", str(path)] if chart == "roofline" else
                ["plot", "validation", str(path)]) + ["-o", str(target)]
        case = Case(args, [path.name] if fc.must_fail is not False else [],
                    None if fc.must_fail is None else (2 if fc.must_fail else 0), outputs=[target], inputs=[path], note=fc.what)
        check_cli(case, folder)


# --- explicit regressions -------------------------------------------------------------------------------------

def _case(text, must_fail, idents, what):
    return FileCase(text, None, must_fail, idents, what)


def _row_with(column: str, value: str, i: int = 0) -> str:
    return _with_cell(i, column, value)


_FIRST = len(META) + 2
REGRESSIONS = [
    _case(render(META, HEADER, [ROWS[0][:5]] + ROWS[1:]), True, [f"line {_FIRST}"], "truncated row"),
    _case(render(META, HEADER, [ROWS[0] + ["1"]] + ROWS[1:]), True, [f"line {_FIRST}"], "extra cell"),
    _case(_row_with("context_lens", "lots", 16), True, ["context_lens", "lots"], "context_lens lots"),
    _case(render(META[1:], HEADER, ROWS), True, ["format"], "no version line"),
    _case(render(["# rooflab measurements v2"] + META[1:], HEADER, ROWS), True, ["v2", "format"], "version 2"),
    _case(render([m.replace("gpu_spec: h200-sxm", "gpu_spec: h100-sxm") for m in META], HEADER, ROWS), True,
          ["gpu_spec", "device_name"], "gpu_spec contradicts device_name"),
    _case(render([m.replace("gpu_spec: h200-sxm", f"gpu_spec: {HARDWARE / 'h100-sxm.yaml'}") for m in META], HEADER,
                 ROWS), True, ["gpu_spec", "device_name"], "gpu_spec as the path of another GPU's YAML"),
    _case(render(META + ["# gpu_spec: h100-sxm"], HEADER, ROWS), True, ["gpu_spec"], "gpu_spec given twice"),
    _case(_row_with("time_s", "nan"), True, ["time_s"], "NaN time"),
    _case(_row_with("time_s", "inf"), True, ["time_s"], "inf time"),
    _case(_row_with("time_s", "-1e-05"), True, ["time_s"], "negative time"),
    _case(_row_with("time_s", "1e-300"), True, ["time_s"], "a time of 1e-300 s is no kernel launch"),
    _case(_row_with("time_p10_s", "nan"), True, ["time_p10_s"], "NaN percentile"),
    _case(_row_with("seq_len", str(2**40)), True, ["seq_len"], "seq_len 2^40 in a naive row"),
    _case(_row_with("num_qo_heads", str(2**40)), True, ["num_qo_heads"], "2^40 heads"),
    _case(_row_with("num_kv_heads", "7"), True, ["num_kv_heads"], "32 query heads over 7 KV heads"),
    _case(_row_with("batch", "0"), True, ["batch"], "batch 0 in a naive row"),
    _case(render(META, HEADER, [HEADER] + ROWS), True, ["kernel", "header"], "duplicated header"),
    _case("", True, ["empty"], "empty file"),
    _case(render(META, HEADER, ROWS, "\r\n"), False, [], "CRLF"),
    _case(render(META, HEADER, ROWS[:3] + [["# gpu_spec: h100-sxm"]] + ROWS[3:]), True, ["gpu_spec"],
          "metadata in the middle of the rows"),
]


@pytest.mark.parametrize("fc", REGRESSIONS, ids=lambda fc: fc.what)
def test_regression_read(fc):
    check_read(fc)


@pytest.mark.parametrize("fc", REGRESSIONS, ids=lambda fc: fc.what)
def test_regression_validate(fc):
    check_validate(fc, [], json_out=True, with_output=True)


def test_bom_file_reads():
    check_read(FileCase(None, b"\xef\xbb\xbf" + BASE_TEXT.encode(), False, [], "BOM"))


@pytest.mark.parametrize("gpu, must_fail", [("h100-sxm", True), ("h200-sxm", False), ("nope", True),
                                            (str(HARDWARE / "h100-sxm.yaml"), True), ("", True), ("$", True)])
def test_validate_gpu_option_against_the_file(gpu, must_fail):
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_text(BASE_TEXT)
        check_cli(Case(["validate", str(path), "--gpu", gpu, "-f", "json"], ["--gpu", gpu, "h200", path.name],
                       2 if must_fail else 0, inputs=[path], json=True, note=f"--gpu {gpu!r}"), folder)


@pytest.mark.parametrize("impl", ["$x$", "\\frac{a}{b}", "a_b^c", "{}"])
def test_plot_roofline_with_mathtext_in_an_implementation_name(impl):
    """A $ in an implementation name once crashed the chart in matplotlib's mathtext and left a .tmp file."""
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_text(_with_cell(0, "impl", impl))
        target = folder / "x.png"
        check_cli(Case(["plot", "roofline", "--measurements", str(path), "-o", str(target)], [path.name], 0,
                       outputs=[target], inputs=[path], note=f"impl {impl!r}"), folder)


def test_validate_output_equal_to_its_input_is_refused():
    with scratch() as folder:
        path = folder / "sweep.csv"
        path.write_text(BASE_TEXT)
        check_cli(Case(["validate", str(path), "-o", str(path)], ["--output", "input", path.name], 2, inputs=[path]),
                  folder)
