"""The predicted-against-measured chart on the bundled H200 data (Agg backend).
"""

from __future__ import annotations

import pytest

from rooflab.plot import save_figure, validation_chart


def test_validation_chart_axes_and_points(validation):
    fig = validation_chart(validation)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "predicted time (s)" in ax.get_xlabel() and "measured time (s)" in ax.get_ylabel()
    groups = {c.get_gid() for c in ax.collections if (c.get_gid() or "").startswith("points:")}
    assert "points:flash:rooflab_hopper:held" in groups and "points:merge:rooflab:fit" in groups
    drawn = sum(len(c.get_offsets()) for c in ax.collections if (c.get_gid() or "").startswith("points:"))
    # rooflab's own rows with a prediction (the two d-64 mma.sync flash rows are too few to fit)
    ours = [r for r in validation.rows if r.impl.startswith("rooflab") and r.predicted_s is not None]
    assert drawn == len(ours) and len(ours) >= len([r for r in validation.rows if r.impl.startswith("rooflab")]) - 2
    lo, hi = ax.get_xlim()
    for r in ours:
        assert lo < r.predicted_s < hi and lo < r.measured_s < hi
    assert "NVIDIA H200" in ax.get_title(loc="left")


def test_validation_chart_with_peers_and_file(validation, tmp_path):
    fig = validation_chart(validation, impls=("rooflab", "torch_cudnn"))
    path = save_figure(fig, tmp_path / "v.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_validation_chart_needs_fitted_rows(validation):
    with pytest.raises(ValueError, match="no fitted rows"):
        validation_chart(validation, impls=("nobody",))
