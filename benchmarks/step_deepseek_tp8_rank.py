"""Issue 29: a DeepSeek-V3 decode step as one TP-8 rank runs it, measured whole on one H200.

    python3 benchmarks/step_deepseek_tp8_rank.py --out DIR [--commit SHA] [--layers 61] [--deadline-s 420]
    # DIR/h200-step-deepseek-v3-tp8-rank.csv and DIR/step-deepseek-run.log;
    # then, here: python benchmarks/step_deepseek_compare.py measurements/steps/h200-step-deepseek-v3-tp8-rank.csv

The layer stack at one TP-8 rank's shapes (models/deepseek-v3.yaml and DeepSeek-V3's config.json: hidden 7168;
128 / 8 = 16 heads of MLA with q_lora_rank 1536, kv_lora_rank 512, qk_rope 64, qk_nope 128, v_head 128; 3 dense
layers of ffn 18432 / 8 and 58 MoE layers of 256 experts of ffn 2048 / 8, 8 a token, one shared expert of 2048 / 8;
vocab 129280 / 8), random weights: every linear layer fp8 e4m3 with one float32 scale a 128 x 128 block (as the
checkpoint ships them); the router, lm_head and the absorbed W_UK / W_UV (kv_b dequantised at load) bf16. The
activations are bf16, quantised per token group of 128 (one float32 scale a group) before every fp8 GEMM, once a
linear layer as vLLM's apply_w8a8_block_fp8_linear takes a bf16 input (vllm/model_executor/layers/quantization/
utils/fp8_utils.py). KV: the latent 512 + 64 in bf16, paged (page 16, a random page table), one cache a layer.
No all-reduce or all-gather runs (one GPU): the TP communication is absent from every time here and is priced
separately from rooflab's collective model (benchmarks/step_deepseek_compare.py).

Per layer, in launch order (COMPONENT in brackets; our own kernels from rooflab's benchmarks, no engine code):
    fused add-RMSNorm (Triton, here)                                                        [norms_elementwise]
    MLA, absorbed decode (DeepSeek-V2 report section 2.1.2's absorption; vLLM 0.7.3 TRITON_MLA's split count):
      group quant -> q_a GEMM 7168 -> 1536; group quant -> kv_a GEMM 7168 -> 576           [quant, projections]
      RMSNorm of q_c and of the latent's 512                                               [norms_elementwise]
      group quant -> q_b GEMM 1536 -> 16 x 192                                              [quant, projections]
      bmm q_nope [16, B, 128] x W_UK [16, 128, 512] (bf16), copy into q [B, 16, 576]        [absorb]
      RoPE of q_pe and k_pe (neox halves) and the latent's write into its page slot          [norms_elementwise]
      split-KV MLA decode, 4 splits, BLOCK_N 32, + merge (benchmarks/h200_early2025_decode_kernels.py)  [attention]
      bmm o_latent [16, B, 512] x W_UV^T [16, 512, 128] (bf16), copy to [B, 2048]          [absorb]
      group quant -> o GEMM 2048 -> 7168                                                     [quant, projections]
    fused add-RMSNorm                                                                        [norms_elementwise]
    dense layer: group quant -> gate_up GEMM 7168 -> 4608 -> SiLU-and-mul -> quant -> down GEMM 2304 -> 7168
                                                                          [quant, dense_mlp, norms_elementwise]
    MoE layer:
      router GEMM 7168 -> 256, bf16 (torch.mm)                                               [router_gemm]
      DeepSeek-V3's noaux_tc routing in torch ops (modeling_deepseek.py MoEGate; config n_group 8, topk_group 4):
        sigmoid, + e_score_correction_bias, top-2 sum a group, top-4 groups, mask, top-8, weights the unbiased
        sigmoid scores renormalised                                                          [routing]
      align: the pairs sorted by expert, each expert's run padded to BLOCK_M (torch ops, capturable; the engines'
        moe_align_block_size is one CUDA kernel, so this component is an upper bound on theirs)   [align]
      group quant -> fused block-fp8 MoE gate_up (TOP_K rows) -> SiLU-and-mul -> quant -> fused MoE down (times
        the routing weight) (h200_early2025_decode_kernels.moe_block_fp8 at the shipped H200 config nearest B)
                                                                           [quant, experts, norms_elementwise]
      sum over the 8 pairs of a token                                                        [norms_elementwise]
      shared expert: quant -> gate_up GEMM 7168 -> 512 -> SiLU-and-mul -> quant -> down GEMM 256 -> 7168
                                                                     [quant, shared_experts, norms_elementwise]
      routed x 2.5 (routed_scaling_factor) + shared                                          [norms_elementwise]
then the final add-RMSNorm and the lm_head GEMM, bf16, 7168 -> 16160 (the rank's vocab shard)   [logits]
Dense fp8 GEMMs (DenseGemm, the CSV's dense_gemm column; both run by default): triton_default,
benchmarks/dense_fp8_block_gemm.block_fp8_mm (the engines' w8a8 block algorithm at its default config BM 64 BN 128
BK 128 GROUP_M 32, 4 warps, 2 stages: few CTAs at decode's m, so about 60 us a K=7168 GEMM whatever n); or
scaled_mm_block, torch._scaled_mm with blockwise scales (the kernel rooflab's GEMM fit prices). Group quant:
dense_fp8_block_gemm.group_quant.

Timings (CUDA events, medians): `graph` the whole step captured in one CUDA graph and replayed; `eager` the same
launches issued from Python; `graph_isolated` per component, a CUDA graph of only that component's launches over
all layers (reading what the last whole step left in the buffers), so the GPU time of each component without the
host; `eager_instrumented` per component, an eager step with an event at every component boundary (host issue time
between kernels charged to the component issuing them). Numerics (one small case, batch 4 x context 64): the MoE
layer against a float32 reference of the dequantised weights (routed + shared), the fused gate_up against its own
quantised inputs, the MLA attention kernel against float32 softmax attention, and the whole absorbed MLA block
against the un-absorbed float32 form (kv_b up-projection of the cache).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import math
import statistics
import sys
import time
import traceback
from enum import Enum
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dense_fp8_block_gemm import block_fp8_mm, dequant, group_quant, smi  # noqa: E402
from h200_early2025_decode_kernels import ENGINE_MOE, mla_merge, mla_split, moe_block_fp8  # noqa: E402

TP = 8
HIDDEN, HEADS, Q_LORA, LORA, ROPE, NOPE, V_HEAD = 7168, 128 // TP, 1536, 512, 64, 128, 128
DENSE_FFN, EXPERT_FFN, EXPERTS, TOP_K, N_GROUP, TOPK_GROUP = 18432 // TP, 2048 // TP, 256, 8, 8, 4
ROUTED_SCALE, VOCAB, DENSE_LAYERS, LAYERS = 2.5, 129280 // TP, 3, 61
PAGE, SPLITS, GROUP, EPS = 16, 4, 128, 1e-6
F8, BF = torch.float8_e4m3fn, torch.bfloat16
CASES = ((1, 270), (1, 3600), (32, 3600), (64, 3600), (100, 3500), (64, 270))
REPEATS, EAGER_REPEATS, WARM = 20, 5, 3
GEMM_CFG = dict(BM=64, BN=128, BK=128, GROUP_M=32, num_warps=4, num_stages=2)
COLUMNS = ("model", "shard", "dense_gemm", "align", "batch", "context", "layers", "timing", "component", "seconds", "seconds_p10",
           "seconds_p90", "repeats", "launches", "note")


class DenseGemm(str, Enum):
    """How the dense block-fp8 GEMMs run: our Triton w8a8 block kernel at the engines' default config, or
    torch._scaled_mm with blockwise scales (cuBLASLt; what rooflab's torch_scaled_mm_block fit prices) wherever
    k / 128 is a multiple of 4 (dense_fp8_block_gemm: cuBLASLt computed wrong results otherwise), the Triton
    kernel elsewhere (the shared expert's down, k 256, and the dense down, k 2304)."""

    triton_default = "triton_default"
    scaled_mm_block = "scaled_mm_block"


class Align(str, Enum):
    """How the token-expert pairs are sorted by expert and padded to BLOCK_M: torch ops (about 12 launches), or one
    Triton program (moe_align below: the one-launch algorithm of the engines' moe_align_block_size CUDA kernel,
    counts by atomics, padded prefix sums, scatter; written here, no code copied)."""

    torch_ops = "torch_ops"
    triton_one_kernel = "triton_one_kernel"


#: the (dense GEMM, align) variants a default run measures
VARIANTS = ((DenseGemm.triton_default, Align.torch_ops), (DenseGemm.triton_default, Align.triton_one_kernel),
            (DenseGemm.scaled_mm_block, Align.triton_one_kernel))


class Component(str, Enum):
    """The parts the step is timed in (module docstring)."""

    norms_elementwise = "norms_elementwise"
    quant = "quant"
    projections = "projections"
    absorb = "absorb"
    attention = "attention"
    router_gemm = "router_gemm"
    routing = "routing"
    align = "align"
    experts = "experts"
    shared_experts = "shared_experts"
    dense_mlp = "dense_mlp"
    logits = "logits"


C = Component


@triton.jit
def add_rms_norm(x, res, w, y, n, s_x, s_r, s_y, eps, HAS_RES: tl.constexpr, BLOCK: tl.constexpr):
    """One row: res += x (HAS_RES), y = rms_norm(res or x) * w (vLLM's fused_add_rms_norm semantics)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * s_x + cols, mask=m, other=0.0).to(tl.float32)
    if HAS_RES:
        v += tl.load(res + row * s_r + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(res + row * s_r + cols, v.to(res.dtype.element_ty), mask=m)
    inv = tl.rsqrt(tl.sum(v * v, 0) / n + eps)
    g = tl.load(w + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(y + row * s_y + cols, (v * inv * g).to(y.dtype.element_ty), mask=m)


@triton.jit
def silu_mul(x, y, f, s_x, s_y, BLOCK: tl.constexpr):
    """One row: y = silu(x[:f]) * x[f:2f]."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < f
    g = tl.load(x + row * s_x + cols, mask=m, other=0.0).to(tl.float32)
    u = tl.load(x + row * s_x + f + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(y + row * s_y + cols, (g / (1.0 + tl.exp(-g)) * u).to(y.dtype.element_ty), mask=m)


@triton.jit
def rope_cache(qb, s_qb, qf, s_qf, kvn, s_kvn, kva, s_kva, cache, slots, cos, sin,
               H: tl.constexpr, QK: tl.constexpr, NOPE_D: tl.constexpr, DL: tl.constexpr, DR: tl.constexpr):
    """One token: RoPE (neox halves) of its 16 q_pe heads into q[:, :, DL:] and of k_pe, and the latent
    [normed kv_c, roped k_pe] written into the token's cache slot."""
    b = tl.program_id(0).to(tl.int64)
    half = tl.arange(0, DR // 2)
    c = tl.load(cos + b * (DR // 2) + half)
    s = tl.load(sin + b * (DR // 2) + half)
    slot = tl.load(slots + b)
    row = cache + slot * (DL + DR)
    dl = tl.arange(0, DL)
    tl.store(row + dl, tl.load(kvn + b * s_kvn + dl))
    k1 = tl.load(kva + b * s_kva + DL + half).to(tl.float32)
    k2 = tl.load(kva + b * s_kva + DL + DR // 2 + half).to(tl.float32)
    tl.store(row + DL + half, (k1 * c - k2 * s).to(cache.dtype.element_ty))
    tl.store(row + DL + DR // 2 + half, (k2 * c + k1 * s).to(cache.dtype.element_ty))
    h = tl.arange(0, H)
    src = qb + b * s_qb + h[:, None] * QK + NOPE_D
    q1 = tl.load(src + half[None, :]).to(tl.float32)
    q2 = tl.load(src + DR // 2 + half[None, :]).to(tl.float32)
    dst = qf + b * s_qf + h[:, None] * (DL + DR) + DL
    tl.store(dst + half[None, :], (q1 * c[None, :] - q2 * s[None, :]).to(qf.dtype.element_ty))
    tl.store(dst + DR // 2 + half[None, :], (q2 * c[None, :] + q1 * s[None, :]).to(qf.dtype.element_ty))


@triton.jit
def moe_align(topk_ids, ids, eob, total, scratch, P, size, nblocks, E: tl.constexpr, BM: tl.constexpr,
              PB: tl.constexpr, CH: tl.constexpr):
    """One program: each pair's rank in its expert by atomics, the experts' runs padded to BM and prefix-summed,
    ids[start[e] + rank] = pair (sentinel P elsewhere), eob[j] = the expert of block j, total = the padded sum."""
    ex = tl.arange(0, E)
    tl.store(scratch + ex, tl.zeros((E,), tl.int32))
    tl.debug_barrier()
    offs = tl.arange(0, PB)
    m = offs < P
    e = tl.load(topk_ids + offs, mask=m, other=0).to(tl.int32)
    rank = tl.atomic_add(scratch + e, tl.full((PB,), 1, tl.int32), mask=m)
    tl.debug_barrier()
    counts = tl.load(scratch + ex)
    padded = (counts + BM - 1) // BM * BM
    cum = tl.cumsum(padded, 0)
    tl.store(scratch + E + ex, cum - padded)
    tl.store(total, tl.sum(padded, 0))
    for j0 in range(0, size, CH):
        o = j0 + tl.arange(0, CH)
        tl.store(ids + o, tl.zeros((CH,), tl.int32) + P, mask=o < size)
    for b0 in range(0, nblocks, 32):
        blk = b0 + tl.arange(0, 32)
        below = tl.sum((cum[None, :] <= (blk * BM)[:, None]).to(tl.int32), 1)
        tl.store(eob + blk, tl.minimum(below, E - 1), mask=blk < nblocks)
    tl.debug_barrier()
    start = tl.load(scratch + E + e, mask=m, other=0)
    tl.store(ids + start + rank, offs.to(tl.int32), mask=m)


# --- launchers ------------------------------------------------------------------------------------------------

def quant(x, q, s):
    """x bf16 [m, k] -> q fp8 [m, k], s float32 [m, k / 128] row-major."""
    m, k = x.shape
    group_quant[(m * (k // GROUP),)](x, q, s, m, k, x.stride(0), q.stride(0), s.stride(0), s.stride(1), G=GROUP,
                                     num_warps=1)


def linear(xq, xs, w, out, gemm: DenseGemm):
    """out [m, n] bf16 = block-fp8 GEMM of xq [>= m, k] (scales xs [>= m, k / 128], any strides) and
    w = (w8 [n, k], ws [n/128, k/128], wsp: ws as scale_b [k/128, n/128] with its row stride padded to 4)."""
    w8, ws, wsp = w
    m, k = out.shape[0], xq.shape[1]
    n = w8.shape[0]
    if gemm is DenseGemm.scaled_mm_block and (k // GROUP) % 4 == 0:   # xq has m padded to 4 rows, xs col-major
        out.copy_(torch._scaled_mm(xq, w8.t(), xs, wsp, out_dtype=BF)[:m])
        return
    grid = (triton.cdiv(m, GEMM_CFG["BM"]) * triton.cdiv(n, GEMM_CFG["BN"]),)
    block_fp8_mm[grid](xq, xs, w8, ws, out, m, n, k, xq.stride(0), xs.stride(0), xs.stride(1), w8.stride(0),
                       ws.stride(0), ws.stride(1), out.stride(0), **GEMM_CFG)


def rms(x, w, y, res=None):
    n = x.shape[1]
    add_rms_norm[(x.shape[0],)](x, res if res is not None else x, w, y, n, x.stride(0),
                                res.stride(0) if res is not None else 0, y.stride(0), EPS, HAS_RES=res is not None,
                                BLOCK=triton.next_power_of_2(n), num_warps=8 if n > 2048 else 4)


def act(x, y):
    f = y.shape[1]
    silu_mul[(x.shape[0],)](x, y, f, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(f), num_warps=4)


def moe_gemm(a, a_s, w, c, weights, route, top, mul, cfg):
    """The fused block-fp8 MoE GEMM over the aligned pairs (route: ids, expert_of_block, total, pairs)."""
    b8, bs = w
    ids, eob, total, pairs = route
    bm, bn, bk, gm, warps, stages = cfg
    n, k = b8.shape[1], b8.shape[2]
    grid = (triton.cdiv(ids.numel(), bm) * triton.cdiv(n, bn),)
    moe_block_fp8[grid](a, a_s, b8, bs, c, weights, ids, eob, total, n, k, ids.numel(), pairs, a.stride(0),
                        a_s.stride(0), b8.stride(0), b8.stride(1), bs.stride(0), bs.stride(1), c.stride(0),
                        TOP_K=top, MUL_W=mul, BM=bm, BN=bn, BK=bk, GROUP_M=gm, QG=GROUP, num_warps=warps,
                        num_stages=stages)


# --- weights --------------------------------------------------------------------------------------------------

def fp8_block(*shape):
    """Random fp8 e4m3 weights [..., n, k] (unit normals) with float32 128 x 128 block scales ~ k^-1/2."""
    *lead, n, k = shape
    w = torch.empty(shape, device="cuda", dtype=F8)
    flat = w.view(-1, n, k)
    for i in range(0, flat.shape[0], 32):
        flat[i:i + 32] = torch.randn(flat[i:i + 32].shape, device="cuda", dtype=BF)
    s = (torch.rand(*lead, triton.cdiv(n, GROUP), k // GROUP, device="cuda") + 0.5) * k ** -0.5
    if lead:
        return w, s
    nb, kb = s.shape
    padded = torch.zeros(nb, -(-kb // 4) * 4, device="cuda")
    padded[:, :kb] = s
    return w, s, padded[:, :kb].t()


def ones_ish(n):
    return (1 + 0.1 * torch.randn(n, device="cuda")).to(BF)


def make_weights(layers: int) -> list[dict]:
    out = []
    for i in range(layers):
        kvb8, kvbs, _ = fp8_block(HEADS * (NOPE + V_HEAD), LORA)
        kvb = dequant(kvb8, kvbs, GROUP).view(HEADS, NOPE + V_HEAD, LORA)
        L = dict(n1=ones_ish(HIDDEN), n2=ones_ish(HIDDEN), qa_norm=ones_ish(Q_LORA), kv_norm=ones_ish(LORA),
                 qa=fp8_block(Q_LORA, HIDDEN), kva=fp8_block(LORA + ROPE, HIDDEN),
                 qb=fp8_block(HEADS * (NOPE + ROPE), Q_LORA), o=fp8_block(HIDDEN, HEADS * V_HEAD),
                 wuk=kvb[:, :NOPE].to(BF).contiguous(), wuvt=kvb[:, NOPE:].transpose(1, 2).to(BF).contiguous())
        del kvb8, kvbs, kvb
        if i < DENSE_LAYERS:
            L.update(w13=fp8_block(2 * DENSE_FFN, HIDDEN), w2=fp8_block(HIDDEN, DENSE_FFN))
        else:
            L.update(gate=(torch.randn(EXPERTS, HIDDEN, device="cuda") * HIDDEN ** -0.5).to(BF),
                     bias=0.01 * torch.randn(EXPERTS, device="cuda"),
                     e13=fp8_block(EXPERTS, 2 * EXPERT_FFN, HIDDEN), e2=fp8_block(EXPERTS, HIDDEN, EXPERT_FFN),
                     s13=fp8_block(2 * EXPERT_FFN, HIDDEN), s2=fp8_block(HIDDEN, EXPERT_FFN))
        out.append(L)
    return out


# --- one case's buffers and launches --------------------------------------------------------------------------

class Case:
    """Every buffer of one (batch, context) step, and the step as a list of (Component, launch) in order."""

    def __init__(self, weights: list[dict], final: dict, batch: int, context: int, gemm: DenseGemm, align: Align):
        B, dev = batch, "cuda"
        self.batch, self.context, self.weights, self.final, self.gemm = batch, context, weights, final, gemm
        self.align = align
        pages = triton.cdiv(context, PAGE)
        P = B * TOP_K
        self.cfg = ENGINE_MOE[min(ENGINE_MOE, key=lambda m: abs(m - B))]
        bm = self.cfg[0]

        def bf(*s):
            return torch.empty(s, device=dev, dtype=BF)

        def q8(m, k):
            """A dense GEMM's quantised input: for scaled_mm_block m padded to 4 rows (zeros) and the scales
            column-major (cuBLASLt's 1 x 128 scale_a layout); row-major otherwise."""
            if gemm is DenseGemm.triton_default:
                return torch.empty(m, k, device=dev, dtype=F8), torch.empty(m, k // GROUP, device=dev)
            mp = -(-m // 4) * 4
            return torch.zeros(mp, k, device=dev, dtype=F8), torch.ones(k // GROUP, mp, device=dev).t()

        self.x0 = torch.randn(B, HIDDEN, device=dev, dtype=BF)
        self.res, self.xn, self.h = bf(B, HIDDEN), bf(B, HIDDEN), bf(B, HIDDEN)
        self.q_h, self.q_qc, self.q_o = q8(B, HIDDEN), q8(B, Q_LORA), q8(B, HEADS * V_HEAD)
        self.q_hm = torch.empty(B, HIDDEN, device=dev, dtype=F8), torch.empty(B, HIDDEN // GROUP, device=dev)
        self.q_dense, self.q_sh = q8(B, DENSE_FFN), q8(B, EXPERT_FFN)
        self.q_moe = torch.empty(P, EXPERT_FFN, device=dev, dtype=F8), torch.empty(P, EXPERT_FFN // GROUP, device=dev)
        self.qa_out, self.qa_n, self.kva_out, self.kv_n = bf(B, Q_LORA), bf(B, Q_LORA), bf(B, LORA + ROPE), bf(B, LORA)
        self.qb_out = bf(B, HEADS * (NOPE + ROPE))
        self.qlat_t, self.q_full = bf(HEADS, B, LORA), bf(B, HEADS, LORA + ROPE)
        self.mid = torch.empty(B, HEADS, SPLITS, LORA, device=dev)
        self.lse = torch.empty(B, HEADS, SPLITS, device=dev)
        self.o_lat, self.ov_t, self.o_in = bf(B, HEADS, LORA), bf(HEADS, B, V_HEAD), bf(B, HEADS * V_HEAD)
        self.router = bf(B, EXPERTS)
        self.topk_ids = torch.zeros(P, device=dev, dtype=torch.int64)
        self.topk_w = torch.zeros(P, device=dev)
        self.ones_p = torch.ones(P, device=dev, dtype=torch.int64)
        self.arange_p = torch.arange(P, device=dev)
        size = P + EXPERTS * (bm - 1)
        self.ids = torch.full((size,), P, device=dev, dtype=torch.int32)
        self.block_starts = torch.arange(triton.cdiv(size, bm), device=dev) * bm
        self.eob = torch.zeros(triton.cdiv(size, bm), device=dev, dtype=torch.int32)
        self.total = torch.zeros(1, device=dev, dtype=torch.int32)
        self.scratch = torch.zeros(2 * EXPERTS, device=dev, dtype=torch.int32)
        self.route = (self.ids, self.eob, self.total, P)
        self.out1, self.act1, self.out2 = bf(P, 2 * EXPERT_FFN), bf(P, EXPERT_FFN), bf(P, HIDDEN)
        self.routed, self.sh1, self.sh_act, self.sh2 = bf(B, HIDDEN), bf(B, 2 * EXPERT_FFN), bf(B, EXPERT_FFN), \
            bf(B, HIDDEN)
        self.d1, self.dact = bf(B, 2 * DENSE_FFN), bf(B, DENSE_FFN)
        self.logits = bf(B, VOCAB)
        self.caches, self.tables = [], []
        for _ in weights:
            self.caches.append(torch.randn(B * pages * PAGE, LORA + ROPE, device=dev, dtype=BF))
            self.tables.append(torch.randperm(B * pages, device=dev).to(torch.int32).view(B, pages).contiguous())
        self.lens = torch.full((B,), context, device=dev, dtype=torch.int32)
        self.slots = [(t[:, (context - 1) // PAGE].long() * PAGE + (context - 1) % PAGE).contiguous()
                      for t in self.tables]
        angle = (context - 1) * 10000.0 ** (-torch.arange(ROPE // 2, device=dev) / (ROPE // 2))
        self.cos = angle.cos()[None].expand(B, -1).contiguous()
        self.sin = angle.sin()[None].expand(B, -1).contiguous()
        self.scale = (NOPE + ROPE) ** -0.5
        self.ops = self._ops()

    def _attention(self, i: int, L: dict) -> list:
        B, cache, table = self.batch, self.caches[i], self.tables[i]
        qn = self.qb_out.view(B, HEADS, NOPE + ROPE)[:, :, :NOPE].transpose(0, 1)
        return [
            (C.quant, lambda: quant(self.xn, *self.q_h)),
            (C.projections, lambda: linear(*self.q_h, L["qa"], self.qa_out, self.gemm)),
            (C.quant, lambda: quant(self.xn, *self.q_h)),
            (C.projections, lambda: linear(*self.q_h, L["kva"], self.kva_out, self.gemm)),
            (C.norms_elementwise, lambda: rms(self.qa_out, L["qa_norm"], self.qa_n)),
            (C.norms_elementwise, lambda: rms(self.kva_out[:, :LORA], L["kv_norm"], self.kv_n)),
            (C.quant, lambda: quant(self.qa_n, *self.q_qc)),
            (C.projections, lambda: linear(*self.q_qc, L["qb"], self.qb_out, self.gemm)),
            (C.absorb, lambda: torch.bmm(qn, L["wuk"], out=self.qlat_t)),
            (C.absorb, lambda: self.q_full[:, :, :LORA].copy_(self.qlat_t.transpose(0, 1))),
            (C.norms_elementwise, lambda: rope_cache[(B,)](
                self.qb_out, self.qb_out.stride(0), self.q_full, self.q_full.stride(0), self.kv_n, self.kv_n.stride(0),
                self.kva_out, self.kva_out.stride(0), cache, self.slots[i], self.cos, self.sin, H=HEADS,
                QK=NOPE + ROPE, NOPE_D=NOPE, DL=LORA, DR=ROPE, num_warps=4)),
            (C.attention, lambda: mla_split[(B, 1, SPLITS)](
                self.q_full, cache, table, self.lens, self.mid, self.lse, self.scale, self.q_full.stride(0),
                self.q_full.stride(1), cache.stride(0), table.stride(0), self.mid.stride(0), self.mid.stride(1),
                self.mid.stride(2), H=HEADS, PAGE=PAGE, SPLITS=SPLITS, BN=32, BH=16, DL=LORA, DR=ROPE, num_warps=4,
                num_stages=2)),
            (C.attention, lambda: mla_merge[(B, HEADS)](
                self.mid, self.lse, self.o_lat, self.mid.stride(0), self.mid.stride(1), self.mid.stride(2), H=HEADS,
                SPLITS=SPLITS, DL=LORA, num_warps=4)),
            (C.absorb, lambda: torch.bmm(self.o_lat.transpose(0, 1), L["wuvt"], out=self.ov_t)),
            (C.absorb, lambda: self.o_in.view(B, HEADS, V_HEAD).copy_(self.ov_t.transpose(0, 1))),
            (C.quant, lambda: quant(self.o_in, *self.q_o)),
            (C.projections, lambda: linear(*self.q_o, L["o"], self.h, self.gemm)),
        ]

    def _route(self, L: dict) -> None:
        B = self.batch
        sc = self.router.float().sigmoid()
        biased = sc + L["bias"]
        grp = biased.view(B, N_GROUP, -1).topk(2, -1).values.sum(-1)
        keep = torch.zeros_like(grp).scatter_(1, grp.topk(TOPK_GROUP, -1).indices, 1.0)
        keep = keep[:, :, None].expand(B, N_GROUP, EXPERTS // N_GROUP).reshape(B, EXPERTS)
        ids = biased.masked_fill(keep == 0, float("-inf")).topk(TOP_K, -1).indices
        w = sc.gather(1, ids)
        self.topk_w.copy_((w / w.sum(-1, keepdim=True)).view(-1))
        self.topk_ids.copy_(ids.view(-1))

    def _align(self) -> None:
        bm, flat = self.cfg[0], self.topk_ids
        if self.align is Align.triton_one_kernel:
            P = flat.numel()
            moe_align[(1,)](flat, self.ids, self.eob, self.total, self.scratch, P, self.ids.numel(),
                            self.eob.numel(), E=EXPERTS, BM=bm, PB=max(16, triton.next_power_of_2(P)), CH=1024,
                            num_warps=4)
            return
        counts = torch.zeros(EXPERTS, device=flat.device, dtype=torch.int64).scatter_add_(0, flat, self.ones_p)
        padded = (counts + bm - 1) // bm * bm
        cum = padded.cumsum(0)
        order = torch.argsort(flat, stable=True)
        sorted_e = flat[order]
        rank = self.arange_p - (counts.cumsum(0) - counts)[sorted_e]
        self.ids.fill_(self.topk_ids.numel())
        self.ids.scatter_(0, (cum - padded)[sorted_e] + rank, order.to(torch.int32))
        self.eob.copy_(torch.searchsorted(cum, self.block_starts, right=True).clamp_(max=EXPERTS - 1))
        self.total.copy_(cum[-1:])

    def _moe(self, L: dict) -> list:
        B = self.batch
        return [
            (C.router_gemm, lambda: torch.mm(self.xn, L["gate"].t(), out=self.router)),
            (C.routing, lambda: self._route(L)),
            (C.align, self._align),
            (C.quant, lambda: quant(self.xn, *self.q_hm)),
            (C.experts, lambda: moe_gemm(*self.q_hm, L["e13"], self.out1, self.topk_w, self.route, TOP_K, False,
                                         self.cfg)),
            (C.norms_elementwise, lambda: act(self.out1, self.act1)),
            (C.quant, lambda: quant(self.act1, *self.q_moe)),
            (C.experts, lambda: moe_gemm(*self.q_moe, L["e2"], self.out2, self.topk_w, self.route, 1, True,
                                         self.cfg)),
            (C.norms_elementwise, lambda: torch.sum(self.out2.view(B, TOP_K, HIDDEN), 1, out=self.routed)),
            (C.quant, lambda: quant(self.xn, *self.q_h)),
            (C.shared_experts, lambda: linear(*self.q_h, L["s13"], self.sh1, self.gemm)),
            (C.norms_elementwise, lambda: act(self.sh1, self.sh_act)),
            (C.quant, lambda: quant(self.sh_act, *self.q_sh)),
            (C.shared_experts, lambda: linear(*self.q_sh, L["s2"], self.sh2, self.gemm)),
            (C.norms_elementwise, lambda: torch.add(self.sh2, self.routed, alpha=ROUTED_SCALE, out=self.h)),
        ]

    def _dense(self, L: dict) -> list:
        return [
            (C.quant, lambda: quant(self.xn, *self.q_h)),
            (C.dense_mlp, lambda: linear(*self.q_h, L["w13"], self.d1, self.gemm)),
            (C.norms_elementwise, lambda: act(self.d1, self.dact)),
            (C.quant, lambda: quant(self.dact, *self.q_dense)),
            (C.dense_mlp, lambda: linear(*self.q_dense, L["w2"], self.h, self.gemm)),
        ]

    def _ops(self) -> list:
        ops = [(C.norms_elementwise, lambda: self.res.copy_(self.x0)),
               (C.norms_elementwise, lambda: rms(self.res, self.weights[0]["n1"], self.xn))]
        for i, L in enumerate(self.weights):
            if i:
                ops.append((C.norms_elementwise, lambda L=L: rms(self.h, L["n1"], self.xn, self.res)))
            ops += self._attention(i, L)
            ops.append((C.norms_elementwise, lambda L=L: rms(self.h, L["n2"], self.xn, self.res)))
            ops += self._dense(L) if "w13" in L else self._moe(L)
        ops.append((C.norms_elementwise, lambda: rms(self.h, self.final["norm"], self.xn, self.res)))
        ops.append((C.logits, lambda: torch.mm(self.xn, self.final["lm_head"].t(), out=self.logits)))
        return ops

    def run(self, only: Component | None = None) -> None:
        for comp, fn in self.ops:
            if only is None or comp is only:
                fn()


# --- timing ---------------------------------------------------------------------------------------------------

def stats(times: list) -> tuple[float, float, float]:
    q = statistics.quantiles(times, n=10) if len(times) >= 2 else [times[0]] * 9
    return statistics.median(times), q[0], q[-1]


def graph_time(fn, repeats: int = REPEATS) -> tuple[float, float, float]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(WARM):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    del g
    return stats(times)


def eager_time(fn, repeats: int = EAGER_REPEATS) -> tuple[float, float, float]:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return stats(times)


def instrumented(case: Case, runs: int = 3) -> dict:
    """Eager step with an event at every component boundary: median seconds per component."""
    per_run = []
    for _ in range(runs):
        marks = []
        last = None
        for comp, fn in case.ops:
            if comp is not last:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                marks.append((comp, ev))
                last = comp
            fn()
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        marks.append((None, end))
        torch.cuda.synchronize()
        sums = dict.fromkeys(Component, 0.0)
        for (comp, a), (_, b) in zip(marks, marks[1:]):
            sums[comp] += a.elapsed_time(b) * 1e-3
        per_run.append(sums)
    return {c: statistics.median(r[c] for r in per_run) for c in Component}


# --- numerics -------------------------------------------------------------------------------------------------

def rel(got, ref) -> float:
    r = float((got.float() - ref).norm() / ref.norm())
    if not math.isfinite(r):
        raise RuntimeError("non-finite output (unwritten or overflow)")
    return r


def deq3(w, e):
    w8, s = w
    return dequant(w8[e], s[e], GROUP)


def check(weights: list[dict], final: dict, gemm: DenseGemm, align: Align) -> dict:
    """The small case's numerics (module docstring): relative errors."""
    out = {}
    dense, moe_i = 0, DENSE_LAYERS
    case = Case([weights[dense], weights[moe_i]], final, 4, 64, gemm, align)
    B = case.batch
    case.run()                                          # compile everything at this shape; fill the buffers
    torch.cuda.synchronize()
    # MLA, layer 0: the absorbed block from xn to o against the un-absorbed float32 form
    L = weights[dense]
    case.xn.copy_(torch.randn(B, HIDDEN, device="cuda", dtype=BF))
    case.h.fill_(float("nan"))
    for comp, fn in case._attention(0, L):
        fn()
    torch.cuda.synchronize()
    x = case.xn.float()
    qc = x @ dequant(*L["qa"][:2], GROUP).t()
    qc = qc * torch.rsqrt(qc.pow(2).mean(-1, keepdim=True) + EPS) * L["qa_norm"].float()
    kv = x @ dequant(*L["kva"][:2], GROUP).t()
    kvc = kv[:, :LORA] * torch.rsqrt(kv[:, :LORA].pow(2).mean(-1, keepdim=True) + EPS) * L["kv_norm"].float()
    q = (qc @ dequant(*L["qb"][:2], GROUP).t()).view(B, HEADS, NOPE + ROPE)

    def rope(t):
        a, b = t[..., :ROPE // 2], t[..., ROPE // 2:]
        c, s = case.cos[0], case.sin[0]
        return torch.cat([a * c - b * s, b * c + a * s], -1)

    kpe, qpe = rope(kv[:, LORA:]), rope(q[:, :, NOPE:])
    wuk, wuv = L["wuk"].float(), L["wuvt"].float().transpose(1, 2)          # [16, 128, 512] each
    cache, table = case.caches[0].float(), case.tables[0]
    o = torch.empty(B, HEADS * V_HEAD, device="cuda")
    att_ref = torch.empty(B, HEADS, LORA, device="cuda")
    new_latent = torch.cat([kvc, kpe], -1)
    for b in range(B):
        slots = (table[b].long()[:, None] * PAGE + torch.arange(PAGE, device="cuda")).flatten()[:case.context]
        lat = cache[slots].clone()
        lat[-1] = new_latent[b]
        k_nope = torch.einsum("td,hnd->htn", lat[:, :LORA], wuk)
        v = torch.einsum("td,hnd->htn", lat[:, :LORA], wuv)
        s = (torch.einsum("hn,htn->ht", q[b, :, :NOPE], k_nope) + qpe[b] @ lat[:, LORA:].t()) * case.scale
        o[b] = (torch.softmax(s, -1)[:, None, :] @ v).flatten()
        qf = case.q_full[b].float()
        att_ref[b] = torch.softmax(qf @ lat.t() * case.scale, -1) @ lat[:, :LORA]
        out["mla_cache_write_rel_err"] = max(out.get("mla_cache_write_rel_err", 0.0),
                                             rel(case.caches[0][slots[-1]], new_latent[b]))
    out["mla_attention_kernel_rel_err"] = rel(case.o_lat, att_ref)
    out["mla_block_vs_unabsorbed_fp32_rel_err"] = rel(case.h, o @ dequant(*L["o"][:2], GROUP).t())
    # MoE, the first MoE layer: routed + shared against float32 of the dequantised weights
    L = weights[moe_i]
    case.xn.copy_(torch.randn(B, HIDDEN, device="cuda", dtype=BF))
    case.h.fill_(float("nan"))
    case.out1.fill_(float("nan"))
    for comp, fn in case._moe(L):
        fn()
    torch.cuda.synchronize()
    if align is Align.triton_one_kernel:                 # the one-kernel align against the torch ops' layout
        mine = case.ids.clone(), case.eob.clone(), case.total.clone()
        case.align = Align.torch_ops
        case._align()
        case.align = align
        bm = case.cfg[0]
        blocks = int(case.total) // bm
        out["align_same_blocks_as_torch_ops"] = bool(
            torch.equal(mine[2], case.total) and torch.equal(mine[1][:blocks], case.eob[:blocks])
            and torch.equal(mine[0][:blocks * bm].view(blocks, bm).sort(1).values,
                            case.ids[:blocks * bm].view(blocks, bm).sort(1).values))
    x = case.xn.float()
    logits = x @ L["gate"].float().t()
    sc = logits.sigmoid()
    biased = sc + L["bias"]
    grp = biased.view(B, N_GROUP, -1).topk(2, -1).values.sum(-1)
    keep = torch.zeros_like(grp).scatter_(1, grp.topk(TOPK_GROUP, -1).indices, 1.0).repeat_interleave(
        EXPERTS // N_GROUP, 1)
    ids_ref = biased.masked_fill(keep == 0, float("-inf")).topk(TOP_K, -1).indices
    ids = case.topk_ids.view(B, TOP_K)
    out["moe_routing_same_experts"] = f"{sum(set(a.tolist()) == set(b.tolist()) for a, b in zip(ids, ids_ref))}/{B}"
    wts = case.topk_w.view(B, TOP_K)
    ref = torch.zeros(B, HIDDEN, device="cuda")
    xq = dequant(case.q_hm[0], case.q_hm[1], 1)
    g_err = []
    for b in range(B):
        for j in range(TOP_K):
            e = int(ids[b, j])
            w13, w2 = deq3(L["e13"], e), deq3(L["e2"], e)
            h1 = x[b] @ w13.t()
            ref[b] += wts[b, j] * ((F.silu(h1[:EXPERT_FFN]) * h1[EXPERT_FFN:]) @ w2.t())
            g_err.append((case.out1[b * TOP_K + j].float(), xq[b] @ w13.t()))
    h1 = x @ dequant(*L["s13"][:2], GROUP).t()
    shared = (F.silu(h1[:, :EXPERT_FFN]) * h1[:, EXPERT_FFN:]) @ dequant(*L["s2"][:2], GROUP).t()
    out["moe_layer_vs_fp32_rel_err"] = rel(case.h, ROUTED_SCALE * ref + shared)
    out["moe_gate_up_vs_own_quantised_input_rel_err"] = rel(torch.stack([g for g, _ in g_err]),
                                                            torch.stack([r for _, r in g_err]))
    out["moe_routing_weights_rel_err"] = rel(wts, sc.gather(1, ids) / sc.gather(1, ids).sum(-1, keepdim=True))
    del case
    gc.collect()
    torch.cuda.empty_cache()
    return {k: (f"{v:.3e}" if isinstance(v, float) else v) for k, v in out.items()}


# --- main -----------------------------------------------------------------------------------------------------

def write(path: Path, meta: dict, rows: list) -> None:
    with open(path, "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fh.write(",".join(str(r.get(c, "")) for c in COLUMNS) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--layers", type=int, default=LAYERS, help="layers built (3 dense, the rest MoE); 61 = the model")
    p.add_argument("--deadline-s", type=float, default=420.0, help="no case starts after this many seconds")
    p.add_argument("--case", action="append", default=None, help="BxC, e.g. 32x3600 (default: CASES)")
    p.add_argument("--variant", action="append", default=None, metavar="GEMM:ALIGN",
                   help="a DenseGemm:Align pair, e.g. scaled_mm_block:triton_one_kernel (default: VARIANTS)")
    p.add_argument("--strict", action="store_true", help="exit 1 when the check or any case failed (a smoke run)")
    args = p.parse_args()
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    log = open(args.out / "step-deepseek-run.log", "a")

    def say(msg: str) -> None:
        line = f"[{time.time() - start:7.1f} s] {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    torch.manual_seed(0)
    cases = [tuple(int(v) for v in c.split("x")) for c in args.case] if args.case else list(CASES)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": args.commit,
            "command": " ".join(["python3", *sys.argv]),
            "driver_maxsm_maxmem_power": smi("driver_version,clocks.max.sm,clocks.max.mem,power.limit"),
            "clocks_sm_mem_temp_power_at_start": smi("clocks.sm,clocks.mem,temperature.gpu,power.draw"),
            "model": "deepseek-v3", "shard": f"one TP-{TP} rank (16 heads, experts ffn 256, shared ffn 256, dense "
                                              f"ffn 2304, vocab 16160)",
            "layers": f"{args.layers} ({min(args.layers, DENSE_LAYERS)} dense + {max(0, args.layers - DENSE_LAYERS)} "
                      "MoE)" + ("" if args.layers == LAYERS else f"; the model has {LAYERS}: scale per layer type"),
            "weights": "random; linear layers fp8 e4m3 + float32 128x128 block scales; router, lm_head, W_UK/W_UV "
                       "bf16; activations bf16, per-token-group (128) fp8 quantisation before each fp8 GEMM, once "
                       "a linear layer",
            "communication": "absent: one GPU, no all-reduce (attention, MLP) or logits all-gather; price it "
                             "separately (benchmarks/step_deepseek_compare.py)",
            "kernels": "dense fp8 (column dense_gemm, DenseGemm): triton_default dense_fp8_block_gemm.block_fp8_mm "
                       "BM 64 BN 128 BK 128 GROUP_M 32 w4 s2 everywhere; scaled_mm_block torch._scaled_mm blockwise "
                       "(m padded to 4, scale_b row stride padded) where k/128 % 4 == 0, block_fp8_mm elsewhere; "
                       "quant: dense_fp8_block_gemm.group_quant; experts: h200_early2025_decode_kernels."
                       "moe_block_fp8 at ENGINE_MOE's nearest key; MLA: mla_split (4 splits, BLOCK_N 32, page 16) + "
                       "mla_merge; norms/SiLU/RoPE+cache: Triton kernels in this script; routing: torch ops; align: column "
                       "align (Align: torch ops, or the one-program Triton moe_align)",
            "routing": "DeepSeek-V3 noaux_tc (sigmoid + correction bias, 8 groups, top-4 groups, top-8), "
                       "renormalised, routed_scaling_factor 2.5 on the routed sum",
            "timings": "graph: whole step, one CUDA graph, median of 20 replays after 3; eager: the same launches "
                       "from Python, median of 5; graph_isolated: one component's launches over all layers in one "
                       "graph; eager_instrumented: events at component boundaries, median of 3"}
    rows: list = []
    csv = args.out / "h200-step-deepseek-v3-tp8-rank.csv"
    t0 = time.time()
    weights = make_weights(args.layers)
    final = dict(norm=ones_ish(HIDDEN), lm_head=(torch.randn(VOCAB, HIDDEN, device="cuda") * HIDDEN ** -0.5).to(BF))
    torch.cuda.synchronize()
    meta["weights_gib"] = f"{torch.cuda.memory_allocated() / 2 ** 30:.2f}"
    say(f"weights built in {time.time() - t0:.1f} s, {meta['weights_gib']} GiB")
    variants = [(DenseGemm(v.split(":")[0]), Align(v.split(":")[1])) for v in args.variant] if args.variant \
        else list(VARIANTS)
    for gemm, align in variants:
        try:
            t0 = time.time()
            got = check(weights, final, gemm, align)
            meta.update({f"check {gemm.value}:{align.value} {k}": v for k, v in got.items()})
            say(f"numerics ({gemm.value}:{align.value}) checked in {time.time() - t0:.1f} s: "
                + "; ".join(f"{k} {v}" for k, v in got.items()))
        except Exception as exc:                               # noqa: BLE001 (recorded; the timings still run)
            meta[f"check_failed {gemm.value}:{align.value}"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            say(f"check failed: {meta[f'check_failed {gemm.value}:{align.value}']}\n{traceback.format_exc()}")
    write(csv, meta, rows)
    summary = []
    for gemm, align, batch, context in [(g, a, b, c) for g, a in variants for b, c in cases]:
        if time.time() - start > args.deadline_s:
            meta.setdefault("skipped", "")
            meta["skipped"] += f"{gemm.value}:{align.value} {batch}x{context} "
            continue
        try:
            t0 = time.time()
            case = Case(weights, final, batch, context, gemm, align)
            case.run()
            torch.cuda.synchronize()
            base = dict(model="deepseek-v3", shard="tp8_rank", dense_gemm=gemm.value, align=align.value,
                        batch=batch, context=context, layers=args.layers)
            launches = {c: sum(1 for comp, _ in case.ops if comp is c) for c in Component}
            g = graph_time(case.run)
            rows.append(dict(base, timing="graph", component="step", seconds=f"{g[0]:.6e}",
                             seconds_p10=f"{g[1]:.6e}", seconds_p90=f"{g[2]:.6e}", repeats=REPEATS,
                             launches=len(case.ops), note=f"moe config {case.cfg}"))
            finite = bool(torch.isfinite(case.logits).all())
            e = eager_time(case.run)
            rows.append(dict(base, timing="eager", component="step", seconds=f"{e[0]:.6e}",
                             seconds_p10=f"{e[1]:.6e}", seconds_p90=f"{e[2]:.6e}", repeats=EAGER_REPEATS,
                             launches=len(case.ops), note=f"logits finite {finite}"))
            iso = {}
            for comp in Component:
                t = graph_time(lambda comp=comp: case.run(comp), repeats=10)
                iso[comp] = t[0]
                rows.append(dict(base, timing="graph_isolated", component=comp.value, seconds=f"{t[0]:.6e}",
                                 seconds_p10=f"{t[1]:.6e}", seconds_p90=f"{t[2]:.6e}", repeats=10,
                                 launches=launches[comp]))
            ins = instrumented(case)
            for comp in Component:
                rows.append(dict(base, timing="eager_instrumented", component=comp.value,
                                 seconds=f"{ins[comp]:.6e}", repeats=3, launches=launches[comp]))
            mem = torch.cuda.max_memory_allocated() / 2 ** 30
            say(f"{gemm.value}:{align.value} {batch}x{context}: graph {g[0] * 1e3:.3f} ms (p10 {g[1] * 1e3:.3f}, p90 {g[2] * 1e3:.3f}), eager "
                f"{e[0] * 1e3:.3f} ms, isolated sum {sum(iso.values()) * 1e3:.3f} ms, logits finite {finite}, "
                f"peak {mem:.1f} GiB, {time.time() - t0:.1f} s")
            summary.append((f"{gemm.value[:6]}:{align.value[:6]}", batch, context, g[0], e[0], iso))
            del case
        except Exception as exc:                               # noqa: BLE001 (one case's failure leaves the rest)
            meta[f"failed {gemm.value}:{align.value} {batch}x{context}"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            say(f"{batch}x{context} failed: {meta[f'failed {gemm.value}:{align.value} {batch}x{context}']}\n{traceback.format_exc()}")
        case = None                                            # the ops' closures hold the case: a cycle
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        write(csv, meta, rows)
    meta["clocks_sm_mem_temp_power_at_end"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    meta["wall_s"] = f"{time.time() - start:.1f}"
    write(csv, meta, rows)
    for key, value in meta.items():
        if key.startswith(("check", "failed", "clocks", "driver", "skipped")):
            print(f"# {key}: {value}")
    names = [c for c in Component]
    print(f"{'variant':13} {'B':>4} {'ctx':>5} {'graph':>8} {'eager':>8} " + " ".join(f"{c.value[:9]:>9}" for c in names))
    for var, batch, context, gs, es, iso in summary:
        print(f"{var:13} {batch:>4} {context:>5} {gs * 1e3:8.3f} {es * 1e3:8.3f} "
              + " ".join(f"{iso[c] * 1e3:9.3f}" for c in names))
    if args.strict and any(k.startswith(("failed", "check_failed")) for k in meta):
        sys.exit(1)


if __name__ == "__main__":
    main()
