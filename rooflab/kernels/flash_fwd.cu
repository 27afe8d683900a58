// Flash attention forward (FlashAttention-2 structure), one CTA per (query tile, head, batch).
//
// q [B, h, Tq, D], k/v [B, h_kv, Tk, D] (contiguous, fp16 or bf16), o like q, lse fp32 [B, h, Tq].
// Query head `head` reads KV head head / group (GQA).  MASK (common.cuh): MASK_CAUSAL, query i sees
// key j iff j <= i + (Tk - Tq), i.e. queries are aligned to the end of the keys; MASK_LOCAL adds a
// sliding window and / or chunk (vis); key tiles wholly outside every row's range are not loaded.
// sinks: fp32 [h] (natural-log logits, one a query head, in the denominator only) or null.
//
// A CTA holds BM = 16 * MT * NW query rows; each of its NW warps owns 16 * MT consecutive rows
// and the full head dimension.  Per KV tile of BN = 64 keys:
//   S = Q K^T      ldmatrix + mma.sync m16n8k16, fp32 accumulators in registers
//   online softmax in registers (log2 domain, scale * log2(e) folded into one FFMA + EX2)
//   P -> fp16/bf16 in registers, fed straight back as the A operand of O += P V
// K/V tiles are double-buffered in shared memory with cp.async (the next tile loads while
// this one is used); tiles are stored with an XOR swizzle so ldmatrix is conflict-free.
// Q stays in shared memory (MT = 2) or is lifted into registers once (MT = 1).
#include "common.cuh"
using namespace rl;

