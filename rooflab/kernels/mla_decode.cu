// MLA decode (multi-head latent attention, absorbed form) over a paged latent cache, mma.sync.
//
// q [B, q_len, h, 576] (T: fp16 / bf16; queries projected into the latent space: 512 + 64 rope);
// cache [num_pages, 64, 576] of KV (T, or rl::e4m3 with one scale for the whole tensor); block_table
// int32 [B, bt_stride]; context_lens int32 [B]. Every head attends over the same cached latents c_j,
// and the values are their first 512 elements: o = softmax(scale q . c_j) c_j[:512]. The q_len new
// tokens are the last of the context: token t sees keys j <= ctx - q_len + t.
// SPLIT = false: o (T) [B, q_len, h, 512] and, if out_lse is not null, lse fp32 [B, q_len, h].
// SPLIT = true: split z of S = gridDim.z covers whole pages [z * span, (z + 1) * span) of the context
// (span = ceil(pages / S) * 64) and writes fp32 o_part [S, B, q_len, h, 512] and lse_part [S, B, q_len, h].
//
// One CTA per (row chunk, sequence, split): the rows are the q_len x h queries of a sequence
// (row r = t * h + head, contiguous in q), 16 MT of them a CTA, so each latent page is read once
// for all of them. 8 warps. Per 64-key tile (one page; two stages by cp.async, all threads copying,
// tile j + 2 issued as soon as tile j's stage is free, so two tiles are in flight during each wait):
//   S = Q K^T   warps tile the [16 MT rows x 64 keys] scores: NRG row groups of WR m-tiles by NKG key
//               groups of 8 WN keys (WR x WN warp tiles, so each ldmatrix feeds more than one mma);
//               Q in registers for MT = 1, else read from shared memory; K is the latent tile (36 k-steps)
//   softmax     row maxima and sums of each key group meet in shared memory; every warp follows the
//               same running max for the rows it needs (same inputs, same order: the same floats);
//               P goes to shared memory as T
//   O += P V    each warp owns 64 of the 512 value columns for all 16 MT rows; V is the same latent
//               tile read transposed (ldmatrix.trans), P the A operand
// fp8 cache: the e4m3 bytes land in a staging buffer (two stages) and are widened once into the 16-bit
// tile (exact), so the mma part is the 16-bit kernel's; the scale is folded into scale_log2 (scores)
// by the launcher and into the final normalisation (values).
#include "common.cuh"
using namespace rl;

namespace mla {
constexpr int DL = 576, DV = 512, BN = 64, NW = 8;
constexpr int ROW_BYTES = DL * 2;                        // a latent row in the 16-bit tile
constexpr int TILE_BYTES = BN * ROW_BYTES;               // 72 KiB
constexpr int CHUNKS = ROW_BYTES / 16;                   // 72 16-byte chunks a row
constexpr int KSTEPS = DL / 16;                          // 36
constexpr int COLS = DV / NW;                            // value columns a warp owns

// Warp tiling of S by row tiles MT: (WR m-tiles, WN n-tiles of 8 keys) a warp.
template <int MT> struct Tiling;
template <> struct Tiling<1> { static constexpr int WR = 1, WN = 1; };
template <> struct Tiling<2> { static constexpr int WR = 1, WN = 2; };
template <> struct Tiling<4> { static constexpr int WR = 2, WN = 2; };
// Shared memory (mla.py's mla_smem_bytes): Q [16 MT x 576], two 64-key tiles, P [16 MT x 64] and the
// key groups' row maxima and sums, fp32 [NKG][16 MT] each.
}  // namespace mla

