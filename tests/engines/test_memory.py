"""Tests of rooflab/engines/memory.py: the default memory in use under TP by the GPUs' peer transport.

Hand figures (memory.py docstring): under TP without device links the default is
min(TP figure, TP-1 figure + 0.05 + (pcie_p2p: 89.5 MiB)); 89.5 MiB = 2 communicators x 2 channels x 2 connections
x (0.5 + 4.6875 + 4) MiB + 2 x 8 MiB = 73.5 + 16.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Engine, engine_capacity, parse_accounting
from rooflab.engines.memory import PCIE_P2P_BUFFERS_GIB, non_torch_default, sglang_absorbed_bytes
from rooflab.engines.vocab import Accounting
from rooflab.errors import SpecError
from rooflab.units import GiB, MiB
from rooflab.vocab import PeerTransport
from support import sglang

H100 = load_gpu("h100-sxm")
L4 = load_gpu("l4")
RTX4090 = load_gpu("rtx-4090")


def test_pcie_buffers_are_the_docstrings_89_5_mib():
    assert PCIE_P2P_BUFFERS_GIB * GiB == 2 * 2 * 2 * 9.1875 * MiB + 16 * MiB == 89.5 * MiB


@pytest.mark.parametrize("accounting, gpu, expected", [
    # device link: the table's NVSwitch figure, 2.10 GiB = int(2.1 x 2^30)
    (Accounting.vllm_v1, H100, 2_254_857_830),
    # host (GeForce): 0.25 + 0.05 = 0.30 GiB = int(0.3 x 2^30) = 322,122,547
    (Accounting.vllm_v1, RTX4090, 322_122_547),
    # PCIe P2P: SGLang 0.60 + 0.05 GiB + 89.5 MiB = 644,245,094.4 + 53,687,091.2 + 93,847,552 = 791,779,737.6
    (Accounting.sglang_v0_4, L4, 791_779_737),
    # vllm-v0's TP figure (0.25) is itself a GeForce one (vllm#13061): min(0.25, 0.20 + 0.05) keeps it
    (Accounting.vllm_v0, RTX4090, 268_435_456),
    # vllm-v0.2 charges no NCCL: min(0.50, 0.50 + 0.05 + 89.5 MiB) = 0.50
    (Accounting.vllm_v0_2, L4, 536_870_912),
])
def test_default_under_tp_by_transport(accounting, gpu, expected):
    assert non_torch_default(accounting, 2, gpu)[0] == expected


@pytest.mark.parametrize("accounting", list(Accounting))
@pytest.mark.parametrize("transport", [None, *PeerTransport])
def test_transport_moves_only_the_tp_figure_and_only_down(accounting, transport):
    """TP 1 never depends on the transport; under TP the figure lies between TP 1's and the NVSwitch one."""
    gpu = dataclasses.replace(L4, peer_transport=transport)
    tp1 = non_torch_default(accounting, 1, gpu)[0]
    assert tp1 == non_torch_default(accounting, 1, H100)[0]
    linked = non_torch_default(accounting, 8, H100)[0]
    assert tp1 <= non_torch_default(accounting, 8, gpu)[0] <= linked
    if transport in (None, PeerTransport.device_link):
        assert non_torch_default(accounting, 8, gpu)[0] == linked


def test_sglang_free_memory_at_start_on_eight_l4s():
    """pre = T - before: the L4 YAML's published total (deviceQuery 23,612,293,120 bytes, kamelth/COE506_Project)
    less 791,779,737 = 22,820,513,383 bytes (21.25 GiB); margin = (1 - 0.81) x pre."""
    cap = engine_capacity(load_model("mixtral-8x7b"), L4, sglang("v0.4", tensor_parallel=8, max_model_len=8192))
    total = cap.term("cuda_visible_total").bytes
    assert total == 23_612_293_120 and "YAML cuda_visible_bytes" in cap.term("cuda_visible_total").source
    margin = cap.term("margin").bytes
    assert margin == pytest.approx((1 - cap.utilization) * (total - 791_779_737), abs=2)


def test_peer_transport_outside_the_set_names_the_field():
    with pytest.raises((SpecError, ValueError)) as err:
        dataclasses.replace(L4, peer_transport="nvswitch")
    assert "peer_transport" in str(err.value)


def test_geforce_parts_are_host_and_sxm_parts_device_link():
    """The bundled YAMLs' facts (their peer_transport comments cite NVIDIA/nccl#1127 and the interconnects)."""
    assert {load_gpu(n).peer_transport for n in ("rtx-3090", "rtx-4090")} == {PeerTransport.host}
    assert {load_gpu(n).peer_transport for n in ("h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb")} == {
        PeerTransport.device_link}
    assert {load_gpu(n).peer_transport for n in ("l4", "a10", "a10g", "t4", "l40s")} == {PeerTransport.pcie_p2p}


def test_sglang_absorbed_copies_are_one_ranks_kv_b_in_fp8_before_v0_4_7_and_bf16_after():
    """w_kc + w_vc hold kv_b's d_c x h x (d_nope + d_v) for one rank's heads: 61 x 512 x 8 x 256 bytes at TP 16
    in fp8 (v0.4.3.post2 block_quant_to_tensor_quant: 63,963,136 bytes, the 0.06 GiB of NOTES' session 11), twice
    that in bf16 from v0.4.7 (block_quant_dequant); under DP attention 16 one rank holds all 128 heads."""
    v3 = load_model("deepseek-v3")
    assert sglang_absorbed_bytes(v3, 16, None, (0, 4, 3)) == 61 * 512 * 8 * 256 == 63_963_136
    assert sglang_absorbed_bytes(v3, 16, None, (0, 4, 7)) == 2 * 63_963_136
    assert sglang_absorbed_bytes(v3, 1, None, (0, 4, 6)) == 16 * 63_963_136
    assert sglang_absorbed_bytes(v3, 16) == 2 * 63_963_136            # no release: the newest read, v0.5.10

