"""Tests of rooflab/engines/mxfp4.py: vLLM's padded mxfp4 experts (gpt-oss) in the engine's weights, by GPU.

The hand computation (gpt-oss-120b's config.json: hidden_size 2880, intermediate_size 2880, 128 experts, 36
layers; vLLM Mxfp4MoEMethod.create_weights, v0.11.2 vllm/model_executor/layers/quantization/mxfp4.py, and v0.20.2
fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size): Marlin rounds H to 256 and I to 128,

    H' = ceil(2880 / 256) 256 = 3072,  I' = ceil(2880 / 128) 128 = 2944 (TP 1);  I' = ceil(720 / 128) 128 = 768 (TP 4)

and each expert holds w13 2 I' x H' / 2 bytes + 2 I' x H' / 32 scales and w2 H' x I' / 2 + H' x I' / 32, so

    TP 1: 36 x 128 x 3 x 3072 x 2944 x 17 / 32 bytes = 66,418,900,992 bytes = 61.8574 GiB of experts
          against 36 x 128 x 3 x 2880 x 2880 x 17 / 32 = 60,914,073,600 bytes as shipped (ratio 1.090370)
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.engines.memory import engine_weight_bytes
from rooflab.engines.mxfp4 import Mxfp4Backend, expert_padding, loaded_expert_bytes, vllm_mxfp4_backend
from rooflab.engines.vocab import Accounting
from rooflab.units import GiB
from support import sglang, vllm

OSS = load_model("gpt-oss-120b")
H100, A100, B200 = load_gpu("h100-sxm"), load_gpu("a100-sxm-80gb"), load_gpu("b200")


def test_marlin_padding_by_hand():
    """A100 (8.0): Marlin; the loaded experts are 66,418,900,992 bytes against 60,914,073,600 (module docstring)."""
    ratio, line = expert_padding(OSS, Accounting.vllm_v1, A100, 1)
    assert ratio == Fraction(66_418_900_992, 60_914_073_600)
    assert "H 2880 -> 3072, I 2880 -> 2944" in line and "marlin" in line


def test_engine_weights_add_the_padding():
    """The weights term grows by the experts' padding and nothing else: (ratio - 1) x the experts as shipped (the
    published count's scale 116.8e9 / the derived count applies to both)."""
    plain, _ = engine_weight_bytes(OSS, 1)
    padded, src = engine_weight_bytes(OSS, 1, accounting=Accounting.vllm_v1, gpu=A100)
    scale = Fraction(OSS.total_parameters, OSS.parameters.total)
    extra = (66_418_900_992 - 60_914_073_600) * scale
    assert padded - plain == pytest.approx(float(extra), abs=2)
    assert (padded - plain) / GiB == pytest.approx(5.1273, abs=1e-3)
    assert "marlin" in src


def test_tp4_pads_the_rank_slice():
    """TP 4 on an A100: I = 2880 // 4 = 720 -> 768, H -> 3072: ratio 768 x 3072 / (720 x 2880) = 256 / 225."""
    assert expert_padding(OSS, Accounting.vllm_v1, A100, 4)[0] == Fraction(256, 225)
    # expert parallelism keeps experts whole: I = 2880 -> 2944 whatever the TP size
    assert expert_padding(OSS, Accounting.vllm_v1, A100, 4, expert_parallel=4)[0] == Fraction(3072 * 2944,
                                                                                              2880 * 2880)


@pytest.mark.parametrize("release, cc, vendor, backend", [
    ((0, 11, 2), (9, 0), "nvidia", Mxfp4Backend.marlin),       # no triton_kernels in the wheel
    ((0, 12, 0), (9, 0), "nvidia", Mxfp4Backend.triton),       # vendored from v0.12.0
    ((0, 20, 2), (8, 0), "nvidia", Mxfp4Backend.marlin),
    ((0, 20, 2), (8, 9), "nvidia", Mxfp4Backend.marlin),
    ((0, 20, 2), (10, 0), "nvidia", Mxfp4Backend.flashinfer),
    ((0, 20, 2), (12, 0), "nvidia", Mxfp4Backend.marlin),     # triton_kernels only below 11.0
    ((0, 10, 0), (8, 0), "nvidia", None),                      # before gpt-oss
    ((0, 20, 2), (9, 4), "amd", None),                         # ROCm: not modelled
    ((0, 20, 2), None, "nvidia", None),
])
def test_backend_by_release_and_capability(release, cc, vendor, backend):
    assert vllm_mxfp4_backend(release, cc, vendor) is backend


def test_hopper_triton_layouts_by_hand():
    """v0.20.2's Triton backend on an H100 (module docstring's formula), gpt-oss-120b at TP 1, I = 2880 (45 x 64):
    values ceil64(1440) x 5760 + ceil64(1440) x 2880 = 8,478,720 + 4,239,360; scales as loaded 5760 x 90 + 2880 x 90
    = 777,600; swizzled scales ceil256(5760) x 90 + ceil256(2880) x 90 = 529,920 + 276,480: 14,302,080 bytes an
    expert against 3 x 2880 x 2880 x 17 / 32 = 13,219,200. gpt-oss-20b at TP 2 (I 1440 -> 1472): values 1472 x 2944
    + 768 x 2880 = 6,545,408, scales 2944 x 90 + 2880 x 46 = 397,440, swizzled 3072 x 90 + 3072 x 46 = 417,792:
    7,360,640 against 6,609,600."""
    assert loaded_expert_bytes(Mxfp4Backend.triton, 2880, 2880) == 14_302_080
    assert expert_padding(OSS, Accounting.vllm_v1, H100, 1)[0] == Fraction(14_302_080, 13_219_200)
    assert expert_padding(load_model("gpt-oss-20b"), Accounting.vllm_v1, H100, 2)[0] == Fraction(7_360_640, 6_609_600)


def test_padded_layouts_never_shrink():
    """Invariant: every backend holds at least the checkpoint's bytes, for any TP that splits 2880 evenly."""
    for backend in Mxfp4Backend:
        for tp in (1, 2, 4, 8):
            assert loaded_expert_bytes(backend, 2880, 2880 // tp) * 32 >= 3 * 2880 * (2880 // tp) * 17


def test_blackwell_flashinfer_rounds_both_to_256():
    assert expert_padding(OSS, Accounting.vllm_v1, B200, 1)[0] == Fraction(3072 * 3072, 2880 * 2880)


def test_only_mxfp4_experts_under_vllm_v1():
    """A bf16 MoE, SGLang and the V0 accountings keep the checkpoint's bytes."""
    assert expert_padding(load_model("mixtral-8x7b"), Accounting.vllm_v1, A100, 1)[0] == 1
    for accounting in (Accounting.vllm_v0, Accounting.sglang_v0_5):
        assert expert_padding(OSS, accounting, A100, 1) == (Fraction(1), "")


def test_capacity_engine_mode_only():
    """`--engine vllm` carries the padding; the plain bound (ModelSpec.weight_bytes) keeps the checkpoint's."""
    c = engine_capacity(OSS, A100, vllm())
    assert c.term("weights").bytes == engine_weight_bytes(OSS, 1, accounting=Accounting.vllm_v1, gpu=A100)[0]
    assert c.term("weights").bytes > OSS.weight_bytes() + 5 * GiB
    s = engine_capacity(OSS, A100, sglang())
    assert s.term("weights").bytes == engine_weight_bytes(OSS, 1)[0]
    tp4 = engine_capacity(OSS, A100, dataclasses.replace(vllm(), tensor_parallel=4))
    assert "I 720 -> 768" in tp4.term("weights").source