template <typename T, typename KV, int MT, bool SPLIT>
__global__ void __launch_bounds__(256, 1)
mla_decode(const T* __restrict__ q, const KV* __restrict__ cache, const int* __restrict__ block_table,
           int bt_stride, const int* __restrict__ context_lens, void* __restrict__ out,
           float* __restrict__ out_lse, int num_heads, int q_len, float scale_log2, float v_scale)
{
    using namespace mla;
    constexpr bool FP8 = sizeof(KV) == 1;
    constexpr int ROWS = 16 * MT;
    constexpr int WR = Tiling<MT>::WR, WN = Tiling<MT>::WN;
    constexpr int NRG = MT / WR, NKG = NW / NRG;          // row groups x key groups = 8 warps
    static_assert(NKG * 8 * WN == BN, "the key groups cover the tile");

    extern __shared__ __align__(128) unsigned char smem[];
    const u32 sQ = smem_u32(smem);
    const u32 sKV = sQ + ROWS * ROW_BYTES;                 // 16-bit: 2 stages; fp8: 2 byte stages + 1 tile
    const u32 sP = sKV + 2 * TILE_BYTES;                   // [ROWS x 64] T, swizzled
    float* red_max = reinterpret_cast<float*>(smem + ROWS * ROW_BYTES + 2 * TILE_BYTES + ROWS * BN * 2);
    float* red_sum = red_max + NKG * ROWS;                 // [NKG][ROWS] each

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int rg = warp % NRG, kg = warp / NRG;            // S tile: rows rg * 16 WR .., keys kg * 8 WN ..
    const int b = blockIdx.y, split = blockIdx.z, batch = gridDim.y, num_splits = gridDim.z;
    const int rows_total = q_len * num_heads;
    const int row0 = blockIdx.x * ROWS;
    const int nrows = min(ROWS, rows_total - row0);

    // ---- key range [k_begin, k_end) and tiles (each one page of 64 keys)
    const int ctx = context_lens[b];
    const rl::KeyRange keys = rl::split_keys<SPLIT>(ctx, split, num_splits, BN);
    const int k_begin = keys.begin, k_end = keys.end, n_tiles = keys.tiles(BN);
    const int pos_first = ctx - q_len;                    // key position of token 0
    const int* bt = block_table + (i64)b * bt_stride;

    // ---- Q tile: rows row0 .. row0 + ROWS of q viewed as [B * q_len * h, 576] (zeros past nrows)
    {
        const T* qb = q + ((i64)b * rows_total + row0) * DL;
        for (int i = tid; i < ROWS * CHUNKS; i += 256) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            cp_async16(sQ + swz<DL>(r, c), qb + (i64)r * DL + c * 8, r < nrows);
        }
    }
    auto load_tile = [&](int j, int stage) {              // tile j -> its stage (bytes for fp8)
        const int key0 = k_begin + j * BN;
        const KV* src = cache + (i64)bt[key0 / BN] * BN * DL;
        if constexpr (FP8) {
            const u32 dst = sKV + stage * (TILE_BYTES / 2);
            for (int i = tid; i < BN * DL / 16; i += 256) {
                const int r = i / (DL / 16);
                cp_async16(dst + i * 16, src + i * 16, key0 + r < k_end);
            }
        } else {
            const u32 dst = sKV + stage * TILE_BYTES;
#pragma unroll 2
            for (int i = tid; i < BN * CHUNKS; i += 256) {
                const int r = i / CHUNKS, c = i % CHUNKS;
                cp_async16(dst + swz<DL>(r, c), src + (i64)r * DL + c * 8, key0 + r < k_end);
            }
        }
    };
    // Two tiles in flight from the start; tile j + 2 is issued as soon as tile j's stage is free (below),
    // so a wait for tile j + 1 always has the next one in flight behind it.
    if (n_tiles > 0) load_tile(0, 0);
    cp_async_commit();                                    // group: Q and tile 0
    if (n_tiles > 1) load_tile(1, 1);
    cp_async_commit();                                    // group: tile 1 (maybe empty)

    // ---- row states. S side: this thread's rows rg * 16 WR + 16 wr + g + 8 hh; O side: 16 mt + g + 8 hh.
    float m_s[WR][2];
    int pos_s[WR][2];
