"""rooflab.fit.costs: the cost a measurement row is priced at (measurement_cost): an MLA row without its value
part is refused naming it, and rows of one workload share one cost while decode peers keep their own splits."""

from __future__ import annotations

import pytest

from rooflab.fit.costs import measurement_cost
from rooflab.fit.records import Measurement
from rooflab.errors import InputError
from rooflab.load import load_gpu
from rooflab.vocab import Kernel


def test_an_mla_row_without_a_value_part_is_refused():
    bad = Measurement(kernel=Kernel.mla_decode, impl="rooflab", dtype="bf16", time_s=1e-4, num_qo_heads=16,
                      num_kv_heads=1, head_dim=576, v_head_dim=576, context_lens="4096x8", page_size=64)
    with pytest.raises(InputError, match="v_head_dim"):
        measurement_cost(bad, load_gpu("h200-sxm"))


def test_rows_of_one_workload_share_one_cost_and_decode_peers_keep_their_splits():
    """measurement_cost prices a workload once: rows that differ only in their timing or in which peer ran them get
    the same cost (the very object); a decode row of another implementation is priced at rooflab's recommended
    split count, not at the row's own, so it is not rooflab's row's cost; another GPU is another cost."""
    import dataclasses

    gpu = load_gpu("h200-sxm")
    flash = Measurement(kernel=Kernel.flash, impl="torch_flash", dtype="bf16", time_s=1e-3, batch=4,
                        num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_len=4096, causal=True)
    peer = dataclasses.replace(flash, impl="torch_cudnn", time_s=2e-3, repeats=50, time_p10_s=1.9e-3)
    assert measurement_cost(flash, gpu, 132, 1.5) is measurement_cost(peer, gpu, 132, 1.5)
    assert measurement_cost(flash, gpu, 132, 1.5) is not measurement_cost(flash, gpu, 132, 2.0)
    assert measurement_cost(flash, load_gpu("h100-sxm"), 132, 1.5) is not measurement_cost(flash, gpu, 132, 1.5)
    ours = Measurement(kernel=Kernel.paged, impl="rooflab", dtype="fp16", time_s=1e-4, num_qo_heads=32,
                       num_kv_heads=8, head_dim=128, context_lens="8192x1", page_size=16, splits=1)
    torch = dataclasses.replace(ours, impl="torch_flash_dense")
    assert measurement_cost(ours, gpu, 132, 1.5).num_splits == 1
    assert measurement_cost(torch, gpu, 132, 1.5).num_splits > 1          # priced as rooflab would split it
    assert measurement_cost(torch, gpu, 132, 1.5) is measurement_cost(
        dataclasses.replace(torch, impl="torch_cudnn_dense"), gpu, 132, 1.5)
