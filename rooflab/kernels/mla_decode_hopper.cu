// MLA decode on Hopper (sm_90a): warpgroup MMA (wgmma) form of mla_decode.cu, 16-bit latent caches.
//
// Same contract as mla_decode.cu (q [B, q_len, h, 576]; cache [num_pages, 64, 576]; o [B, q_len, h, 512] or
// fp32 split partials; lse), for a 16-bit cache. One CTA per (64-row chunk of the q_len x h rows, sequence,
// split), two warpgroups. Every warpgroup holds all 64 rows (the M of wgmma m64); per 64-key tile:
//   S = Q K^T   warpgroup w takes keys 32w .. 32w + 31: 36 wgmma m64n32k16, Q and K both from shared memory
//               (K-major, the 128-byte-swizzled tile layout of hopper.cuh, 9 column blocks of 64 elements)
//   softmax     row maxima of the two halves meet in shared memory; both warpgroups follow the same running
//               max (same inputs: the same floats), each keeps the sum over its own keys; P -> shared memory
//   O += P V    warpgroup w owns value columns 256w .. 256w + 255 (two m64n128k16 a 16-key step): P from
//               shared memory into the register A operand (ldmatrix: the m16n8k16 A layout a warp), V the
//               same latent tile read MN-major (64-column blocks 8 KiB apart, 8-key groups 1 KiB apart)
// Tiles come in by cp.async from all 256 threads, two stages, tile j + 2 issued once tile j's stage is free;
// fence.proxy.async makes each landed tile visible to the tensor cores.
#include "hopper.cuh"
using namespace rl;

namespace mlah {
constexpr int DL = 576, DV = 512, BN = 64, ROWS = 64;
constexpr u32 TILE_BYTES = BN * DL * 2;                  // 72 KiB: 9 column blocks of [64 x 128 B]
constexpr int CHUNKS = DL / 8;                           // 72 16-byte chunks a row
constexpr int KSTEPS = DL / 16;                          // 36
// Shared memory (mla.py's mla_hopper_smem_bytes): 1 KiB of alignment slack, Q and two K tiles in the
// swizzled layout, P [64 x 64] T (rows of 128 B, rl::swz), row maxima [2][64] and sums [2][64] fp32.
}  // namespace mlah

