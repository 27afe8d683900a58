"""GpuSpec.compute_capability: checked where it enters, given for every bundled GPU (its source cited in the YAML)."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.errors import SpecError
from rooflab.load import available, load_gpu


# Golden values: NVIDIA, "CUDA GPU Compute Capability", https://developer.nvidia.com/cuda-gpus (A100 8.0, A10 and
# RTX 3090 8.6, L4 / L40 / L40S / RTX 4090 8.9, H100 / H200 / H800 9.0, B200 10.0, T4 7.5); AMD's LLVM targets
# (ROCm docs, "Accelerator and GPU hardware specifications": MI300X and MI325X gfx942, MI355X gfx950).
@pytest.mark.parametrize("name, version", [("a100-sxm-80gb", (8, 0)), ("a10", (8, 6)), ("rtx-3090", (8, 6)),
                                           ("l4", (8, 9)), ("rtx-4090", (8, 9)), ("h100-sxm", (9, 0)),
                                           ("h200-sxm", (9, 0)), ("b200", (10, 0)), ("t4", (7, 5)),
                                           ("mi300x", (9, 4)), ("mi355x", (9, 5))])
def test_bundled_compute_capabilities(name, version):
    assert load_gpu(name).compute_capability_version == version


def test_every_bundled_gpu_gives_one():
    assert all(load_gpu(n).compute_capability is not None for n in available("hardware"))


@pytest.mark.parametrize("text", ["0", "-1.0", "nan", "inf", "1e300", "8", "8.0.1", "99999999999999999999.0",
                                  "2.0", "20.0", " 8.0", "sm_90"])
def test_bad_compute_capability_is_refused_naming_the_field(text):
    with pytest.raises(SpecError, match="compute_capability"):
        dataclasses.replace(load_gpu("h100-sxm"), compute_capability=text)


def test_empty_compute_capability_is_refused():
    with pytest.raises(SpecError, match="compute_capability"):
        dataclasses.replace(load_gpu("h100-sxm"), compute_capability="")


def test_without_one_the_version_is_none():
    assert dataclasses.replace(load_gpu("h100-sxm"), compute_capability=None).compute_capability_version is None
