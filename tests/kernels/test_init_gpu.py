"""GPU tests of rooflab/kernels/__init__.py's launchers together: bad arguments are refused by name with a
ValueError before any launch (flash attention, softmax, merges, paged and MLA decode).

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.kernels import testing as kt

from .gpu_support import _mla_cache, normal

pytestmark = pytest.mark.gpu


# ---------------------------------------------------------------- argument checks

def test_launchers_refuse_bad_arguments(cp, rng):
    from rooflab.kernels import flash_attention, merge_states, paged_decode, softmax_rows

    q = normal(cp, rng, (1, 4, 16, 128), "fp16")
    k = normal(cp, rng, (1, 3, 16, 128), "fp16")
    with pytest.raises(ValueError, match="multiple of KV heads"):
        flash_attention(q, k, k)
    with pytest.raises(ValueError, match="head_dim"):
        x = normal(cp, rng, (1, 2, 16, 96), "fp16")
        flash_attention(x, x, x)
    with pytest.raises(ValueError, match="C-contiguous"):
        flash_attention(q.transpose(0, 2, 1, 3), q, q)
    with pytest.raises(ValueError, match="float16, bfloat16"):
        x = q.astype(cp.float32)
        flash_attention(x, x, x)
    with pytest.raises(ValueError, match="cupy.ndarray"):
        softmax_rows(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="lse_a and lse_b"):
        o = normal(cp, rng, (4, 2, 64), "fp16")
        merge_states(o, cp.zeros((4, 3), cp.float32), o, cp.zeros((4, 3), cp.float32))
    cache = kt.make_paged_cache([5, 9], 2, 64, 16, "fp16", seed=1)
    qd = normal(cp, rng, (2, 4, 64), "fp16")
    with pytest.raises(ValueError, match="int32"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table.astype(cp.int64), cache.context_lens)
    with pytest.raises(ValueError, match="num_splits"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, num_splits=0)
    with pytest.raises(ValueError, match="fp8"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, k_scale=2.0)
    fp8 = kt.make_paged_cache([5, 9], 2, 64, 16, kt.FP8_KV, seed=1)
    with pytest.raises(ValueError, match="both be fp8"):
        paged_decode(qd, fp8.k_cache, cache.v_cache, cache.block_table, cache.context_lens)
    with pytest.raises(ValueError, match="v_scale"):
        paged_decode(qd, fp8.k_cache, fp8.v_cache, fp8.block_table, fp8.context_lens, v_scale=0.0)


# ---------------------------------------------------------------- bad input: ValueError before any launch

def test_new_arguments_are_refused_by_name(cp, rng):
    from rooflab.kernels import flash_attention, mla_decode, paged_decode

    q = kt.random_normal((1, 4, 16, 128), "fp16", rng)
    k = kt.random_normal((1, 2, 16, 128), "fp16", rng)
    for bad in (0, -3, 2.5, True, 2**31):
        with pytest.raises(ValueError, match="window"):
            flash_attention(q, k, k, causal=True, window=bad)
        with pytest.raises(ValueError, match="chunk"):
            flash_attention(q, k, k, causal=True, chunk=bad)
    with pytest.raises(ValueError, match="window=8 is a causal mask"):
        flash_attention(q, k, k, window=8)
    with pytest.raises(ValueError, match="sinks"):
        flash_attention(q, k, k, causal=True, sinks=cp.zeros(3, cp.float32))
    with pytest.raises(ValueError, match="sinks"):
        flash_attention(q, k, k, causal=True, sinks=cp.zeros(4, cp.float16))
    with pytest.raises(ValueError, match="variant"):
        flash_attention(q, k, k, causal=True, window=8, impl="hopper", variant=(2, 128, False))
    cache = kt.make_paged_cache([20, 9], 2, 128, 16, "fp16", seed=1)
    with pytest.raises(ValueError, match="q_len"):
        paged_decode(kt.random_normal((2, 9, 4, 128), "fp16", rng), cache.k_cache, cache.v_cache,
                     cache.block_table, cache.context_lens)
    qd = kt.random_normal((2, 2, 4, 128), "fp16", rng)
    with pytest.raises(ValueError, match="window"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, window=0)
    with pytest.raises(ValueError, match="sinks"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, sinks=cp.zeros(2, cp.float32))
    with pytest.raises(ValueError, match="q must be"):
        paged_decode(kt.random_normal((2, 4, 128), "fp16", rng)[None, None], cache.k_cache, cache.v_cache,
                     cache.block_table, cache.context_lens)
    mcache, latent = _mla_cache(cp, rng, [70, 3], "bf16")
    qm = kt.random_normal((2, 1, 16, 576), "bf16", rng)
    with pytest.raises(ValueError, match="576"):
        mla_decode(kt.random_normal((2, 1, 16, 512), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="page_size"):
        mla_decode(qm, latent.reshape(-1, 32, 576), mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="latent_cache"):
        mla_decode(qm, latent.view(cp.float16), mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="kv_scale"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, kv_scale=2.0)
    with pytest.raises(ValueError, match="heads"):
        mla_decode(kt.random_normal((2, 1, 129, 576), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="q_len"):
        mla_decode(kt.random_normal((2, 9, 16, 576), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="mt"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, mt=3)
    with pytest.raises(ValueError, match="num_splits"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, num_splits=0)
    with pytest.raises(ValueError, match="impl"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, impl="wgmma")
    fcache, flatent = _mla_cache(cp, rng, [70, 3], kt.FP8_KV)
    with pytest.raises(ValueError, match="impl='hopper'"):
        mla_decode(qm, flatent, fcache.block_table, fcache.context_lens, impl="hopper")
