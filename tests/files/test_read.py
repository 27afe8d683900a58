"""Bounded reads (rooflab/files/read.py): one set of errors for every file rooflab reads from the user (unreadable,
too large, not UTF-8, binary where a log is expected), and a named pipe without a writer never blocks."""

from __future__ import annotations

import pytest

from rooflab.errors import InputError, SpecError
from rooflab.files import read_bounded, read_text
from rooflab.load import load_gpu


def test_a_spec_that_is_a_named_pipe_does_not_block(tmp_path):
    """read_bounded: a FIFO with no writer reads as empty (a refused spec) instead of blocking forever."""
    import os

    fifo = tmp_path / "gpu.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="gpu.yaml"):
        load_gpu(fifo)


def test_a_file_over_its_limit_is_refused_before_it_is_read_whole(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a" * ((1 << 20) + 1))
    assert len(read_bounded(path, 1 << 20)) == (1 << 20) + 1          # the caller sees one byte past the limit
    with pytest.raises(SpecError, match="larger than 1 MiB; a spec file is a few KiB") as info:
        read_text(path, 1 << 20, "a spec file")
    assert info.value.where == str(path)
    path.write_bytes(b"a" * (1 << 20))
    assert len(read_text(path, 1 << 20, "a spec file")) == 1 << 20     # exactly the limit is fine


def test_each_reader_gets_the_same_problems_in_its_own_error(tmp_path):
    """The spec reader's SpecError, a measurement file's or an engine log's InputError: the same words."""
    def as_input(problem: str) -> InputError:
        return InputError(f"m.csv: {problem}")

    with pytest.raises(InputError, match=r"^m.csv: cannot read file \("):
        read_text(tmp_path / "absent.csv", 1 << 20, "a measurement file", as_input)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match=r"^m.csv: not UTF-8 text \(byte 3\)"):
        read_text(latin, 1 << 20, "a measurement file", as_input)
    with pytest.raises(InputError, match="larger than 0 MiB; not a measurement file"):
        read_text(latin, 2, "a measurement file", as_input, too_large="not a measurement file")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfa,b\n")
    assert read_text(bom, 1 << 20, "a measurement file") == "a,b\n"     # a BOM is allowed and dropped


def test_a_lenient_read_replaces_stray_bytes_but_refuses_a_binary_file(tmp_path):
    log = tmp_path / "engine.log"
    log.write_bytes(b"INFO ok\n\xff\xfe then text\n")
    assert read_text(log, 1 << 20, "a text log", lenient=True) == "INFO ok\n\ufffd\ufffd then text\n"
    log.write_bytes(b"\x7fELF\0\0\0" + b"x" * 100)
    with pytest.raises(SpecError, match="a binary file, not a text log"):
        read_text(log, 1 << 20, "a text log", lenient=True)


def test_check_path_takes_a_str_or_a_pathlike_only(tmp_path):
    """A path argument: a str or os.PathLike as a Path; bytes, numbers, booleans, '' and a NUL byte refused."""
    from rooflab.files import check_path

    assert check_path(tmp_path, "root") == tmp_path and check_path(str(tmp_path), "root") == tmp_path

    class BytesPath:
        def __fspath__(self):
            return b"/tmp"

    for bad in (b"/tmp", True, 4, None, "", "a\0b", BytesPath()):
        with pytest.raises(InputError, match="root must be a path"):
            check_path(bad, "root")