# --- vLLM's absorbed MLA copies (vllm_absorbed_bytes): the bf16 W_UK_T / W_UV of a quantised kv_b_proj ----------------

from rooflab.engines import engine_capacity  # noqa: E402
from rooflab.engines.memory import vllm_absorbed_bytes  # noqa: E402
from rooflab.units import DType  # noqa: E402
from support import vllm  # noqa: E402

DEEPSEEK_V3 = load_model("deepseek-v3")
H200 = load_gpu("h200")

#: DeepSeek-V3 / R1 config.json: num_hidden_layers 61 (all MLA), kv_lora_rank 512, num_attention_heads 128,
#: qk_nope_head_dim 128, v_head_dim 128; fp8 128 x 128 blocks (quantization_config), bf16 activations.
LAYERS, D_C, HEADS, D_NOPE, D_V, BF16 = 61, 512, 128, 128, 128, 2


@pytest.mark.parametrize("tp, expected", [(16, 127_926_272), (8, 255_852_544)])
def test_deepseek_r1_by_hand(tp, expected):
    """61 x 512 x (128 / TP) x (128 + 128) x 2 bytes: TP 16 127,926,272 B (0.119 GiB), TP 8 twice that."""
    assert LAYERS * D_C * (HEADS // tp) * (D_NOPE + D_V) * BF16 == expected
    assert vllm_absorbed_bytes(DEEPSEEK_V3, tp, None, Accounting.vllm_v1) == expected


@pytest.mark.parametrize("accounting, release, kept", [
    (Accounting.vllm_v1, None, True), (Accounting.vllm_v1, (0, 20, 2), True), (Accounting.vllm_v1, (0, 9, 1), True),
    (Accounting.vllm_v0_8, (0, 8, 0), True), (Accounting.vllm_v0, None, True), (Accounting.vllm_v0, (0, 8, 1), True),
    # v0.7.x absorbed into q_proj / o_proj instead (not modelled); v0.2 / v0.6.4 cached MLA's full K / V
    (Accounting.vllm_v0, (0, 7, 3), False), (Accounting.vllm_v0_6_4, None, False), (Accounting.vllm_v0_2, None, False),
    (Accounting.sglang_v0_5, None, False)])
def test_by_release(accounting, release, kept):
    got = vllm_absorbed_bytes(DEEPSEEK_V3, 16, None, accounting, release)
    assert got == (127_926_272 if kept else 0)


def test_an_unquantised_kv_b_is_viewed_not_copied():
    """get_and_maybe_dequant_weights returns an UnquantizedLinearMethod layer's own weight: W_UV / W_UK_T are views."""
    assert vllm_absorbed_bytes(DEEPSEEK_V3, 16, DType.bf16, Accounting.vllm_v1) == 0
    assert vllm_absorbed_bytes(load_model("llama-3-8b"), 1, None, Accounting.vllm_v1) == 0


def test_the_weights_term_carries_them():
    """vLLM's weights term at v0.8.4 exceeds v0.7.3's (V0, same weights otherwise) by exactly the copies."""
    args = dict(tensor_parallel=16, max_model_len=8192)
    new = engine_capacity(DEEPSEEK_V3, H200, vllm("v0", release="0.8.4", **args))
    old = engine_capacity(DEEPSEEK_V3, H200, vllm("v0", release="0.7.3", **args))
    assert new.term("weights").bytes - old.term("weights").bytes == 127_926_272
    assert "W_UK_T / W_UV (0.119 GiB)" in new.term("weights").source


def test_vllm_quantizes_bitsandbytes_in_flight_as_nf4_dq():
    """vLLM's bitsandbytes loader quantizes an unquantized checkpoint with quantize_4bit(compress_statistics=True,
    quant_type="nf4") whatever the config's type (vllm 0.7.3 wheel model_loader/loader.py:1016-1019; 0.11.2
    bitsandbytes_loader.py:439-443): fp4 asked for is nf4_dq's 4 + 8 / 64 + 32 / 16,384 bits, not fp4's 4 + 32 / 64.
    Qwen3-8B's 36 x 192,937,984 = 6,945,767,424 linear parameters: 6,945,767,424 x (4.5 - 4.126953125) / 8 =
    323,887,104 bytes less than fp4 would take (x the spec's published-count scale, 1.0011: specs/weights.py
    _published_scale). SGLang keeps the format asked for."""
    from rooflab.engines import EngineSettings
    from rooflab.engines.memory import engine_weight_bytes
    from rooflab.units import WeightFormat

    qwen3, t4 = load_model("qwen3-8b"), load_gpu("t4")
    fp4, nf4_dq = WeightFormat.of("fp4"), WeightFormat.of("nf4_dq")
    v0 = parse_accounting(Engine.vllm, "v0")
    in_flight, _ = engine_weight_bytes(qwen3, 1, fp4, accounting=v0, gpu=t4)
    asked, _ = engine_weight_bytes(qwen3, 1, nf4_dq, accounting=v0, gpu=t4)
    plain_fp4, _ = engine_weight_bytes(qwen3, 1, fp4)
    sglang_fp4, _ = engine_weight_bytes(qwen3, 1, fp4, accounting=parse_accounting(Engine.sglang, "v0.4"), gpu=t4)
    assert in_flight == asked
    assert plain_fp4 - in_flight == pytest.approx(323_887_104, rel=2e-3) and sglang_fp4 == plain_fp4
    settings = EngineSettings(v0, weight_format=fp4, max_model_len=256, utilization=0.69)
    assert engine_capacity(qwen3, t4, settings).term("weights").bytes == in_flight
