"""Tests of rooflab/numerics/error_study.py: the error study's running state must be fp32 ("naive" = the
chapter "Naive attention and the online softmax", its section "What has to be fp32").
"""

from __future__ import annotations

from rooflab.numerics import state_precision_error
from rooflab.units import DType


# --- 6. error study ------------------------------------------------------------------------------

def test_the_state_must_be_fp32():
    # naive, "What has to be fp32": fp16 and bf16 state errors grow with N far past what storing the
    # output in that type costs; fp32's stays below what fp16 storage of the output costs anyway.
    rows = {(r.seq_len, r.precision): r for r in
            state_precision_error(seq_lens=(512, 32768), rows=8, head_dim=32)}
    for p in (DType.fp16, DType.bf16):
        assert rows[32768, p].median_rel_error > 3 * rows[32768, p].storage_rel_error
        assert rows[32768, p].median_rel_error > 2 * rows[512, p].median_rel_error
    assert rows[32768, DType.bf16].max_rel_error > 0.05
    assert rows[32768, DType.fp32].max_rel_error < 1e-5
    assert rows[32768, DType.fp32].max_rel_error < rows[32768, DType.fp16].storage_rel_error / 10
