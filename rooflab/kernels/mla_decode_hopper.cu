// MLA decode on Hopper (sm_90a): warpgroup MMA (wgmma) form of mla_decode.cu, 16-bit latent caches.
// Three schedules (template SCHED): 0 = one phase a tile (below), 1 = seesaw (mlah_seesaw, further down), 3 = the
// seesaw loading its full tiles by TMA. (2 was the seesaw on a persistent grid: slower at every measured shape,
// removed; KERNELS.md has its design and timings.)
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


// wgmma forms the seesaw schedule needs beyond hopper.cuh's: m64n128k16 with A K-major and B MN-major both from
// shared memory (P of the other warpgroup times V), and m64n64k16 with A from registers and B K-major (the rope
// block of Q, kept in registers, times K).
namespace mlah {
template <typename T> struct WgmmaX;
#define RL_WGMMAX_BODY \
    static RL_DEV void ss_n128_tb(float (&d)[64], u64 a, u64 b) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
            "%64, %65, p, 1, 1, 0, 1;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
            : "l"(a), "l"(b), "r"(1)); \
    } \
    static RL_DEV void rs_n64(float (&d)[32], const u32 (&a)[4], u64 b, int scale_d) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
            "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d)); \
    }

#define TY "f16"
template <> struct WgmmaX<__half> { RL_WGMMAX_BODY };
#undef TY
#define TY "bf16"
template <> struct WgmmaX<__nv_bfloat16> { RL_WGMMAX_BODY };
#undef TY
#undef RL_WGMMAX_BODY
}  // namespace mlah

// What one CTA does: sequence b (blockIdx.y), split `split` of its keys (blockIdx.z), the 64-row chunk blockIdx.x of
// its q_len x h rows; its key range and block-table row. Shared by every schedule's prologue.
struct MlahWork {
    int b, split, batch, rows_total, row0, nrows, ctx, k_begin, k_end, n_tiles, pos_first;
    const int* bt;
};

template <bool SPLIT>
RL_DEV MlahWork mlah_work(const int* __restrict__ context_lens, const int* __restrict__ block_table, int bt_stride,
                          int q_len, int num_heads)
{
    MlahWork w;
    w.b = blockIdx.y;
    w.split = blockIdx.z;
    w.batch = gridDim.y;
    w.rows_total = q_len * num_heads;
    w.row0 = blockIdx.x * mlah::ROWS;
    w.nrows = min(mlah::ROWS, w.rows_total - w.row0);
    w.ctx = context_lens[w.b];
    const rl::KeyRange keys = rl::split_keys<SPLIT>(w.ctx, w.split, gridDim.z, mlah::BN);
    w.k_begin = keys.begin;
    w.k_end = keys.end;
    w.n_tiles = keys.tiles(mlah::BN);
    w.pos_first = w.ctx - q_len;
    w.bt = block_table + (i64)w.b * bt_stride;
    return w;
}

// A thread's two rows (16 warp + g + 8 h of the chunk): their query positions (row r is token r / h of the q_len
// new ones) and their O accumulators, zeroed. Shared by every schedule.
RL_DEV void mlah_thread_rows(int (&pos)[2], float (&oacc)[2][64], int pos_first, int row0, int warp, int g,
                             int num_heads)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) pos[h] = pos_first + (row0 + warp * 16 + g + 8 * h) / num_heads;
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int i = 0; i < 64; ++i) oacc[n][i] = 0.f;
}

// One of a thread's two rows (h) of O, normalised by inv, with its LSE: fp32 split partials at split_base + r, or
// the T output row r. Warpgroup wg holds value columns 256 wg .. 256 wg + 255. Shared by every schedule's epilogue.
template <typename T, bool SPLIT>
RL_DEV void mlah_store_row(void* __restrict__ out, float* __restrict__ out_lse, const float (&oacc)[2][64], int h,
                           float inv, float lse, i64 r, i64 split_base, int wg, int t4)
{
    if (SPLIT) {
        const i64 rs = split_base + r;
        float* orow = static_cast<float*>(out) + rs * mlah::DV + wg * 256;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int i = 0; i < 16; ++i)
                *reinterpret_cast<float2*>(orow + n * 128 + 8 * i + 2 * t4) =
                    make_float2(oacc[n][4 * i + 2 * h] * inv, oacc[n][4 * i + 2 * h + 1] * inv);
        if (wg == 0 && t4 == 0) out_lse[rs] = lse;
    } else {
        T* orow = static_cast<T*>(out) + r * mlah::DV + wg * 256;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int i = 0; i < 16; ++i)
                *reinterpret_cast<u32*>(orow + n * 128 + 8 * i + 2 * t4) =
                    Num<T>::pack2(oacc[n][4 * i + 2 * h] * inv, oacc[n][4 * i + 2 * h + 1] * inv);
        if (out_lse && wg == 0 && t4 == 0) out_lse[r] = lse;
    }
}