template <typename T, bool SPLIT>
__global__ void __launch_bounds__(256, 1)
mla_decode_hopper(const T* __restrict__ q, const T* __restrict__ cache, const int* __restrict__ block_table,
                  int bt_stride, const int* __restrict__ context_lens, void* __restrict__ out,
                  float* __restrict__ out_lse, int num_heads, int q_len, float scale_log2)
{
    using namespace mlah;
    extern __shared__ __align__(1024) unsigned char smem[];
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 sQ = base, sK = sQ + TILE_BYTES, sP = sK + 2 * TILE_BYTES;
    unsigned char* gbase = smem + (base - smem_u32(smem));
    float* red_max = reinterpret_cast<float*>(gbase + 3 * TILE_BYTES + ROWS * BN * 2);   // [2][64]
    float* red_sum = red_max + 2 * ROWS;                                                 // [2][64]

    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int b = blockIdx.y, split = blockIdx.z, batch = gridDim.y, num_splits = gridDim.z;
    const int rows_total = q_len * num_heads;
    const int row0 = blockIdx.x * ROWS;
    const int nrows = min(ROWS, rows_total - row0);

    const int ctx = context_lens[b];
    const rl::KeyRange keys = rl::split_keys<SPLIT>(ctx, split, num_splits, BN);
    const int k_begin = keys.begin, k_end = keys.end, n_tiles = keys.tiles(BN);
    const int pos_first = ctx - q_len;
    const int* bt = block_table + (i64)b * bt_stride;

    // ---- Q and the first two tiles, straight into the swizzled layout (zeros past nrows / k_end)
    {
        const T* qb = q + ((i64)b * rows_total + row0) * DL;
        for (int i = tid; i < ROWS * CHUNKS; i += 256) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            cp_async16(sQ + hop::tile_off<ROWS>(r, c), qb + (i64)r * DL + c * 8, r < nrows);
        }
    }
    auto load_tile = [&](int j, int stage) {
        const int key0 = k_begin + j * BN;
        const T* src = cache + (i64)bt[key0 / BN] * BN * DL;
        const u32 dst = sK + stage * TILE_BYTES;
#pragma unroll 2
        for (int i = tid; i < BN * CHUNKS; i += 256) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            cp_async16(dst + hop::tile_off<BN>(r, c), src + (i64)r * DL + c * 8, key0 + r < k_end);
        }
    };
    if (n_tiles > 0) load_tile(0, 0);
    cp_async_commit();
    if (n_tiles > 1) load_tile(1, 1);
    cp_async_commit();

    // ---- this thread's rows: 16 warp + g + 8 h (both warpgroups hold all 64 rows)
    int pos[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) pos[h] = pos_first + (row0 + warp * 16 + g + 8 * h) / num_heads;
    const int hi_min = min(k_end - 1, pos_first);
    float oacc[2][64];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int i = 0; i < 64; ++i) oacc[n][i] = 0.f;
    OnlineState st[2] = {OnlineState::empty(), OnlineState::empty()};
    const u64 dq = hop::desc(sQ, 16, 1024);

    for (int j = 0; j < n_tiles; ++j) {
        cp_async_wait<1>();
        hop::fence_proxy_async();
        __syncthreads();                                  // (A) tile j visible to the tensor cores
        const u32 kb = sK + (j & 1) * TILE_BYTES;
        const int key0 = k_begin + j * BN;

        // ---- S = Q K^T over this warpgroup's 32 keys
        float s[16];
        const u64 dk = hop::desc(kb + wg * 32 * 128, 16, 1024);
        hop::fence();
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            const u32 step = (kk >> 2) * (ROWS * 128) + (kk & 3) * 32;   // column block kk / 4, 32 B a k-step
            hop::Wgmma<T>::ss_n32(s, dq + (step >> 4), dk + (((kk >> 2) * (BN * 128) + (kk & 3) * 32) >> 4), kk);
        }
        hop::commit();
        hop::wait<0>();
        hop::pin(s);
        if (key0 + BN - 1 > hi_min) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int hi = min(pos[h], k_end - 1);
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (key0 + wg * 32 + 8 * i + 2 * t4 + e > hi) s[4 * i + 2 * h + e] = -RL_INF;
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -RL_INF;
#pragma unroll
            for (int i = 0; i < 4; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
            mx = quad_max(mx);
            if (t4 == 0) red_max[wg * ROWS + warp * 16 + g + 8 * h] = mx;
        }
        __syncthreads();                                  // (B)
        float alpha[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = warp * 16 + g + 8 * h;
            alpha[h] = st[h].raise(fmaxf(red_max[row], red_max[ROWS + row]) * scale_log2);
            const float shift = st[h].shift();
            float rs = 0.f;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float p0 = online_weight(s[4 * i + 2 * h], scale_log2, shift);
                const float p1 = online_weight(s[4 * i + 2 * h + 1], scale_log2, shift);
                rs += p0 + p1;
                *reinterpret_cast<u32*>(gbase + (sP - base) + swz<BN>(row, wg * 4 + i) + 4 * t4) = Num<T>::pack2(p0, p1);
            }
            st[h].add(alpha[h], rs);                      // this warpgroup's keys; a lane's share
        }
        __syncthreads();                                  // (C) P complete
        // ---- O = O alpha + P V over this warpgroup's 256 value columns
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int i = 0; i < 64; ++i) oacc[n][i] *= alpha[(i >> 1) & 1];
        u32 pa[4][4];
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) ldsm_x4(pa[ks], sP + swz<BN>(warp * 16 + (lane & 15), 2 * ks + (lane >> 4)));
        hop::fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const u32 cb = wg * 4 + 2 * n;            // first of the two 64-column blocks
                hop::Wgmma<T>::rs_n128(oacc[n], pa[ks], hop::desc(kb + cb * (BN * 128) + ks * 2048, BN * 128, 1024));
            }
        hop::commit();
        hop::wait<0>();
        hop::pin(oacc[0]);
        hop::pin(oacc[1]);
        __syncthreads();                                  // (D) stage j & 1, P and the maxima are free
        if (j + 2 < n_tiles) load_tile(j + 2, j & 1);
        cp_async_commit();
    }
    cp_async_wait<0>();

    // ---- the two warpgroups' sums, then normalise and write; warpgroup 0 writes the LSEs
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float l = quad_sum(st[h].l);
        if (t4 == 0) red_sum[wg * ROWS + warp * 16 + g + 8 * h] = l;
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + g + 8 * h;
        OnlineState total{st[h].m, red_sum[row] + red_sum[ROWS + row]};
        float inv, lse;
        total.finish(1.f, inv, lse);
        if (row >= nrows) continue;
        const i64 r = (i64)b * rows_total + row0 + row;
        if (SPLIT) {
            const i64 rs = (i64)split * batch * rows_total + r;
            float* orow = static_cast<float*>(out) + rs * DV + wg * 256;
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int i = 0; i < 16; ++i)
                    *reinterpret_cast<float2*>(orow + n * 128 + 8 * i + 2 * t4) =
                        make_float2(oacc[n][4 * i + 2 * h] * inv, oacc[n][4 * i + 2 * h + 1] * inv);
            if (wg == 0 && t4 == 0) out_lse[rs] = lse;
        } else {
            T* orow = static_cast<T*>(out) + r * DV + wg * 256;
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int i = 0; i < 16; ++i)
                    *reinterpret_cast<u32*>(orow + n * 128 + 8 * i + 2 * t4) =
                        Num<T>::pack2(oacc[n][4 * i + 2 * h] * inv, oacc[n][4 * i + 2 * h + 1] * inv);
            if (out_lse && wg == 0 && t4 == 0) out_lse[r] = lse;
        }
    }
}
