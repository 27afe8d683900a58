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