#pragma unroll
    for (int wr = 0; wr < WR; ++wr)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            m_s[wr][hh] = -RL_INF;
            pos_s[wr][hh] = pos_first + (row0 + (rg * WR + wr) * 16 + g + 8 * hh) / num_heads;
        }
    constexpr int OT = COLS / 8;                          // 8 n-tiles of O a warp
    float o_acc[MT][OT][4];
    OnlineState st[MT][2];
    init_softmax_state(o_acc, st);

    const int hi_min = min(k_end - 1, pos_first);         // no key up to it needs a mask

    // Q in registers when one row tile a warp reads it every tile (MT = 1: 36 x 4 registers)
    constexpr bool Q_IN_REGS = MT == 1;
    u32 qf[Q_IN_REGS ? KSTEPS : 1][4];
    if (Q_IN_REGS) {
        cp_async_wait<1>();                               // Q (with tile 0) has landed
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk)
            ldsm_x4(qf[Q_IN_REGS ? kk : 0], sQ + swz<DL>(lane & 15, 2 * kk + (lane >> 4)));
    }

    for (int j = 0; j < n_tiles; ++j) {
        cp_async_wait<1>();                               // tile j is in (j + 1 may still be coming)
        __syncthreads();                                  // (A) ... and visible to every thread
        const u32 kb = FP8 ? sKV + TILE_BYTES : sKV + (j & 1) * TILE_BYTES;
        if constexpr (FP8) {                              // widen the byte tile j into the 16-bit tile
            const unsigned char* bytes = smem + ROWS * ROW_BYTES + (j & 1) * (TILE_BYTES / 2);
            unsigned char* tile = smem + ROWS * ROW_BYTES + TILE_BYTES;
            for (int i = tid; i < BN * DL / 16; i += 256) {
                const int r = i / (DL / 16), c = i % (DL / 16);   // 16 bytes = elements 16c .. 16c + 15
                const uint4 x = *reinterpret_cast<const uint4*>(bytes + i * 16);
                uint4 lo, hi;
                widen_e4m3x4<T>(x.x, lo.x, lo.y);
                widen_e4m3x4<T>(x.y, lo.z, lo.w);
                widen_e4m3x4<T>(x.z, hi.x, hi.y);
                widen_e4m3x4<T>(x.w, hi.z, hi.w);
                *reinterpret_cast<uint4*>(tile + swz<DL>(r, 2 * c)) = lo;
                *reinterpret_cast<uint4*>(tile + swz<DL>(r, 2 * c + 1)) = hi;
            }
            __syncthreads();                              // the byte stage is free: tile j + 2 into it
            if (j + 2 < n_tiles) load_tile(j + 2, j & 1);
            cp_async_commit();
        }
        const int key0 = k_begin + j * BN;

        // ---- S = Q K^T on this warp's (16 WR rows x 8 WN keys)
        float s[WR][WN][4];
#pragma unroll
        for (int wr = 0; wr < WR; ++wr)
#pragma unroll
            for (int wn = 0; wn < WN; ++wn)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[wr][wn][e] = 0.f;
#pragma unroll (Q_IN_REGS ? KSTEPS / 2 : 2)
        for (int kp = 0; kp < KSTEPS / 2; ++kp) {        // k-steps 2 kp, 2 kp + 1
            u32 a[WR][2][4];
#pragma unroll
            for (int wr = 0; wr < WR; ++wr)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    if (Q_IN_REGS) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) a[wr][h][e] = qf[Q_IN_REGS ? 2 * kp + h : 0][e];
                    } else {
                        ldsm_x4(a[wr][h], sQ + swz<DL>((rg * WR + wr) * 16 + (lane & 15), 2 * (2 * kp + h) + (lane >> 4)));
                    }
                }
#pragma unroll
            for (int wn = 0; wn < WN; ++wn) {
                u32 bf[4];                                // keys 8: d 32 kp .. + 31 as (b0, b1) x 2 k-steps
                ldsm_x4(bf, kb + swz<DL>(kg * 8 * WN + wn * 8 + (lane & 7), 4 * kp + (lane >> 3)));
#pragma unroll
                for (int wr = 0; wr < WR; ++wr) {
                    mma16816<T>(s[wr][wn], a[wr][0], bf[0], bf[1]);
                    mma16816<T>(s[wr][wn], a[wr][1], bf[2], bf[3]);
                }
            }
        }
        // ---- mask: keys past k_end, and keys after a row's token (several new tokens)
        if (key0 + BN - 1 > hi_min) {
#pragma unroll
            for (int wr = 0; wr < WR; ++wr)
#pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const int hi = min(pos_s[wr][hh], k_end - 1);
#pragma unroll
                    for (int wn = 0; wn < WN; ++wn)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            if (key0 + kg * 8 * WN + wn * 8 + 2 * t4 + e > hi) s[wr][wn][2 * hh + e] = -RL_INF;
                }
        }
        // ---- row maxima of this key group -> shared memory
#pragma unroll
        for (int wr = 0; wr < WR; ++wr)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                float mx = -RL_INF;
#pragma unroll
                for (int wn = 0; wn < WN; ++wn) mx = fmaxf(mx, fmaxf(s[wr][wn][2 * hh], s[wr][wn][2 * hh + 1]));
                mx = quad_max(mx);
                if (t4 == 0) red_max[kg * ROWS + (rg * WR + wr) * 16 + g + 8 * hh] = mx;
            }
        __syncthreads();                                  // (B)
        // ---- P = 2^(x scale_log2 - m) with the running max m, its row sums, P -> shared memory
