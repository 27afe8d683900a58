"""Charts (rooflab.plot) under the Agg backend, and `rooflab plot`: scales, labels, limits, ridge, files.
"""

from __future__ import annotations

import subprocess
import sys


def test_charts_use_no_pyplot():
    # (the core's freedom from matplotlib is tests/test_imports.py's)
    code = (
        "import sys\n"
        "from rooflab import load_gpu, load_model\n"
        "from rooflab.plot import roofline_chart, roofline_data\n"
        "roofline_chart(roofline_data(load_model('llama-3-8b'), [load_gpu('h100-sxm')]))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'a chart used pyplot'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_sweeps_old_paths_re_export_rooflab_sweeps():
    """series.py, points.py, grid.py and frames.py moved to rooflab/sweeps/; rooflab.plot and the old module paths
    give the same objects for one release."""
    import importlib

    import rooflab.plot as plot
    import rooflab.sweeps as sweeps

    for name in sweeps.__all__:
        if hasattr(plot, name):
            assert getattr(plot, name) is getattr(sweeps, name)
    assert plot.decode_sweep is sweeps.decode_sweep and plot.roofline_data is sweeps.roofline_data
    for module in ("series", "points", "grid", "frames"):
        old, new = importlib.import_module(f"rooflab.plot.{module}"), importlib.import_module(f"rooflab.sweeps.{module}")
        public = [n for n in vars(new) if not n.startswith("_") and getattr(vars(new)[n], "__module__", "") == new.__name__]
        assert public and all(getattr(old, n) is getattr(new, n) for n in public), module