template <typename T, int D, int MT, int NW, int KN, int MASK>
__global__ void __launch_bounds__(NW * 32)
flash_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
          T* __restrict__ o, float* __restrict__ lse,
          int Tq, int Tk, int num_heads, int group, float scale_log2,
          const float* __restrict__ sinks, int window, int chunk)
{
    const Visibility vis{window, chunk};
    constexpr bool CAUSAL = MASK != MASK_NONE;
    constexpr int BM = 16 * MT * NW;
    constexpr int BN = 64;
    constexpr int NT = NW * 32;
    constexpr int CH = D / 8;            // 16-byte chunks per row
    constexpr int KSTEPS = D / 16;       // k-steps of Q K^T
    constexpr int NTILE = KN / 8;        // 8-key column tiles of S (one compute step: KN keys)
    static_assert(BN % KN == 0 && KN % 16 == 0, "KN must divide the 64-key tile");
    constexpr int DTILE = D / 8;         // 8-wide column tiles of O
    constexpr bool Q_IN_REGS = (MT == 1);
    constexpr int KV_TILE_BYTES = BN * D * 2;

    extern __shared__ __align__(128) unsigned char smem[];
    const u32 sQ = smem_u32(smem);
    const u32 sK = sQ + BM * D * 2;                  // 2 stages
    const u32 sV = sK + 2 * KV_TILE_BYTES;           // 2 stages

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int qtile = CAUSAL ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;  // longest first
    const int head = blockIdx.y, b = blockIdx.z;
    const int num_kv_heads = num_heads / group;
    const int kvh = head / group;
    const int q0 = qtile * BM;
    const int wrow0 = warp * 16 * MT;                // this warp's first row in the tile
    const int offset = Tk - Tq;

    const i64 q_off = ((i64)b * num_heads + head) * (i64)Tq * D;
    const i64 kv_off = ((i64)b * num_kv_heads + kvh) * (i64)Tk * D;
    const T* qg = q + q_off;
    const T* kg = k + kv_off;
    const T* vg = v + kv_off;

    int kv_end = Tk;
    if (CAUSAL) kv_end = min(Tk, q0 + BM + offset);  // no row of this tile sees past it
    const int kv_begin = vis.lo<MASK>(q0 + offset);  // nor before its first row's first key
    const int j0 = kv_begin / BN;
    const int n_tiles = kv_end > kv_begin ? (kv_end + BN - 1) / BN : j0;   // tiles j0 .. n_tiles - 1

    // Copy mapping: thread tid moves chunk tid % CH of rows tid / CH + i * RSTEP.  RSTEP is a
    // multiple of 8, so row % 8, hence the swizzle, is the same for all of a thread's chunks and
    // every address below is one base plus an immediate (few live registers).
    constexpr int RSTEP = NT / CH;
    static_assert(RSTEP % 8 == 0, "copy rows must keep row % 8 fixed");
    const int r0 = tid / CH, c0 = tid % CH;
    const u32 st_off = swz<D>(r0, c0);

    // ---- Q tile (rows past Tq are zero-filled: cp.async with 0 source bytes reads nothing)
    {
        const T* src = qg + (i64)(q0 + r0) * D + c0 * 8;
        const int rem = Tq - q0 - r0;
#pragma unroll
        for (int i = 0; i < BM / RSTEP; ++i)
            cp_async16(sQ + st_off + i * RSTEP * D * 2, src + (i64)i * RSTEP * D, i * RSTEP < rem);
    }
    cp_async_commit();

    auto load_kv = [&](int tile, int stage) {
        const int n0 = tile * BN;
        const i64 off = (i64)(n0 + r0) * D + c0 * 8;
        const T* ks = kg + off;
        const T* vs = vg + off;
        const int rem = Tk - n0 - r0;
        const u32 dst = stage * KV_TILE_BYTES + st_off;
#pragma unroll
        for (int i = 0; i < BN / RSTEP; ++i) {
            const bool ok = i * RSTEP < rem;
            cp_async16(sK + dst + i * RSTEP * D * 2, ks + (i64)i * RSTEP * D, ok);
            cp_async16(sV + dst + i * RSTEP * D * 2, vs + (i64)i * RSTEP * D, ok);
        }
    };
    if (j0 < n_tiles) load_kv(j0, 0);
    cp_async_commit();

    float o_acc[MT][DTILE][4];
    OnlineState st[MT][2];
    init_softmax_state(o_acc, st);

    // Per-lane ldmatrix offsets for k-step / d-pair 0.  Because chunk 2*kk + c equals
    // (2*kk) ^ c and the swizzle is an XOR, step kk's offset is lane_off ^ (kk << 5): one
    // register per operand instead of one per step.
    const u32 q_lane = swz<D>(wrow0 + (lane & 15), lane >> 4);
    const u32 k_lane = swz<D>(((lane >> 4) << 3) + (lane & 7), (lane >> 3) & 1);
    const u32 v_lane = swz<D>((((lane >> 3) & 1) << 3) + (lane & 7), lane >> 4);

    // ---- Q fragments into registers once (MT == 1)
    u32 qf[Q_IN_REGS ? KSTEPS : 1][4];
    cp_async_wait<1>();
    __syncthreads();
    if (Q_IN_REGS) {
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) ldsm_x4(qf[kk], sQ + (q_lane ^ (kk << 5)));
    }

    for (int j = j0; j < n_tiles; ++j) {
        const int stage = (j - j0) & 1;
        if (j + 1 < n_tiles) load_kv(j + 1, stage ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();

#pragma unroll 1
        for (int sub = 0; sub < BN / KN; ++sub) {
        const int n0 = j * BN + sub * KN;
        // a warp none of whose rows sees a key of this step has nothing to add: past its last row
        // (causal), or before its first row's first key (window, chunk)
        const int pos0 = q0 + wrow0 + offset;             // key position of the warp's first row
        const bool warp_idle = (CAUSAL && n0 > pos0 + 16 * MT - 1) ||
                               (MASK == MASK_LOCAL && n0 + KN - 1 < vis.first_key(pos0));
        if (!warp_idle) {
            const u32 kb = sK + stage * KV_TILE_BYTES + sub * KN * D * 2;
            const u32 vb = sV + stage * KV_TILE_BYTES + sub * KN * D * 2;

            // ---- S = Q K^T
            float s[MT][NTILE][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < NTILE; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                u32 a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if (Q_IN_REGS) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) a[mt][e] = qf[Q_IN_REGS ? kk : 0][e];
                    } else {
                        ldsm_x4(a[mt], sQ + mt * 16 * D * 2 + (q_lane ^ (kk << 5)));
                    }
                }
#pragma unroll
                for (int np = 0; np < KN / 16; ++np) {
                    u32 bf[4];
                    ldsm_x4(bf, kb + np * 16 * D * 2 + (k_lane ^ (kk << 5)));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(s[mt][2 * np], a[mt], bf[0], bf[1]);
                        mma16816<T>(s[mt][2 * np + 1], a[mt], bf[2], bf[3]);
                    }
                }
            }

            // ---- mask keys past Tk and, on tiles where a row's range starts or ends, keys it does not see
            const bool need_mask = (n0 + KN > Tk) || (CAUSAL && n0 + KN - 1 > pos0) ||
                                   (MASK == MASK_LOCAL && n0 < vis.first_key(pos0 + 16 * MT - 1));
            if (need_mask) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int hh = 0; hh < 2; ++hh) {
                        const int pos = pos0 + mt * 16 + g + 8 * hh;
                        const int lo = vis.lo<MASK>(pos), hi = min(vis.hi<MASK>(pos), Tk - 1);
#pragma unroll
                        for (int nt = 0; nt < NTILE; ++nt)
#pragma unroll
                            for (int e = 0; e < 2; ++e) {
                                const int key = n0 + nt * 8 + 2 * t4 + e;
                                if ((MASK == MASK_LOCAL && key < lo) || key > hi) s[mt][nt][2 * hh + e] = -RL_INF;
                            }
                    }
            }

            // ---- online softmax, per row (hh: row g or g + 8 of each 16-row m-tile)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    float mx = -RL_INF;