#pragma unroll
        for (int wr = 0; wr < WR; ++wr)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int row = (rg * WR + wr) * 16 + g + 8 * hh;
                float mx = -RL_INF;
#pragma unroll
                for (int k = 0; k < NKG; ++k) mx = fmaxf(mx, red_max[k * ROWS + row]);
                OnlineState tmp{m_s[wr][hh], 0.f};
                tmp.raise(mx * scale_log2);
                m_s[wr][hh] = tmp.m;
                const float shift = tmp.shift();
                float rs = 0.f;
#pragma unroll
                for (int wn = 0; wn < WN; ++wn) {
                    const float p0 = online_weight(s[wr][wn][2 * hh], scale_log2, shift);
                    const float p1 = online_weight(s[wr][wn][2 * hh + 1], scale_log2, shift);
                    rs += p0 + p1;
                    *reinterpret_cast<u32*>(smem + (sP - sQ) + swz<BN>(row, kg * WN + wn) + 4 * t4) = Num<T>::pack2(p0, p1);
                }
                rs = quad_sum(rs);
                if (t4 == 0) red_sum[kg * ROWS + row] = rs;
            }
        __syncthreads();                                  // (C)
        // ---- O rows: the same running max, the tile's sum, O *= alpha, O += P V
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                const int row = mt * 16 + g + 8 * hh;
                float mx = -RL_INF, sum = 0.f;
#pragma unroll
                for (int k = 0; k < NKG; ++k) {
                    mx = fmaxf(mx, red_max[k * ROWS + row]);
                    sum += red_sum[k * ROWS + row];
                }
                const float alpha = st[mt][hh].raise(mx * scale_log2);
                st[mt][hh].add(alpha, sum);
#pragma unroll
                for (int ot = 0; ot < OT; ++ot) {
                    o_acc[mt][ot][2 * hh] *= alpha;
                    o_acc[mt][ot][2 * hh + 1] *= alpha;
                }
            }
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) {
            u32 pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) ldsm_x4(pa[mt], sP + swz<BN>(mt * 16 + (lane & 15), 2 * ks + (lane >> 4)));
#pragma unroll
            for (int dp = 0; dp < COLS / 16; ++dp) {
                u32 bf[4];
                ldsm_x4_t(bf, kb + swz<DL>(ks * 16 + (((lane >> 3) & 1) << 3) + (lane & 7),
                                           warp * (COLS / 8) + 2 * dp + (lane >> 4)));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816<T>(o_acc[mt][2 * dp], pa[mt], bf[0], bf[1]);
                    mma16816<T>(o_acc[mt][2 * dp + 1], pa[mt], bf[2], bf[3]);
                }
            }
        }
        if constexpr (!FP8) {
            __syncthreads();                              // (D) everyone is done with stage j & 1: tile j + 2 into it
            if (j + 2 < n_tiles) load_tile(j + 2, j & 1);
            cp_async_commit();
        }
    }
    cp_async_wait<0>();

    // ---- normalise and write this warp's 64 columns of every row; warp 0 writes the LSEs
    const int col0 = warp * COLS;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int row = mt * 16 + g + 8 * hh;
            float inv, lse;
            st[mt][hh].finish(FP8 ? v_scale : 1.f, inv, lse);   // l holds whole-row sums already
            if (row >= nrows) continue;
            const i64 r = (i64)b * rows_total + row0 + row;      // [B, q_len, h] row
            if (SPLIT) {
                const i64 rs = (i64)split * batch * rows_total + r;
                float* orow = static_cast<float*>(out) + rs * DV + col0;
#pragma unroll
                for (int ot = 0; ot < OT; ++ot)
                    *reinterpret_cast<float2*>(orow + ot * 8 + 2 * t4) =
                        make_float2(o_acc[mt][ot][2 * hh] * inv, o_acc[mt][ot][2 * hh + 1] * inv);
                if (warp == 0 && t4 == 0) out_lse[rs] = lse;
            } else {
                T* orow = static_cast<T*>(out) + r * DV + col0;
#pragma unroll
                for (int ot = 0; ot < OT; ++ot)
                    *reinterpret_cast<u32*>(orow + ot * 8 + 2 * t4) =
                        Num<T>::pack2(o_acc[mt][ot][2 * hh] * inv, o_acc[mt][ot][2 * hh + 1] * inv);
                if (out_lse && warp == 0 && t4 == 0) out_lse[r] = lse;
            }
        }
}
