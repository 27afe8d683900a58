"""Tests of rooflab/engines/marlin_fp8.py: vLLM's Marlin group scales for block-fp8 linear layers (v0.9.0-v0.11.2
below compute capability 8.9, v0.29 below 9.0).

The hand computation (Qwen3-8B: hidden 4096, 32 query and 8 KV heads of 128, MLP 12,288, 36 layers; vLLM v0.29.0
vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py:156-214 prepare_fp8_layer_for_marlin): a
layer's projections hold

    q 4096 x 4096 + k, v 2 x 4096 x 1024 + o 4096 x 4096 + gate, up, down 3 x 4096 x 12,288 = 192,937,984

parameters, 36 layers 6,945,767,424. Marlin's group scales are (K / 128) N bf16 a layer, 2 bytes a 128 weights,
and replace the fp32 block scales fp8_block counts (4 bytes a 128 x 128 block):

    6,945,767,424 x 2 / 128 - 6,945,767,424 x 4 / 16,384 = 108,527,616 - 1,695,744 = 106,831,872 bytes
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.engines.marlin_fp8 import marlin_scale_bytes, takes_marlin
from rooflab.engines.vocab import Accounting
from rooflab.units import WeightFormat
from support import sglang, vllm

QWEN3 = load_model("qwen3-8b")
FP8_BLOCK = WeightFormat.of("fp8_block", "the weight format")
L4, A100, T4, H100, MI300X = (load_gpu(n) for n in ("l4", "a100-sxm-80gb", "t4", "h100-sxm", "mi300x"))
V029 = (0, 29, 0)


def test_qwen3_8b_by_hand():
    """106,831,872 bytes on one L4 at v0.29.0 (module docstring)."""
    assert QWEN3.parameters.attention + QWEN3.parameters.dense_mlp == 36 * 192_937_984
    assert marlin_scale_bytes(QWEN3, 1, FP8_BLOCK, L4, Accounting.vllm_v1, V029) == 106_831_872


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_split_by_tensor_parallelism(tp):
    """Each rank holds its 1/TP of the projections, so of their scales (within a byte of rounding)."""
    whole = marlin_scale_bytes(QWEN3, 1, FP8_BLOCK, L4, Accounting.vllm_v1, V029)
    assert abs(marlin_scale_bytes(QWEN3, tp, FP8_BLOCK, L4, Accounting.vllm_v1, V029) - whole / tp) <= 1


@pytest.mark.parametrize("gpu, expected", [(L4, True), (A100, True), (T4, True), (H100, False), (MI300X, False)])
def test_which_gpus_take_marlin(gpu, expected):
    """Marlin below 9.0 from 7.5 (CUTLASS and DeepGEMM block kernels need SM90); an AMD GPU's list has none."""
    assert takes_marlin(gpu, Accounting.vllm_v1, V029) is expected


@pytest.mark.parametrize("accounting, release", [(Accounting.vllm_v1, (0, 28, 9)), (Accounting.vllm_v1, None),
                                                 (Accounting.vllm_v0, V029), (Accounting.sglang_v0_5, V029)])
def test_only_from_the_release_read(accounting, release):
    """Before v0.29.0 (not read), without a release, or another accounting: no expansion."""
    assert marlin_scale_bytes(QWEN3, 1, FP8_BLOCK, L4, accounting, release) == 0


def test_other_formats_keep_their_bytes():
    """A bf16 checkpoint, or per-tensor fp8, has no block scales for Marlin to expand."""
    for fmt in (None, WeightFormat.of("fp8", "the weight format")):
        assert marlin_scale_bytes(QWEN3, 1, fmt, L4, Accounting.vllm_v1, V029) == 0


def test_in_vllm_weights_term():
    """vllm_capacity's weights term carries them at v0.29.0 on an L4, not at v0.24.0 nor on an H100, nor in
    SGLang's."""
    def weights(gpu, release, settings=vllm):
        opts = dict(weight_format=FP8_BLOCK, max_model_len=8192, max_num_seqs=128, max_num_batched_tokens=8192)
        if release:
            opts["release"] = release
        return engine_capacity(QWEN3, gpu, settings(**opts)).term("weights")

    new, old = weights(L4, "0.29.0"), weights(L4, "0.24.0")
    assert new.bytes - old.bytes == 106_831_872 and "Marlin's group scales" in new.source
    assert weights(H100, "0.29.0").bytes == weights(H100, "0.24.0").bytes
    assert "Marlin" not in weights(L4, None, lambda **kw: sglang("v0.5", **kw)).source


@pytest.mark.parametrize("gpu, accounting, release, method, expected", [
    (A100, Accounting.vllm_v1, (0, 10, 2), None, True),      # Fp8LinearMethod below 8.9 (0.10.0 fp8.py:197, :416)
    (A100, Accounting.vllm_v1, (0, 11, 2), None, True),      # 0.11.2 fp8.py:362, :539
    (A100, Accounting.vllm_v0, (0, 9, 2), None, True),       # V0 shares Fp8LinearMethod (0.9.2 fp8.py:188, :392)
    (A100, Accounting.vllm_v0_8, (0, 9, 0), None, True),     # 0.9.0 fp8.py:179, :383
    (L4, Accounting.vllm_v1, (0, 11, 2), None, False),       # 8.9: Triton with the block scales
    (T4, Accounting.vllm_v1, (0, 11, 2), None, False),       # 7.5: Fp8Config needs 8.0
    (A100, Accounting.vllm_v0, (0, 8, 0), None, False),      # 0.8.0: block quant turns Marlin off
    (A100, Accounting.vllm_v1, (0, 11, 2), "compressed-tensors", False),   # W8A8BlockFp8LinearOp, no Marlin
    (L4, Accounting.vllm_v1, V029, "compressed-tensors", True),            # v0.29's kernel list serves both
    (A100, Accounting.vllm_v1, (0, 12, 0), None, False),     # between the spans: not read
])
def test_the_releases_read(gpu, accounting, release, method, expected):
    from rooflab.specs import QuantMethod

    quant = QuantMethod(method) if method else None
    assert takes_marlin(gpu, accounting, release, quant) is expected


def test_a100_at_0_10_2_by_hand():
    """The same 106,831,872 bytes (bf16 group scales) on an A100 at v0.10.2, in the weights term."""
    assert marlin_scale_bytes(QWEN3, 1, FP8_BLOCK, A100, Accounting.vllm_v1, (0, 10, 2)) == 106_831_872
    opts = dict(weight_format=FP8_BLOCK, max_model_len=8192, max_num_seqs=128, max_num_batched_tokens=8192)
    new = engine_capacity(QWEN3, A100, vllm(release="0.10.2", **opts)).term("weights")
    old = engine_capacity(QWEN3, A100, vllm("v0", release="0.8.0", **opts)).term("weights")
    assert new.bytes - old.bytes == 106_831_872
