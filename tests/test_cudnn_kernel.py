"""rooflab/cudnn_kernel.py: the launch cuDNN's fused attention makes, priced from the workload a FlashCost records."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.cost.flash import flash_prefill
from rooflab.cost.naive import naive_prefill
from rooflab.cost.common import Visibility
from rooflab.cudnn_kernel import (CUDNN_SHAPES_IMPL, CUDNN_TILE, KERNEL_MODELS, causal_fraction, cudnn_cost,
                                  cudnn_head_dim, kernel_cost, modelled_impl)
from rooflab.errors import InputError
from rooflab.load import load_gpu
from rooflab.specs import AttentionHeads
from rooflab.transfer import CROSS_GPU_ERROR, error_band
from rooflab.units import DType
from rooflab.vocab import Kernel
from support import refused

H200 = load_gpu("h200-sxm")
HEADS = AttentionHeads(32, 8, 96)


def test_a_flash_cost_records_its_workload_and_kernel_cost_reprices_it():
    cost = flash_prefill(HEADS, 4096, 2, DType.bf16, True, gpu=H200, sinks=True)
    assert (cost.heads, int(cost.batch), cost.dtype, cost.sinks, cost.write_lse) == (HEADS, 2, DType.bf16, True, True)
    moved = kernel_cost(CUDNN_SHAPES_IMPL, cost, H200)
    direct = cudnn_cost(HEADS, 4096, 2, DType.bf16, True, H200, sinks=True)
    assert moved.tile == CUDNN_TILE and moved.heads.head_dim == 128         # d 96 runs the 128 kernel
    for name in ("flops", "hbm_bytes", "exp_ops", "parallel_fraction"):
        assert float(getattr(moved.kernel, name)) == float(getattr(direct.kernel, name)), name
    assert float(moved.kernel.flops) == pytest.approx(float(cost.kernel.flops) * 128 / 96)
    assert kernel_cost("torch_flash", cost, H200) is cost                   # any other entry: the cost as it is


def test_array_lengths_price_each_element_as_its_own_launch():
    arrays = cudnn_cost(HEADS, np.array([1024, 4096]), np.array([4, 1]), DType.fp16, True, H200)
    for i, (t, b) in enumerate(((1024, 4), (4096, 1))):
        one = cudnn_cost(HEADS, t, b, DType.fp16, True, H200)
        assert float(np.asarray(arrays.kernel.parallel_fraction)[i]) == float(one.kernel.parallel_fraction)
        assert float(np.asarray(arrays.kernel.flops)[i]) == float(one.kernel.flops)


def test_kernel_cost_refuses_what_cudnns_model_does_not_price():
    with pytest.raises(InputError, match=CUDNN_SHAPES_IMPL):
        kernel_cost(CUDNN_SHAPES_IMPL, naive_prefill(HEADS, 1024), H200)
    window = flash_prefill(HEADS, 4096, 1, DType.fp16, True, gpu=H200, visibility=Visibility(512))
    with pytest.raises(InputError, match="full-attention"):
        kernel_cost(CUDNN_SHAPES_IMPL, window, H200)


def test_the_model_is_named_as_the_implementation_it_predicts():
    assert KERNEL_MODELS == {(Kernel.flash, "torch_cudnn"): CUDNN_SHAPES_IMPL}
    assert modelled_impl(CUDNN_SHAPES_IMPL) == "torch_cudnn" and modelled_impl("torch_flash") == "torch_flash"
    band, note = error_band(H200.fitted_model(Kernel.flash, CUDNN_SHAPES_IMPL), H200, load_gpu("h100-sxm"))
    assert band == CROSS_GPU_ERROR[("torch_cudnn", "hopper")][0] and "35 published hopper rows" in note


@pytest.mark.parametrize("seq_len, batch", [(4096.5, 2), (4096, 2.5), (np.array([1024, 1024.5]), 1)])
def test_a_causal_cudnn_launch_is_of_whole_sequences(seq_len, batch):
    """seq_len or batch 2.5 was priced causal, its schedule int()ed to 2: the schedule counts whole query tiles."""
    refused(lambda: cudnn_cost(HEADS, seq_len, batch, DType.fp16, True, H200), "whole numbers")


def test_a_non_causal_cudnn_launch_takes_a_mean_length_as_flash_prefill_does():
    """A ring's block is seq_len / world_size tokens (cost/ring.py: 4,099 over 2 ranks, 2,049.5), non-causal; the
    H200's flash prediction goes through kernel_cost for cuDNN's entry, so it must price that block."""
    from rooflab.context_parallel import ring_time
    from rooflab.cost.ring import ring_prefill

    cost = cudnn_cost(HEADS, 2049.5, 1, DType.fp16, False, H200)
    assert cudnn_cost(HEADS, 2049, 1, DType.fp16, False, H200).flops < cost.flops \
        < cudnn_cost(HEADS, 2050, 1, DType.fp16, False, H200).flops
    assert ring_time(H200, ring_prefill(HEADS, 4099, 2, gpu=H200), impl="torch_cudnn").t_predicted_s > 0


def test_the_arguments_are_refused_under_their_own_names():
    """causal_fraction's units were refused as 'repeats (times unit_work is issued over)', schedule_fraction's
    name; cudnn_head_dim(0) was 64 and cudnn_head_dim(nan) nan; kernel_cost(..., None, gpu) returned None."""
    refused(lambda: causal_fraction(4096, 2.5, 132), "units")
    refused(lambda: causal_fraction(4096, 64, None), "num_sms")
    refused(lambda: causal_fraction(4096, 64, 132, tile=(64, 128)), "tile", "FlashTile")
    refused(lambda: cudnn_head_dim(0), "head_dim")
    refused(lambda: kernel_cost("torch_flash", None, H200), "cost")
    refused(lambda: kernel_cost("torch_flash", flash_prefill(HEADS, 1024), "h200"), "gpu", "GpuSpec")
    assert cudnn_head_dim(np.int64(96)) == 128


def test_an_implementation_id_is_any_well_formed_name():
    """Implementation ids are an open set (a measurement file names its own: FittedModel.impl; transfer.why_not
    answers for one it does not know), so a name is checked for its form only and passes as itself."""
    assert modelled_impl("my_kernel_v2") == "my_kernel_v2" and modelled_impl("flash-attn 2") == "flash-attn 2"
    for bad in (None, b"torch_cudnn", "", " torch_cudnn", "torch\ncudnn", 3):
        refused(lambda b=bad: modelled_impl(b), "impl")

