"""Tests of what vLLM V1 holds itself at its start-up snapshot under TP by the GPU's transport (rooflab/engines/vllm.py
in_use_at_snapshot): the NVSwitch figure's NCCL buffers count only where they are on the GPU, as in the non-torch
default (engines/memory.py on_gpu_under_tp).
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.engines.memory import NCCL_OFF_DEVICE_GIB, PCIE_P2P_BUFFERS_GIB
from rooflab.engines.settings import cuda_visible
from rooflab.engines.vllm import IN_USE_AT_SNAPSHOT, in_use_at_snapshot
from rooflab.errors import InputError
from rooflab.units import GiB
from support import vllm


@pytest.mark.parametrize("gpu, tp, gib", [
    ("h100-sxm", 1, 0.5), ("h100-sxm", 2, 1.5),                                    # device_link: the H100 figures
    ("rtx-4090", 2, 0.5 + NCCL_OFF_DEVICE_GIB),                                    # host: 0.55 GiB
    ("a10", 2, 0.5 + NCCL_OFF_DEVICE_GIB + PCIE_P2P_BUFFERS_GIB)])                 # pcie_p2p: 0.5 + 0.05 + 0.087
def test_by_transport(gpu, tp, gib):
    assert IN_USE_AT_SNAPSHOT == (int(0.5 * GiB), int(1.5 * GiB))
    assert in_use_at_snapshot(tp, load_gpu(gpu)) == int(gib * GiB)


def test_the_refusal_follows_the_transport():
    """Two RTX 4090s (host transport) at TP 2 with 1.5 GiB of other processes' memory: u T = 0.9 x total; free at
    the snapshot is T - 1.5 - 0.55 GiB, not T - 1.5 - 1.5, so a utilisation that the NVSwitch figure would refuse
    starts: the largest that starts is (T - 1.5 - 0.55) / T, printed in the refusal just above it."""
    gpu, model = load_gpu("rtx-4090"), load_model("llama-3-8b")
    total = cuda_visible(gpu)[0]
    fits = (total - int(1.5 * GiB) - int((0.5 + 0.05) * GiB)) / total
    engine_capacity(model, gpu, vllm("v1", tensor_parallel=2, max_model_len=4096, memory_in_use_bytes=int(1.5 * GiB),
                                     utilization=round(fits - 0.005, 3)))
    with pytest.raises(InputError, match=f"at most {int(fits * 1000) / 1000:.3f}"):
        engine_capacity(model, gpu, vllm("v1", tensor_parallel=2, max_model_len=4096,
                                         memory_in_use_bytes=int(1.5 * GiB), utilization=round(fits + 0.005, 3)))
