"""The parsed-spec cache on disk (rooflab/load/disk_cache.py): a spec built once is read back equal, an edited
file or an edited rooflab is parsed again, a refusal is never cached, and a folder that cannot be written never
fails a load."""

from __future__ import annotations

import shutil

import pytest

from rooflab.errors import SpecError
from rooflab.load import clear_cache, data_dir, load_gpu, load_model
from rooflab.load import disk_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(folder))
    monkeypatch.delenv("ROOFLAB_NO_CACHE", raising=False)
    clear_cache()
    yield folder
    clear_cache()


def test_a_cached_spec_equals_the_one_built_from_the_file(cache, monkeypatch):
    built = load_gpu("h200-sxm")
    assert len(list(cache.glob("GpuSpec-*.pickle"))) == 1
    clear_cache()
    calls = []
    monkeypatch.setattr("rooflab.load.cache._spec_from_file", lambda *a: calls.append(a))
    again = load_gpu("h200-sxm")
    assert calls == [] and again == built and again.fitted == built.fitted       # read back, not rebuilt


def test_an_edited_file_is_parsed_again(cache, tmp_path):
    path = tmp_path / "gpu.yaml"
    shutil.copy(data_dir("hardware") / "h100-sxm.yaml", path)
    first = load_gpu(str(path))
    path.write_text(path.read_text().replace("display_name: NVIDIA H100 SXM5 80GB", "display_name: My H100"))
    clear_cache()
    assert first.display_name == "NVIDIA H100 SXM5 80GB" and load_gpu(str(path)).display_name == "My H100"


def test_other_code_does_not_reuse_an_entry(cache, monkeypatch):
    load_model("llama-3-8b")
    monkeypatch.setattr(disk_cache, "code_stamp", lambda: b"another rooflab")
    clear_cache()
    load_model("llama-3-8b")
    assert len(list(cache.glob("ModelSpec-*.pickle"))) == 2


def test_a_refused_file_is_never_cached(cache, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text((data_dir("hardware") / "h100-sxm.yaml").read_text().replace("num_sms: 132", "num_sms: -1"))
    for _ in range(2):
        clear_cache()
        with pytest.raises(SpecError, match="num_sms"):
            load_gpu(str(path))
    assert not list(cache.glob("*.pickle"))


def test_a_folder_that_cannot_be_written_never_fails_a_load(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(blocker / "cache"))
    clear_cache()
    assert load_gpu("h100-sxm").num_sms == 132
    clear_cache()


def test_a_corrupt_entry_is_built_again(cache):
    built = load_gpu("h100-sxm")
    for entry in cache.glob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    clear_cache()
    assert load_gpu("h100-sxm") == built


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("ROOFLAB_NO_CACHE", "1")
    assert disk_cache.cache_dir() is None
    monkeypatch.delenv("ROOFLAB_NO_CACHE")
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", "")
    assert disk_cache.cache_dir() is None
