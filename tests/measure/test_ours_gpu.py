"""GPU tests of rooflab/measure/ours.py: a measurement names the kernel that ran (the wgmma flash kernel on sm_90).

Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py); the `hopper` fixture
(tests/kernels/gpu_support.py) skips off sm_90.
"""

from __future__ import annotations

import pytest

from kernels.gpu_support import cp, hopper  # noqa: F401 - pytest fixtures (hopper needs cp), found by name

pytestmark = pytest.mark.gpu


def test_bench_names_the_flash_implementation_that_runs(hopper):
    # measurements must say which kernel was timed: the wgmma one (d 128 on sm_90) or the mma.sync one
    from rooflab.measure.cases import Case
    from rooflab.measure.ours import impl_name
    from rooflab.specs import AttentionHeads
    from rooflab.units import DType
    from rooflab.vocab import Kernel

    assert impl_name(Case(Kernel.flash, DType.fp16, seq_len=128)) == "rooflab_hopper"
    assert impl_name(Case(Kernel.flash, DType.fp16, AttentionHeads(32, 8, 64), seq_len=128)) == "rooflab"
    assert impl_name(Case(Kernel.paged, DType.fp16, context_lens=(64,), page_size=16)) == "rooflab"