template <typename T, bool SPLIT>
RL_DEV void mlah_one_phase(const T* __restrict__ q, const T* __restrict__ cache, const int* __restrict__ block_table,
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
    const MlahWork w = mlah_work<SPLIT>(context_lens, block_table, bt_stride, q_len, num_heads);
    const int b = w.b, split = w.split, batch = w.batch, rows_total = w.rows_total, row0 = w.row0, nrows = w.nrows;
    const int ctx = w.ctx, k_begin = w.k_begin, k_end = w.k_end, n_tiles = w.n_tiles, pos_first = w.pos_first;
    const int* bt = w.bt;

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
    float oacc[2][64];
    mlah_thread_rows(pos, oacc, pos_first, row0, warp, g, num_heads);
    const int hi_min = min(k_end - 1, pos_first);
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
        mlah_store_row<T, SPLIT>(out, out_lse, oacc, h, inv, lse, r, (i64)split * batch * rows_total, wg, t4);
    }
}

// ---------------------------------------------------------------- SCHED 1: the seesaw schedule
// The schedule of FlashMLA's 2025 kernel (its public write-up; this code is rooflab's own): tiles come in pairs
// (tile 2i in stage 0, 2i + 1 in stage 1). Warpgroup w computes S = Q K^T of the pair's tile w alone (all 64 keys,
// 32 wgmma m64n64k16; Q's rope block 8 lives in registers, which frees its shared block for P1) and runs the
// softmax of that tile; warpgroup 0 holds O's value columns 0 .. 255 (O_L), warpgroup 1 columns 256 .. 511 (O_R).
// With m the running max before the pair, m0 = max(m, max S0), m1 = max(m0, max S1), s0 = 2^(m - m0),
// s1 = 2^(m0 - m1), P0 = 2^(S0 - m0), P1 = 2^(S1 - m1):
//   WG0: O_L = O_L s0 + P0 V0_L (P0 from registers); O_L = O_L s1 + P1 V1_L (P1 from shared memory)
//   WG1: O_R = O_R s0 s1 + P1 V1_R (registers) + (P0 s1) V0_R (WG0 stores P0 s1 into shared memory)
// so every product of the pair is relative to m1, as online softmax has it; each warpgroup sums l over its own
// tile (WG0's sum scaled by s1). WG1 issues S1 only once S0 is done, so S1 runs under WG0's softmax and P0 V0_L
// under WG1's. Named barriers carry the maxima, P0 / P1 ready, P0 / P1 free (an older P still read) and S0 done.
// Loads: each stage is two parts, L (column blocks 0-3) and R (4-7), block 8 going with the part of the
// warpgroup whose S reads it; the one warpgroup that last reads a part copies the next tile's part into it
// (cp.async, 128 threads) as soon as its wgmma on it is done, arriving on the part's mbarrier (full[stage][part]).
namespace mlah {
// TMA (SCHED 3): the latent cache as a 2-D tensor [pages x 64 rows, 576] of 16-bit words, boxes [64 x 64] with the
// 128-byte swizzle (the tile layout above), its CUtensorMap in global memory (mla.py's _tensor_map)
RL_DEV void tma_map_acquire(const void* tmap) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" :: "l"(tmap) : "memory");
}
RL_DEV void mbar_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
RL_DEV void tma_load_2d(u32 dst, const void* tmap, int x, int y, u32 bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(bar) : "memory");
}
// cp.async's arrival that counts itself (the pending count raised at issue, lowered when the copies land)
RL_DEV void mbar_arrive_cp_async_inc(u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
}
constexpr int BAR_SCALE0 = 1, BAR_SCALE1 = 2, BAR_P0READY = 3, BAR_P1READY = 4, BAR_P0FREE = 5, BAR_P1FREE = 6,
              BAR_S0DONE = 7;
