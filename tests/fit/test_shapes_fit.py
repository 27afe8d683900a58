"""rooflab/fit/shapes_fit.py: the shapes files read, and the attention_pytorch model fitted on our H200 runs at the
published kernel rows' shapes (measurements/shapes/). No published row is read here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rooflab.errors import InputError
from rooflab.fit import shapes_fit as S
from rooflab.floors import Ceilings
from rooflab.load import load_gpu
from rooflab.specs import AttentionHeads
from rooflab.units import DType
from rooflab.vocab import CeilingSource


@pytest.fixture(scope="module")
def h200_roofs():
    return Ceilings.of(load_gpu("h200-sxm"), DType.fp16, CeilingSource.calibrated)


def test_read_shapes_refuses_bad_files(tmp_path):
    missing = tmp_path / "a.csv"
    missing.write_text("impl,d,h,t,b,causal\nsdpa_cudnn,64,32,512,32,0\n")
    with pytest.raises(InputError, match="missing columns time_s"):
        S.read_shapes(missing)
    bad = tmp_path / "b.csv"
    bad.write_text("impl,d,h,t,b,causal,time_s\nsdpa_cudnn,64,32,x,32,0,0.001\n")
    with pytest.raises(InputError, match="line 2"):
        S.read_shapes(bad)
    with pytest.raises(InputError, match="no such file|No such file"):
        S.read_shapes(tmp_path / "none.csv")
    meta = tmp_path / "c.csv"
    meta.write_text("# gpu: NVIDIA H200\nimpl,d,h,t,b,causal,time_s\nsdpa_cudnn,64,32,512,32,0,0.001\n")
    assert S.read_shapes(meta)[0].time_s == 0.001


def test_attention_pytorch_on_the_h200_within_10_percent(h200_roofs):
    whole = [r for r in S.read_shapes() if r.impl == S.FA_BENCH_WHOLE]
    assert len(whole) == 20
    errs = [abs(S.fa_bench_time(AttentionHeads(r.heads, r.heads, r.head_dim), r.seq_len, r.batch, DType.fp16,
                                r.causal, h200_roofs) / r.time_s - 1) for r in whole]
    assert np.median(errs) <= 0.06 and max(errs) <= 0.10


def test_attention_pytorch_passes_over_s():
    """4 passes over S without a mask, 6 with one (the FlashAttention benchmark's form), besides building the T x T
    mask itself."""
    heads = AttentionHeads(32, 32, 64)
    s_bytes = 2 * 32 * 8192 ** 2 * 2
    for causal, passes in ((False, 4), (True, 6)):
        ks = S.fa_bench_launches(heads, 8192, 2, DType.fp16, causal)
        big = sum(float(k.hbm_bytes) for name, k in ks.items() if name != "mask_build")
        assert passes * s_bytes <= big <= passes * s_bytes * 1.03


def test_the_mask_build_moves_each_pass_it_makes():
    """The FlashAttention benchmark's attention_pytorch (github.com/Dao-AILab/flash-attention,
    benchmarks/benchmark_flash_attention.py): torch.full fp32 (write 4), torch.triu (read 4, write 4), .to(fp16) (read 4, write 2): 18 bytes an element of
    the T x T mask, and bf16 the same; none without a mask."""
    heads = AttentionHeads(8, 8, 64)
    for dtype in (DType.fp16, DType.bf16):
        ks = S.fa_bench_launches(heads, 1024, 1, dtype, True)
        assert float(ks["mask_build"].hbm_bytes) == 18 * 1024 ** 2
    assert "mask_build" not in S.fa_bench_launches(heads, 1024, 1, DType.fp16, False)


def test_softmax_scales_by_sms_and_never_beats_the_bandwidth(h200_roofs):
    model = S.fa_bench_model()
    heads = AttentionHeads(32, 32, 64)
    one = model.launch_times(heads, 4096, 4, DType.fp16, False, h200_roofs)["softmax"]
    half = model.launch_times(heads, 4096, 4, DType.fp16, False, h200_roofs, sm_ratio=2.0)["softmax"]
    assert half == pytest.approx(2 * one)
    fast = model.launch_times(heads, 4096, 4, DType.fp16, False, h200_roofs, sm_ratio=1e-6)["softmax"]
    s_bytes = 2 * 4 * 32 * 4096 ** 2 * 2
    assert fast == pytest.approx(s_bytes / h200_roofs.bandwidth_bytes_per_s)
    slow_hbm = dataclasses.replace(h200_roofs, bandwidth_bytes_per_s=h200_roofs.bandwidth_bytes_per_s / 2)
    gemm = model.launch_times(heads, 4096, 4, DType.fp16, False, slow_hbm)["baddbmm"]
    assert gemm > model.launch_times(heads, 4096, 4, DType.fp16, False, h200_roofs)["baddbmm"]
