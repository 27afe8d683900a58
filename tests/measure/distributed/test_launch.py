"""The distributed bench's launcher (rooflab.measure.distributed.launch) on CPU: two gloo ranks run every section at
tiny shapes through the same code paths as on GPUs, and the files they assemble read back with the right answers.
"""

from __future__ import annotations

import json

import pytest

from rooflab.fit.records import read_measurements


# ------------------------------------------------------------------ the distributed code paths on CPU (gloo)

def test_distributed_bench_on_cpu_with_gloo(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this PyTorch has no gloo backend")
    from rooflab.measure.distributed.launch import launch

    result = launch(2, tmp_path, cpu=True, timeout_s=240, prefix="cpu")
    assert result.returncode == 0, (tmp_path / "cpu-ranks" / "torchrun.log").read_text()[-2000:]
    assert set(result.files) == {"collectives", "distributed", "gemm", "step"}
    failed = [n for n in result.notes if n["note"] in ("failed", "section_failed")]
    assert not failed
    for path in result.files.values():
        meta, rows = read_measurements(path)
        assert rows and meta["backend"] == "gloo"
    meta, rows = read_measurements(result.files["distributed"])
    # DCP's all-gather and merge, the TP all-reduce and the ring's passes give the one-process answer
    assert {m.kernel.value for m in rows} == {"dcp_decode", "tp_attention", "ring_prefill"}
    for m in rows:
        if m.world_size == 2:
            assert m.max_rel_err < 1e-5, m
    meta, rows = read_measurements(result.files["collectives"])
    assert {m.kernel.value for m in rows} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                              "send_recv"}
    assert json.loads(meta["nccl_check"])["all_reduce_sum_ok"]


@pytest.mark.parametrize("given, recorded", [("3", "3"), ("1", "1"), (None, "unset")])
def test_the_run_metadata_records_openblas_threads(monkeypatch, given, recorded):
    """The console script sets OPENBLAS_NUM_THREADS=1 unless the user set it (rooflab._entry), and the ranks inherit
    the launcher's environment: the distributed bench's metadata says which value its run had (review, session 12)."""
    from rooflab.measure.distributed.launch import run_metadata

    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    assert run_metadata("rooflab bench --distributed --cpu", None, 2, cpu=True)["openblas_num_threads"] == recorded