constexpr u32 BLK_BYTES = BN * 128;                      // one [64 x 64] column block (8 KiB)
// Seesaw shared memory (mla.py's mla_hopper_smem_bytes(1)): 1 KiB slack, Q (its block 8 becomes P1), two stages,
// P0 [64 x 64], 4 mbarriers, maxima m0 / m1 [64] each and the sums [2][64].
constexpr u32 SS_P0 = 3 * TILE_BYTES, SS_BAR = SS_P0 + BLK_BYTES, SS_M0 = SS_BAR + 64, SS_M1 = SS_M0 + 256,
              SS_SUM = SS_M1 + 256;
}  // namespace mlah

template <typename T, bool SPLIT, bool TMA = false>
RL_DEV void mlah_seesaw(const T* __restrict__ q, const T* __restrict__ cache, const int* __restrict__ block_table,
                        int bt_stride, const int* __restrict__ context_lens, void* __restrict__ out,
                        float* __restrict__ out_lse, int num_heads, int q_len, float scale_log2,
                        const void* tmap = nullptr)
{
    using namespace mlah;
    extern __shared__ __align__(1024) unsigned char smem[];
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 sQ = base, sK = sQ + TILE_BYTES, sP0 = base + SS_P0, sP1 = sQ + 8 * BLK_BYTES;
    const u32 full = base + SS_BAR;                       // full[stage][part] at full + 8 (2 stage + part)
    unsigned char* gbase = smem + (base - smem_u32(smem));
    float* sM0 = reinterpret_cast<float*>(gbase + SS_M0);
    float* sM1 = reinterpret_cast<float*>(gbase + SS_M1);
    float* red_sum = reinterpret_cast<float*>(gbase + SS_SUM);

    // wg through a shuffle: ptxas then knows it is warp-uniform (the two warpgroups' branches both issue wgmma,
    // which it would otherwise serialize as divergent code)
    const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid >> 7, 0), warp = (tid >> 5) & 3, lane = tid & 31;
    const int ptid = tid & 127, g = lane >> 2, t4 = lane & 3;
    const MlahWork w = mlah_work<SPLIT>(context_lens, block_table, bt_stride, q_len, num_heads);
    const int b = w.b, split = w.split, batch = w.batch, rows_total = w.rows_total, row0 = w.row0, nrows = w.nrows;
    const int ctx = w.ctx, k_begin = w.k_begin, k_end = w.k_end, n_tiles = w.n_tiles, pos_first = w.pos_first;
    const int* bt = w.bt;

    if (tid == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) hop::mbar_init(full + 8 * i, TMA ? 1 : 128);
    }
    if (TMA && ptid == 0) tma_map_acquire(tmap);
    __syncthreads();

    // Part `part` of tile j (L: blocks 0-3, R: 4-7; block 8 with part == stage), by this warpgroup's 128 threads:
    // thread ptid copies chunk ptid % 8 of rows ptid / 8 + 16 k (one swizzle phase a thread).
    auto load_part = [&](int j, int part) {
        const int st = j & 1;
        const int key0 = k_begin + j * BN;
        const u32 dst = sK + st * TILE_BYTES;
        const u32 bar = full + 8 * (2 * st + part);
        if (TMA && key0 + BN <= k_end) {                 // TMA: one thread, a [64 x 64] box a column block
            if (ptid == 0) {
                const int y = bt[key0 / BN] * BN;
                mbar_expect_tx(bar, (part == st ? 5 : 4) * BLK_BYTES);
#pragma unroll
                for (int k = 0; k < 4; ++k) tma_load_2d(dst + (part * 4 + k) * BLK_BYTES, tmap, (part * 4 + k) * 64, y, bar);
                if (part == st) tma_load_2d(dst + 8 * BLK_BYTES, tmap, 8 * 64, y, bar);
            }
            return;
        }
        const T* src = cache + (i64)bt[key0 / BN] * BN * DL;
        const int c = ptid & 7, r0 = ptid >> 3;
        const u32 sw = (u32)((c ^ (r0 & 7)) << 4);
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            const int blk = part * 4 + (k >> 2), r = r0 + 16 * (k & 3);
            cp_async16(dst + blk * BLK_BYTES + r * 128 + sw, src + (i64)r * DL + blk * 64 + c * 8, key0 + r < k_end);
        }
        if (part == st) {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int r = r0 + 16 * k;
                cp_async16(dst + 8 * BLK_BYTES + r * 128 + sw, src + (i64)r * DL + 8 * 64 + c * 8, key0 + r < k_end);
            }
        }
        if (TMA) {                                        // a tile past k_end (its rows zero-filled) keeps cp.async:
            mbar_arrive_cp_async_inc(bar);               // 128 counted arrivals, then the barrier's one arrival
            hop::bar_sync(8 + wg, 128);
            if (ptid == 0) hop::mbar_arrive(bar);
        } else {
            hop::mbar_arrive_cp_async(bar);
        }
    };

    {
        const T* qb = q + ((i64)b * rows_total + row0) * DL;
        for (int i = tid; i < ROWS * CHUNKS; i += 256) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            cp_async16(sQ + hop::tile_off<ROWS>(r, c), qb + (i64)r * DL + c * 8, r < nrows);
        }
    }
    cp_async_commit();
    // WG0 copies the L parts, WG1 the R parts, now and in the loop
    if (n_tiles > 0) load_part(0, wg);
    if (n_tiles > 1) load_part(1, wg);
    cp_async_wait<0>();                                   // Q (the tiles' copies are in no group)
    hop::fence_proxy_async();
    __syncthreads();
    u32 rq8[4][4];                                        // Q's block 8 as the A operand of 4 k-steps
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) ldsm_x4(rq8[ks], sP1 + swz<BN>(warp * 16 + (lane & 15), 2 * ks + (lane >> 4)));
    __syncthreads();                                      // block 8 is P1's from here

    int pos[2];
    float oacc[2][64];
    mlah_thread_rows(pos, oacc, pos_first, row0, warp, g, num_heads);
    const int hi_min = min(k_end - 1, pos_first);
    float m_run[2] = {-RL_INF, -RL_INF}, l_run[2] = {0.f, 0.f};
    const u64 dq = hop::desc(sQ, 16, 1024);
    float s[32];
    u32 pa[4][4];

    // S = Q K^T of the tile in stage st: column blocks blk0 .. blk0 + 3 (from shared memory) ...
    auto s_blocks = [&](int st, int blk0, bool first) {
        const u64 dk = hop::desc(sK + st * TILE_BYTES, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < 16; ++kk) {
            const u32 off = (blk0 + (kk >> 2)) * BLK_BYTES + (kk & 3) * 32;
            hop::Wgmma<T>::ss_n64(s, dq + (off >> 4), dk + (off >> 4), (first && kk == 0) ? 0 : 1);
        }
    };
    // ... and block 8 (the rope part) with Q from registers
    auto s_rope = [&](int st) {
        const u64 dk = hop::desc(sK + st * TILE_BYTES, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) WgmmaX<T>::rs_n64(s, rq8[kk], dk + ((8 * BLK_BYTES + kk * 32) >> 4), 1);
    };
    auto wait_full = [&](int st, int part, int pair) {       // a warp-uniform loop (see wg)
        const u32 bar = full + 8 * (2 * st + part), parity = pair & 1;
        u32 done;
        do {
            asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                         " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        } while (!__all_sync(0xffffffffu, done));
        hop::fence_proxy_async();
    };
    auto mask_max = [&](int j, float (&tmax)[2]) {
        const int key0 = k_begin + j * BN;
        if (key0 + BN - 1 > hi_min) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int hi = min(pos[h], k_end - 1);
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (key0 + 8 * i + 2 * t4 + e > hi) s[4 * i + 2 * h + e] = -RL_INF;
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -RL_INF;
#pragma unroll
            for (int i = 0; i < 8; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
            tmax[h] = quad_max(mx) * scale_log2;
        }
    };
    // s <- 2^(s scale_log2 - m) (fp32, kept), pa <- s packed as the A operand; returns the lane's row sums
    auto exp_pack = [&](const float (&m)[2], float (&rs)[2]) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float shift = m[h] == -RL_INF ? 0.f : m[h];
            rs[h] = 0.f;
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float p = online_weight(s[4 * i + 2 * h + e], scale_log2, shift);
                    s[4 * i + 2 * h + e] = p;
                    rs[h] += p;
                }
        }
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
            for (int e = 0; e < 4; ++e) pa[kk][e] = Num<T>::pack2(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
    };
    auto store_p = [&](u32 dst, const float (&f)[2]) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = warp * 16 + g + 8 * h;