#pragma unroll
                    for (int nt = 0; nt < NTILE; ++nt)
                        mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hh], s[mt][nt][2 * hh + 1]));
                    mx = quad_max(mx);
                    const float alpha = st[mt][hh].raise(mx * scale_log2);
                    const float shift = st[mt][hh].shift();
                    float rs = 0.f;
#pragma unroll
                    for (int nt = 0; nt < NTILE; ++nt)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const float p = online_weight(s[mt][nt][2 * hh + e], scale_log2, shift);
                            s[mt][nt][2 * hh + e] = p;
                            rs += p;
                        }
                    st[mt][hh].add(alpha, rs);   // per-lane partial; quad-summed at the end
#pragma unroll
                    for (int dt = 0; dt < DTILE; ++dt) {
                        o_acc[mt][dt][2 * hh] *= alpha;
                        o_acc[mt][dt][2 * hh + 1] *= alpha;
                    }
                }

            // ---- O += P V, P straight from the S accumulators (C layout == A layout)
#pragma unroll
            for (int ks = 0; ks < KN / 16; ++ks) {
                u32 pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    pa[mt][0] = Num<T>::pack2(s[mt][2 * ks][0], s[mt][2 * ks][1]);
                    pa[mt][1] = Num<T>::pack2(s[mt][2 * ks][2], s[mt][2 * ks][3]);
                    pa[mt][2] = Num<T>::pack2(s[mt][2 * ks + 1][0], s[mt][2 * ks + 1][1]);
                    pa[mt][3] = Num<T>::pack2(s[mt][2 * ks + 1][2], s[mt][2 * ks + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < D / 16; ++dp) {
                    u32 bf[4];
                    ldsm_x4_t(bf, vb + ks * 16 * D * 2 + (v_lane ^ (dp << 5)));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(o_acc[mt][2 * dp], pa[mt], bf[0], bf[1]);
                        mma16816<T>(o_acc[mt][2 * dp + 1], pa[mt], bf[2], bf[3]);
                    }
                }
            }
        }
        }
        __syncthreads();   // this stage is refilled two iterations on
    }
    cp_async_wait<0>();

    // ---- normalise, write O and the natural-log LSE; a row that saw no key gets 0 and -inf
    float* lse_bh = lse ? lse + ((i64)b * num_heads + head) * Tq : nullptr;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            OnlineState row_st = st[mt][hh];
            row_st.l = quad_sum(row_st.l);
            const float num = add_sink(row_st, sinks, head);   // 1 without a sink
            float inv, lse_row;
            row_st.finish(num, inv, lse_row);
            const int row = q0 + wrow0 + mt * 16 + g + 8 * hh;
            if (row < Tq) {
                T* orow = o + q_off + (i64)row * D;
#pragma unroll
                for (int dt = 0; dt < DTILE; ++dt)
                    *reinterpret_cast<u32*>(orow + dt * 8 + 2 * t4) =
                        Num<T>::pack2(o_acc[mt][dt][2 * hh] * inv, o_acc[mt][dt][2 * hh + 1] * inv);
                if (lse_bh && t4 == 0) lse_bh[row] = lse_row;
            }
        }
}
