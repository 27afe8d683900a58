"""The cached loaders (rooflab/load/cache.py): specs by name, path or Path object, shared read-only, and a file
rewritten in the same session read again."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.load import load_gpu, load_model
from rooflab.units import DType


def test_specs_load_from_a_path_object(tmp_path):
    from rooflab.errors import UnknownNameError
    from rooflab.load import spec_path
    path = tmp_path / "mine.yaml"
    path.write_text(spec_path("models", "model", "llama-3-8b").read_text())
    assert load_model(path).name == "llama-3-8b"
    with pytest.raises(UnknownNameError):
        load_gpu(8)


def test_specs_are_immutable_and_shared_safely():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(TypeError):
        gpu.dense_tensor_flop_per_s["fp16"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.num_sms = 1
    assert load_gpu("h100-sxm").dense_tensor_flop_per_s["fp16"] == 989.4e12


def test_a_rewritten_spec_is_read_again(tmp_path):
    import os

    from rooflab.load import load_gpu

    path = tmp_path / "g.yaml"
    text = ("name: g\nhbm_capacity_bytes: 80e9\nhbm_bandwidth_bytes_per_s: 3.0e12\n"
            "dense_tensor_flop_per_s: {fp16: 900e12}\nvector_fp32_flop_per_s: 60e12\n")
    path.write_text(text)
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 3.0e12
    path.write_text(text.replace("3.0e12", "4.0e12"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 4.0e12


def test_layer_counts_of_a_shared_spec_are_read_only():
    llama = load_model("llama-3-8b")
    expected = llama.kv_bytes_per_token(DType.fp16)
    with pytest.raises(TypeError):
        llama.layer_counts["full"] = 1
    assert dict(llama.layer_counts) == {"full": 32}
    assert load_model("llama-3-8b").kv_bytes_per_token(DType.fp16) == expected
