"""Tests of rooflab/cli/fit.py: `rooflab fit` refits the kernels its campaigns measure and keeps the fits of
other files (fixtures built from rooflab's own predictions, so the expected fits are known exactly).
"""

from __future__ import annotations




def test_rooflab_fit_writes_the_fitted_list_and_keeps_fits_of_other_files(tmp_path):
    """`rooflab fit` refits the kernels its campaigns measure; a GEMM fitted from another file stays."""
    from typer.testing import CliRunner

    from rooflab.cli import app
    from rooflab.load import data_dir, load_gpu
    from rooflab.vocab import Kernel

    target = tmp_path / "h200-sxm.yaml"
    r = CliRunner().invoke(app, ["fit", str(data_dir("measurements") / "h200-sweep.csv"), "-o", str(target)])
    assert r.exit_code == 0, r.output
    written = load_gpu(target)
    bundled = load_gpu("h200-sxm")
    refit = {m.key for m in written.fitted if "h200-sweep.csv" in m.campaigns}
    assert (Kernel.paged, "rooflab") in refit and (Kernel.flash, "torch_cudnn") in refit
    others = [m for m in bundled.fitted if m.key not in refit]
    assert others and all(m in written.fitted for m in others)          # e.g. gemm / torch_cublas
    assert "kept" in r.stderr and "gemm/torch_cublas" in r.stderr
    assert written.measured == bundled.measured and written.interconnect == bundled.interconnect
