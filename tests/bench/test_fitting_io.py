"""`rooflab bench --new-kernels`: the attention variants' cases, their costs, their rows and the CLI, without a GPU;
one GPU test (marker gpu) runs a tiny case of each new kernel through the bench end to end.

The hand-computed examples below count visible (query, key) pairs from the masks' definitions
(rooflab.cost.common.Visibility; numerics.visible_keys) and check the cost model's FLOPs against
them: attention does 2 FLOPs a multiply-add over d for Q K^T and over d_v for P V, per visible pair
and query head; MLA as FlashMLA counts it, 2 (576 + 512) per pair and head (kernels.mla.mla_flops).
"""

from __future__ import annotations

from rooflab.bench.cases import Case, new_kernel_cases
from rooflab.bench.records import Measurement, write_measurements
from rooflab.load import load_gpu
from rooflab.vocab import Kernel


META = {"gpu_spec": "h200-sxm", "device_name": "NVIDIA H200", "date": "fixture"}


REPEATS = 20


def _row(case: Case, impl: str = "rooflab", time_s: float = 1e-3) -> Measurement:
    return case.measurement(impl, time_s, time_s, time_s, REPEATS, 1e-3)


def _impl(case: Case) -> str:
    """The implementation rooflab's bench records on an H200 (ours.impl_name without a GPU): the wgmma kernels for
    flash (d 128) and for MLA with a 16-bit latent and >= 64 query rows a sequence."""
    if case.kernel is Kernel.flash_window:
        return "rooflab_hopper"
    if case.kernel is Kernel.mla_decode and case.kv_dtype is None and case.q_len * case.heads.num_qo_heads >= 64:
        return "rooflab_hopper"
    return "rooflab"


def test_new_rows_fit_a_model_for_each_kernel_and_implementation(tmp_path):
    """Rows timed as 4 us + t_model / 0.8 (t_model at 1.5 units per SM): `rooflab fit` recovers each group's model."""
    from rooflab.bench.fitting import model_times
    from rooflab.bench.fitting_io import fit_campaigns

    gpu = load_gpu("h200-sxm")
    rows = [_row(c, _impl(c)) for c in new_kernel_cases()]
    t_model = model_times(rows, gpu, 1.5)[0]
    rows = [Measurement(**{**r.__dict__, "time_s": 4e-6 + t / 0.8}) for r, t in zip(rows, t_model)]
    path = tmp_path / "new.csv"
    write_measurements(path, rows, META)
    validation, models, spec = fit_campaigns([path])
    groups = {(m.kernel, m.impl) for m in models}
    assert groups == {(Kernel.flash_window, "rooflab_hopper"), (Kernel.paged_window, "rooflab"),
                      (Kernel.paged_multi, "rooflab"), (Kernel.mla_decode, "rooflab"),
                      (Kernel.mla_decode, "rooflab_hopper")}
    for m in models:
        assert m.median_error < 0.02 and m.held_out_rows >= 2, (m.kernel, m.impl, m.median_error)
