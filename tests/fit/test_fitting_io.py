"""rooflab.fit.fitting_io: `rooflab fit`'s fit_campaigns over a campaign file recovers a model for each (kernel,
implementation) group of the new kernels' rows."""

from __future__ import annotations

from rooflab.measure.cases import new_kernel_cases
from rooflab.fit.records import Measurement, write_measurements
from rooflab.load import load_gpu
from rooflab.vocab import Kernel
from support import META, _impl, _row


def test_new_rows_fit_a_model_for_each_kernel_and_implementation(tmp_path):
    """Rows timed as 4 us + t_model / 0.8 (t_model at 1.5 units per SM): `rooflab fit` recovers each group's model."""
    from rooflab.fit.fitting import model_times
    from rooflab.fit.fitting_io import fit_campaigns

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


def test_a_refit_keeps_the_fused_moe_entry_with_its_tile_term():
    """The fused MoE entry (tile_s, max_tokens) survives a rewrite of the YAML: fitted_yaml writes both terms and
    the GPU spec read back holds the entry the source held (to the digits written: the source was written so)."""
    from rooflab.fit.fitting_io import with_fitted
    from rooflab.load import data_dir, parse_yaml, spec_from_mapping
    from rooflab.specs import GpuSpec

    gpu = load_gpu("h200-sxm")
    fused = gpu.fitted_model(Kernel.gemm, "triton_fused_moe")
    assert fused is not None and fused.tile_s is not None
    text = with_fitted((data_dir("hardware") / "h200-sxm.yaml").read_text(), [fused])
    assert f"tile_s: {fused.tile_s:.4e}, max_tokens: {fused.max_tokens}" in text
    back = spec_from_mapping(GpuSpec, parse_yaml(text, "h200-sxm.yaml"), "h200-sxm.yaml")
    assert back.fitted == (fused,)
