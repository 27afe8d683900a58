"""PyTorch on the same shapes as rooflab's kernels: the peers the measurements are compared with.

    flash   scaled_dot_product_attention with each backend PyTorch offers (flash, cuDNN,
            memory-efficient), GQA through enable_gqa so K and V are not copied
    naive   the eager composition matmul -> softmax -> matmul (S and P materialised)
    paged   dense decode (one query token, contiguous K/V) through SDPA's flash and cuDNN
            backends: the same KV bytes without a block table
    merge   the LSE merge written as eager tensor operations
    mla_decode  one new token a sequence (q_len 1, a 16-bit latent, unsplit): the absorbed form as torch.bmm
            over a dense latent [B, ctx, 576], softmax in fp32, bmm with its first 512 columns (S and P
            materialised; FLOPs as FlashMLA counts them)

No peer for the windowed kernels (flash_window, paged_window) or several new tokens (paged_multi):
SDPA takes a window only as a materialised mask (T x T bytes at T 32k, and a backend without tile
skipping, so no fair peer), FlexAttention's compile costs tens of seconds a shape (KERNELS.md times
it against the window kernel separately), and SDPA's is_causal aligns a short query block top-left,
not at the end of the keys. Every peer is checked against rooflab's fp64 oracle on a slice before it
is timed, like rooflab's own kernels. PyTorch is optional: without it this module yields nothing.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..vocab import Kernel
from .cases import Case

Runner = tuple[str, Callable[[], object], Callable[[], float]]   # impl, launch, check -> max rel error

_SDPA_BACKENDS = (("torch_flash", "FLASH_ATTENTION"), ("torch_cudnn", "CUDNN_ATTENTION"),
                  ("torch_efficient", "EFFICIENT_ATTENTION"))


def available() -> bool:
    try:
        import torch
    except Exception:
        return False
    return bool(torch.cuda.is_available())


def _dtype(case: Case):
    import torch

    return getattr(torch, case.dtype.array_name)


def peers(case: Case, rng: np.random.Generator) -> Iterator[Runner]:
    """PyTorch implementations of `case`, each with its own correctness check (none for an fp8 KV cache)."""
    if not available() or case.kv_dtype not in (None, case.dtype):
        return
    if case.kernel is Kernel.flash:
        yield from _sdpa_prefill(case, rng)
    elif case.kernel is Kernel.naive:
        yield _eager_naive(case, rng)
    elif case.kernel is Kernel.naive_softmax:
        yield _eager_softmax(case, rng)
    elif case.kernel is Kernel.paged and len(set(case.context_lens)) == 1 and case.page_size == 16:
        yield from _sdpa_decode(case, rng)
    elif case.kernel is Kernel.merge:
        yield _eager_merge(case, rng)
    elif case.kernel is Kernel.mla_decode and case.q_len == 1 and case.splits == 1:
        yield _bmm_mla(case, rng)


def _randn(shape, case: Case, rng: np.random.Generator, scale: float = 1.0):
    import torch

    host = rng.standard_normal(shape, dtype=np.float32) * scale
    return torch.from_numpy(host).to(device="cuda", dtype=_dtype(case))


def _sdpa_prefill(case: Case, rng: np.random.Generator) -> Iterator[Runner]:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    h = case.heads
    q = _randn((case.batch, h.num_qo_heads, case.seq_len, h.head_dim), case, rng)
    k = _randn((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case, rng)
    v = _randn((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case, rng)
    gqa = h.num_qo_heads != h.num_kv_heads
    for impl, name in _SDPA_BACKENDS:
        backend = getattr(SDPBackend, name)

        def launch(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v, is_causal=case.causal, enable_gqa=gqa)

        def check(launch=launch):
            return _check_attention(launch(), q, k, v, case)

        yield impl, launch, check


def _check_attention(out, q, k, v, case: Case, rows: int = 64) -> float:
    """Relative error of the last `rows` query rows of head 0 and the last head against the fp64 oracle."""
    from ..numerics import attention_reference

    worst = 0.0
    group = case.heads.group_size
    for head in (0, case.heads.num_qo_heads - 1):
        sl = slice(max(0, case.seq_len - rows), case.seq_len)
        qh = q[0:1, head:head + 1, sl].double().cpu().numpy()
        kh = k[0:1, head // group:head // group + 1].double().cpu().numpy()
        vh = v[0:1, head // group:head // group + 1].double().cpu().numpy()
        ref, _ = attention_reference(qh, kh, vh, causal=case.causal)
        got = out[0:1, head:head + 1, sl].double().cpu().numpy()
        worst = max(worst, float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    return worst


def _eager_naive(case: Case, rng: np.random.Generator) -> Runner:
    import torch

    h = case.heads
    q = _randn((case.batch, h.num_qo_heads, case.seq_len, h.head_dim), case, rng)
    k = _randn((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case, rng)
    v = _randn((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case, rng)
    g = h.group_size
    scale = h.head_dim ** -0.5
    mask = torch.ones(case.seq_len, case.seq_len, dtype=torch.bool, device="cuda").triu(1) if case.causal else None

    def launch():
        # [B, h_kv, g*T, d] x [B, h_kv, d, T]: the group's query heads share their KV head without a copy
        qg = q.view(case.batch, h.num_kv_heads, g * case.seq_len, h.head_dim)
        s = torch.matmul(qg, k.transpose(-1, -2)).view(case.batch, h.num_qo_heads, case.seq_len, case.seq_len)
        s = s * scale
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        p = torch.softmax(s, dim=-1)
        pg = p.view(case.batch, h.num_kv_heads, g * case.seq_len, case.seq_len)
        return torch.matmul(pg, v).view(case.batch, h.num_qo_heads, case.seq_len, h.head_dim)

    return "torch_eager", launch, lambda: _check_attention(launch(), q, k, v, case)


def _eager_softmax(case: Case, rng: np.random.Generator) -> Runner:
    import torch

    h = case.heads
    s = _randn((case.batch, h.num_qo_heads, case.seq_len, case.seq_len), case, rng, scale=3.0)

    def check():
        x = s[0, 0, :8].double().cpu().numpy()
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        ref = e / e.sum(axis=-1, keepdims=True)
        got = torch.softmax(s, dim=-1)[0, 0, :8].double().cpu().numpy()
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    return "torch_eager", lambda: torch.softmax(s, dim=-1), check


def _sdpa_decode(case: Case, rng: np.random.Generator) -> Iterator[Runner]:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    h = case.heads
    length = case.context_lens[0]
    q = _randn((case.batch, h.num_qo_heads, 1, h.head_dim), case, rng)
    k = _randn((case.batch, h.num_kv_heads, length, h.head_dim), case, rng)
    v = _randn((case.batch, h.num_kv_heads, length, h.head_dim), case, rng)
    for impl, name in _SDPA_BACKENDS[:2]:
        backend = getattr(SDPBackend, name)

        def launch(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v, enable_gqa=h.num_qo_heads != h.num_kv_heads)

        def check(launch=launch):
            prefill_like = Case(Kernel.flash, case.dtype, heads=h, batch=case.batch, seq_len=1)
            return _check_attention(launch(), q, k, v, prefill_like)

        yield impl + "_dense", launch, check


def _eager_merge(case: Case, rng: np.random.Generator) -> Runner:
    import torch

    from ..numerics import merge_states

    h, n = case.heads, case.tokens
    o_a = _randn((n, h.num_qo_heads, h.head_dim), case, rng)
    o_b = _randn((n, h.num_qo_heads, h.head_dim), case, rng)
    lse_a = torch.from_numpy(rng.standard_normal((n, h.num_qo_heads), dtype=np.float32) * 3).cuda()
    lse_b = torch.from_numpy(rng.standard_normal((n, h.num_qo_heads), dtype=np.float32) * 3).cuda()

    def launch():
        a = torch.where(torch.isinf(lse_a), torch.full_like(lse_a, float("-inf")), lse_a)
        b = torch.where(torch.isinf(lse_b), torch.full_like(lse_b, float("-inf")), lse_b)
        m = torch.maximum(a, b)
        ea, eb = torch.exp(a - m), torch.exp(b - m)
        total = ea + eb
        out = o_a.float() * (ea / total).unsqueeze(-1) + o_b.float() * (eb / total).unsqueeze(-1)
        return out.to(o_a.dtype)

    def check():
        got = launch()[:256].double().cpu().numpy()
        ref, _ = merge_states(o_a[:256].double().cpu().numpy(), lse_a[:256].double().cpu().numpy(),
                              o_b[:256].double().cpu().numpy(), lse_b[:256].double().cpu().numpy())
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    return "torch_eager", launch, check


def _bmm_mla(case: Case, rng: np.random.Generator) -> Runner:
    """Absorbed MLA decode of one token a sequence as two batched GEMMs over a dense latent: S = q c^T (all h heads
    of a sequence are the rows), P = softmax(scale S) in fp32, O = P c[:, :512]."""
    import torch

    from ..numerics import mla_decode_reference

    h = case.heads
    length = case.context_lens[0]
    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 31)))
    dtype = _dtype(case)
    latent = torch.randn(case.batch, length, h.head_dim, device="cuda", dtype=dtype, generator=gen)
    q = torch.randn(case.batch, h.num_qo_heads, h.head_dim, device="cuda", dtype=dtype, generator=gen)
    scale = h.head_dim ** -0.5

    def launch():
        s = torch.bmm(q, latent.transpose(1, 2)) * scale                      # [B, h, ctx]
        p = torch.softmax(s.float(), dim=-1).to(dtype)
        return torch.bmm(p, latent[:, :, :h.value_dim])                       # [B, h, 512]

    def check():
        got = launch()[0].double().cpu().numpy()
        ref, _ = mla_decode_reference(q[0:1].double().cpu().numpy(), latent[0].double().cpu().numpy(), h.value_dim)
        return float(np.linalg.norm(got - ref[0]) / np.linalg.norm(ref[0]))

    return "torch_bmm_dense", launch, check