#pragma unroll
            for (int i = 0; i < 8; ++i)
                *reinterpret_cast<u32*>(gbase + (dst - base) + swz<BN>(row, i) + 4 * t4) =
                    Num<T>::pack2(s[4 * i + 2 * h] * f[h], s[4 * i + 2 * h + 1] * f[h]);
        }
    };
    auto scale_o = [&](const float (&f)[2]) {
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int i = 0; i < 64; ++i) oacc[n][i] *= f[(i >> 1) & 1];
    };
    // O += P V over this warpgroup's value blocks 4 wg .. 4 wg + 3 of stage st: P from registers ...
    auto pv_local = [&](int st) {
        const u32 kb = sK + st * TILE_BYTES;
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int n = 0; n < 2; ++n)
                hop::Wgmma<T>::rs_n128(oacc[n], pa[ks], hop::desc(kb + (wg * 4 + 2 * n) * BLK_BYTES + ks * 2048,
                                                                  BLK_BYTES, 1024));
    };
    // ... or from shared memory (the other warpgroup's P)
    auto pv_remote = [&](int st, u32 sp) {
        const u32 kb = sK + st * TILE_BYTES;
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int n = 0; n < 2; ++n)
                WgmmaX<T>::ss_n128_tb(oacc[n], hop::desc(sp + ks * 32, 16, 1024),
                                      hop::desc(kb + (wg * 4 + 2 * n) * BLK_BYTES + ks * 2048, BLK_BYTES, 1024));
    };

    const int n_pairs = (n_tiles + 1) >> 1;
    if (wg == 0) {
        hop::bar_arrive(BAR_P1FREE, 256);                 // no P1 read yet
        for (int i = 0; i < n_pairs; ++i) {
            const int j0 = 2 * i, j1 = j0 + 1;
            const bool has1 = j1 < n_tiles;
            hop::wait<0>();                               // P1 V1_L of the last pair: its L part and P1 are free
            hop::pin(oacc[0]);                            // (waits on every path: ptxas serializes wgmma when a
            hop::pin(oacc[1]);                            // path may read an accumulator still in flight)
            if (i > 0) {
                hop::bar_arrive(BAR_P1FREE, 256);
                if (has1) load_part(j1, 0);
            }
            // S0 (L blocks and block 8, then R)
            wait_full(0, 0, i);
            hop::fence();
            s_blocks(0, 0, true);
            s_rope(0);
            wait_full(0, 1, i);
            s_blocks(0, 4, false);
            hop::commit();
            hop::wait<0>();
            hop::pin(s);
            hop::bar_arrive(BAR_S0DONE, 256);
            float tmax[2], m0[2], sc0[2], rs[2];
            mask_max(j0, tmax);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                m0[h] = fmaxf(m_run[h], tmax[h]);
                sc0[h] = ex2(m_run[h] - (m0[h] == -RL_INF ? 0.f : m0[h]));
                if (t4 == 0) sM0[warp * 16 + g + 8 * h] = m0[h];
            }
            hop::bar_arrive(BAR_SCALE0, 256);
            exp_pack(m0, rs);
            scale_o(sc0);
            hop::fence();
            pv_local(0);                                  // O_L += P0 V0_L
            hop::commit();
            hop::bar_sync(BAR_SCALE1, 256);
            float sc1[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float m1 = sM1[warp * 16 + g + 8 * h];
                sc1[h] = ex2(m0[h] - (m1 == -RL_INF ? 0.f : m1));
                l_run[h] = (l_run[h] * sc0[h] + rs[h]) * sc1[h];
                m_run[h] = m1;
            }
            hop::bar_sync(BAR_P0FREE, 256);
            store_p(sP0, sc1);                            // P0 s1 for WG1
            hop::fence_proxy_async();
            hop::bar_arrive(BAR_P0READY, 256);
            hop::wait<0>();
            hop::pin(oacc[0]);
            hop::pin(oacc[1]);
            if (j0 + 2 < n_tiles) load_part(j0 + 2, 0);  // stage 0's L part is done with
            scale_o(sc1);
            if (has1) {
                hop::bar_sync(BAR_P1READY, 256);
                hop::fence();
                pv_remote(1, sP1);                        // O_L += P1 V1_L
                hop::commit();
            }
        }
        hop::wait<0>();
        hop::pin(oacc[0]);
        hop::pin(oacc[1]);
        if (n_pairs > 0 && 2 * n_pairs - 1 < n_tiles) hop::bar_arrive(BAR_P1FREE, 256);
        hop::bar_sync(BAR_P0FREE, 256);                   // WG1's last P0 signal
    } else {
        hop::bar_arrive(BAR_P0FREE, 256);                 // no P0 read yet
        for (int i = 0; i < n_pairs; ++i) {
            const int j0 = 2 * i, j1 = j0 + 1;
            const bool has1 = j1 < n_tiles;
            hop::wait<0>();                               // P1 V1_R of the last pair: its R part is free
            hop::pin(oacc[0]);
            hop::pin(oacc[1]);
            if (i > 0 && has1) load_part(j1, 1);
            float tmax[2] = {-RL_INF, -RL_INF};
            hop::bar_sync(BAR_S0DONE, 256);
            if (has1) {                                   // S1 (R blocks and block 8, then L)
                wait_full(1, 1, i);
                hop::fence();
                s_blocks(1, 4, true);
                s_rope(1);
                wait_full(1, 0, i);
                s_blocks(1, 0, false);
                hop::commit();
                hop::wait<0>();
                hop::pin(s);
                mask_max(j1, tmax);
            }
            hop::bar_sync(BAR_SCALE0, 256);
            float m1[2], sc01[2], rs[2] = {0.f, 0.f};
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float m0 = sM0[warp * 16 + g + 8 * h];
                m1[h] = fmaxf(m0, tmax[h]);
                const float sh1 = m1[h] == -RL_INF ? 0.f : m1[h];
                sc01[h] = ex2(m_run[h] - (m0 == -RL_INF ? 0.f : m0)) * ex2(m0 - sh1);
                if (t4 == 0) sM1[warp * 16 + g + 8 * h] = m1[h];
                m_run[h] = m1[h];
            }
            hop::bar_arrive(BAR_SCALE1, 256);
            if (has1) {
                exp_pack(m1, rs);
                hop::bar_sync(BAR_P1FREE, 256);
                const float one[2] = {1.f, 1.f};
                store_p(sP1, one);                        // P1 for WG0
                hop::fence_proxy_async();
                hop::bar_arrive(BAR_P1READY, 256);
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) l_run[h] = l_run[h] * sc01[h] + rs[h];
            scale_o(sc01);
            hop::bar_sync(BAR_P0READY, 256);
            hop::fence();
            pv_remote(0, sP0);                            // O_R += (P0 s1) V0_R
            hop::commit();
            if (has1) {
                pv_local(1);                              // O_R += P1 V1_R
                hop::commit();
                hop::wait<1>();                           // (O_R stays in flight: no pin here)
            } else {
                hop::wait<0>();
            }
            hop::bar_arrive(BAR_P0FREE, 256);             // P0 and stage 0's R part are done with
            if (j0 + 2 < n_tiles) load_part(j0 + 2, 1);
        }
        hop::wait<0>();
        hop::pin(oacc[0]);
        hop::pin(oacc[1]);
        hop::bar_sync(BAR_P1FREE, 256);                   // WG0's last P1 signal
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");

    // ---- the two warpgroups' sums (both relative to the same final max), then normalise and write
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float l = quad_sum(l_run[h]);
        if (t4 == 0) red_sum[wg * ROWS + warp * 16 + g + 8 * h] = l;
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + g + 8 * h;
        OnlineState total{m_run[h], red_sum[row] + red_sum[ROWS + row]};
        float inv, lse;
        total.finish(1.f, inv, lse);
        if (row >= nrows) continue;
        const i64 r = (i64)b * rows_total + row0 + row;
        mlah_store_row<T, SPLIT>(out, out_lse, oacc, h, inv, lse, r, (i64)split * batch * rows_total, wg, t4);
    }
}


template <typename T, bool SPLIT, int SCHED>
__global__ void __launch_bounds__(256, 1)
mla_decode_hopper(const T* __restrict__ q, const T* __restrict__ cache, const int* __restrict__ block_table,
                  int bt_stride, const int* __restrict__ context_lens, void* __restrict__ out,
                  float* __restrict__ out_lse, int num_heads, int q_len, float scale_log2, const void* tmap)
{
    if constexpr (SCHED == 3)                        // the seesaw, full tiles by TMA
        mlah_seesaw<T, SPLIT, true>(q, cache, block_table, bt_stride, context_lens, out, out_lse, num_heads, q_len,
                                    scale_log2, tmap);
    else if constexpr (SCHED >= 1)
        mlah_seesaw<T, SPLIT>(q, cache, block_table, bt_stride, context_lens, out, out_lse, num_heads, q_len, scale_log2);
    else
        mlah_one_phase<T, SPLIT>(q, cache, block_table, bt_stride, context_lens, out, out_lse, num_heads, q_len,
                                 scale_log2);
}
