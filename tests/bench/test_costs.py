"""`rooflab bench --new-kernels`: the attention variants' cases, their costs, their rows and the CLI, without a GPU;
one GPU test (marker gpu) runs a tiny case of each new kernel through the bench end to end.

The hand-computed examples below count visible (query, key) pairs from the masks' definitions
(rooflab.cost.common.Visibility; numerics.visible_keys) and check the cost model's FLOPs against
them: attention does 2 FLOPs a multiply-add over d for Q K^T and over d_v for P V, per visible pair
and query head; MLA as FlashMLA counts it, 2 (576 + 512) per pair and head (kernels.mla.mla_flops).
"""

from __future__ import annotations

import pytest

from rooflab.bench.costs import measurement_cost
from rooflab.bench.records import Measurement
from rooflab.errors import InputError
from rooflab.load import load_gpu
from rooflab.vocab import Kernel


def test_an_mla_row_without_a_value_part_is_refused():
    bad = Measurement(kernel=Kernel.mla_decode, impl="rooflab", dtype="bf16", time_s=1e-4, num_qo_heads=16,
                      num_kv_heads=1, head_dim=576, v_head_dim=576, context_lens="4096x8", page_size=64)
    with pytest.raises(InputError, match="v_head_dim"):
        measurement_cost(bad, load_gpu("h200-sxm"))
