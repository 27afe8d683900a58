"""GPU tests of the distributed bench's launcher (rooflab.measure.distributed.launch): on two or more GPUs NCCL's
collectives run and are timed, eagerly and in CUDA graphs.

Marked `gpu`; skipped with fewer than two GPUs. Timings are not asserted: they live in measurement files
(measurements/h200x2-*.csv).
"""

from __future__ import annotations

import pytest


pytestmark = pytest.mark.gpu


def test_nccl_collectives_on_two_gpus(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}")
    from rooflab.measure.distributed.launch import launch
    from rooflab.fit.records import read_measurements

    result = launch(2, tmp_path, ("check", "collectives"), timeout_s=300, prefix="gpu-test")
    assert result.returncode == 0
    assert not [n for n in result.notes if n["note"] == "section_failed"]
    meta, rows = read_measurements(result.files["collectives"])
    assert meta["nvls"].startswith("0") and meta["world_size"] == "2"
    assert {m.timing for m in rows} == {"eager", "graph"}
    assert {m.kernel.value for m in rows} >= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
