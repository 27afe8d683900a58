// Paged decode: q_len new query tokens per sequence (1 to 8), K/V read through an int32 block table.
//
// q [B, q_len, h, D]; k_cache / v_cache [num_pages, h_kv, page_size, D] (HND: one (page, KV head)
// chunk is page_size * D contiguous elements); block_table int32 [B, bt_stride]; context_lens int32
// [B]. The new tokens are the last q_len positions of the context: token t sees keys
// j <= ctx - q_len + t (MASK_CAUSAL; MASK_NONE when q_len is 1), and with MASK_LOCAL only those in its
// window and / or chunk too (common.cuh's Visibility). sinks: fp32 [h] or null (the sink joins the
// denominator once: in split 0 of a split-KV launch).
// One CTA per (KV head, sequence, split): it serves the group x q_len query rows of that KV head
// (row r = t * group + head in the group), so each KV page is read once for all of them. The rows
// are the M side of an mma.sync m16n8k16 (rows past them are zero; MT = 1 or 2 row tiles), keys the
// N side: S = Q K^T and O += P V run on tensor cores, the online softmax in fp32 registers. More
// than 32 rows are served in chunks of 32 (gridDim.x = h_kv * head_chunks), each chunk reading the
// KV head's pages once. Only the pages holding keys some row sees are read: the CTA's range runs
// from the first token's first key to the last token.
//
// Each of the NW warps streams its own 16-key tiles (tile w, w + NW, ...) through a private
// NST-stage cp.async ring in shared memory, so many bytes are in flight per SM and no barrier
// is needed between warps until the end, where the NW partial states are merged by their LSEs.
//
// KV = T, or rl::e4m3 for an fp8 cache (one byte an element; sm_89 and newer). fp8 tiles are
// copied as bytes and widened to T as the mma operands are formed: for S = Q K^T, ldmatrix gives
// each lane 4 consecutive bytes of a key (d 4t..4t+3 of a 16-wide k-step), so the k-step's order
// of d is permuted (fragment k 2t, 2t+1 <- d 4t, 4t+1; k 2t+8, 2t+9 <- d 4t+2, 4t+3) and q's
// fragments are loaded in the same order. For O += P V, ldmatrix.trans of 16-bit pairs gives each
// lane (key 2t, d 2g..2g+1) and (key 2t+1, d 2g..2g+1); one byte permute regroups them by d, so
// one 16-d chunk feeds two n-tiles, d even and d odd, and each lane ends up holding 4 consecutive
// output columns. The per-tensor scales are folded in: k_scale into scale_log2 (by the launcher),
// v_scale into the final 1 / l. A 16-bit cache ignores v_scale.
//
// SPLIT = false: writes o (T) [B, q_len, h, D] and, if out_lse is not null, lse [B, q_len, h].
// SPLIT = true: split z of S = gridDim.z covers whole pages [base + z * span, base + (z + 1) * span)
// of the range (base: the start of the range's first page; span = ceil(pages / S) * page_size, pages
// those the range touches), and writes fp32 o_part [S, B, q_len, h, D] and lse_part [S, B, q_len, h];
// a split with no keys writes o = 0 and lse = -inf.
#include "common.cuh"
using namespace rl;

template <typename T, typename KV, int D, int MT, int NW, int NST, bool SPLIT, int MASK>
__global__ void __launch_bounds__(NW * 32)
paged_decode(const T* __restrict__ q, const KV* __restrict__ k_cache, const KV* __restrict__ v_cache,
             const int* __restrict__ block_table, int bt_stride, const int* __restrict__ context_lens,
             void* __restrict__ out, float* __restrict__ out_lse,
             int num_heads, int group, int head_chunks, int page_size, int page_shift, float scale_log2,
             float v_scale, int q_len, const float* __restrict__ sinks, int window, int chunk_len)
{
    const Visibility vis{window, chunk_len};
    constexpr bool FP8 = sizeof(KV) == 1;
    static_assert(FP8 || sizeof(KV) == sizeof(T), "KV is T or e4m3");
    constexpr int TILE = 16;                    // keys a warp takes per step
    constexpr int ROW_BYTES = D * (int)sizeof(KV);
    constexpr int CH = ROW_BYTES / 16;          // 16-byte chunks per key row
    constexpr int CHUNK_ELEMS = 16 / (int)sizeof(KV);
    constexpr int KSTEPS = D / 16;
    constexpr int DTILE = D / 8;
    constexpr int TILE_BYTES = TILE * ROW_BYTES;
    constexpr int STAGE_BYTES = 2 * TILE_BYTES;   // K and V
    constexpr int RSTEP = 32 / CH;              // key rows one warp-wide copy covers
    constexpr int ROWS = 16 * MT;               // query rows (heads) a CTA holds, padded
    static_assert(MT == 1 || MT == 2, "larger groups are split into head chunks");

    extern __shared__ __align__(128) unsigned char smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int kvh = blockIdx.x / head_chunks, chunk = blockIdx.x % head_chunks;
    const int b = blockIdx.y, split = blockIdx.z;
    const int num_kv_heads = gridDim.x / head_chunks, batch = gridDim.y, num_splits = gridDim.z;
    const int row0 = chunk * ROWS;                          // first of this CTA's rows (t * group + head)
    const int nrows = min(ROWS, group * q_len - row0);      // rows this CTA serves
    auto token_of = [&](int row) { return (row0 + row) / group; };
    auto head_of = [&](int row, int t) { return kvh * group + row0 + row - t * group; };

    // ---- this CTA's key range [k_begin, k_end): from the first token's first key to the last token
    const int ctx = context_lens[b];
    const int pos_first = ctx - q_len;                      // key position of token 0
    const int k_lo = vis.lo<MASK>(pos_first);
    int k_begin = k_lo, k_end = ctx;
    if (SPLIT) {
        const int first_page = k_lo / page_size;
        const int pages = (ctx + page_size - 1) / page_size - first_page;
        const int span = ((pages + num_splits - 1) / num_splits) * page_size;
        const int base = first_page * page_size + split * span;
        k_begin = max(k_lo, min(ctx, base));
        k_end = max(k_begin, min(ctx, base + span));
    }
    const int n_tiles = (k_end - k_begin + TILE - 1) / TILE;

    // ---- this thread's rows (mt, hh): row mt * 16 + g + 8 hh, at key position pos, seeing keys lo .. hi
    int pos[MT][2], lo[MT][2], hi[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            pos[mt][hh] = pos_first + token_of(mt * 16 + g + 8 * hh);
            lo[mt][hh] = vis.lo<MASK>(pos[mt][hh]);
            hi[mt][hh] = min(vis.hi<MASK>(pos[mt][hh]), k_end - 1);
        }
    // no key up to hi_min and none from lo_max on needs a per-element mask
    const int hi_min = MASK == MASK_NONE ? k_end - 1 : min(k_end - 1, pos_first);
    const int lo_max = vis.lo<MASK>(ctx - 1);

    // ---- query fragments (A operand), rows past nrows are zero
    u32 qf[MT][KSTEPS][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int row = mt * 16 + g + 8 * hh, t = token_of(row);
            const T* qrow = q + (((i64)b * q_len + t) * num_heads + head_of(row, t)) * D;
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
                for (int e2 = 0; e2 < 2; ++e2) {
                    const int col = FP8 ? kk * 16 + 4 * t4 + e2 * 2   // the fp8 k-step order
                                        : kk * 16 + 2 * t4 + e2 * 8;
                    qf[mt][kk][hh + 2 * e2] = row < nrows ? *reinterpret_cast<const u32*>(qrow + col) : 0u;
                }
        }

    float o_acc[MT][DTILE][4];
    OnlineState st[MT][2];
    init_softmax_state(o_acc, st);

    // ---- this warp's ring of NST stages
    const u32 ring = smem_u32(smem) + warp * NST * STAGE_BYTES;
    const int* bt = block_table + (i64)b * bt_stride;
    const i64 head_stride = (i64)page_size * D;            // one (page, KV head) chunk
    const i64 page_stride = head_stride * num_kv_heads;
    const int r0 = lane / CH, c0 = lane % CH;               // lane copies chunk c0 of rows r0 + i * RSTEP

    auto issue = [&](int tile, int stage) {
        const u32 ks = ring + stage * STAGE_BYTES, vs = ks + TILE_BYTES;
#pragma unroll
        for (int i = 0; i < TILE / RSTEP; ++i) {
            const int r = r0 + i * RSTEP;
            const int pos = k_begin + tile * TILE + r;
            const bool ok = pos < k_end;
            i64 off = 0;
            if (ok) {
                int slot, in_page;
                if (page_shift >= 0) { slot = pos >> page_shift; in_page = pos & (page_size - 1); }
                else { slot = pos / page_size; in_page = pos - slot * page_size; }
                off = (i64)bt[slot] * page_stride + kvh * head_stride + (i64)in_page * D + c0 * CHUNK_ELEMS;
            }
            const u32 so = FP8 ? swz_line<ROW_BYTES>(r, c0) : swz<D>(r, c0);
            cp_async16(ks + so, k_cache + off, ok);
            cp_async16(vs + so, v_cache + off, ok);
        }
    };

    const int my_first = warp;                              // tiles warp, warp + NW, ...
    const int n_my = my_first < n_tiles ? (n_tiles - my_first + NW - 1) / NW : 0;

#pragma unroll
    for (int s = 0; s < NST - 1; ++s) {
        if (s < n_my) issue(my_first + s * NW, s);
        cp_async_commit();
    }

    // fp8: matrix i = lane / 8 of an ldmatrix.x4 is keys 8 (i & 1) .. + 7 of chunk i / 2, for K and V alike
    const u32 k_lane = FP8 ? swz_line<ROW_BYTES>((((lane >> 3) & 1) << 3) + (lane & 7), lane >> 4)
                           : swz<D>(((lane >> 4) << 3) + (lane & 7), (lane >> 3) & 1);
    const u32 v_lane = FP8 ? k_lane : swz<D>((((lane >> 3) & 1) << 3) + (lane & 7), lane >> 4);

    for (int it = 0; it < n_my; ++it) {
        const int nxt = it + NST - 1;
        if (nxt < n_my) issue(my_first + nxt * NW, nxt % NST);
        cp_async_commit();
        cp_async_wait<NST - 1>();
        __syncwarp();

        const int tile = my_first + it * NW;
        const u32 kb = ring + (it % NST) * STAGE_BYTES;
        const u32 vb = kb + TILE_BYTES;

        // ---- S = Q K^T over 16 keys (two 8-key column tiles)
        float s[MT][2][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
        if constexpr (FP8) {
#pragma unroll
            for (int kp = 0; kp < KSTEPS / 2; ++kp) {           // k-steps 2 kp and 2 kp + 1
                u32 r[4];
                ldsm_x4(r, kb + (k_lane ^ (kp << 5)));
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    u32 b0[2], b1[2];
                    widen_e4m3x4<T>(r[2 * h], b0[0], b0[1]);         // keys 0..7
                    widen_e4m3x4<T>(r[2 * h + 1], b1[0], b1[1]);     // keys 8..15
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(s[mt][0], qf[mt][2 * kp + h], b0[0], b0[1]);
                        mma16816<T>(s[mt][1], qf[mt][2 * kp + h], b1[0], b1[1]);
                    }
                }
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                u32 bf[4];
                ldsm_x4(bf, kb + (k_lane ^ (kk << 5)));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816<T>(s[mt][0], qf[mt][kk], bf[0], bf[1]);
                    mma16816<T>(s[mt][1], qf[mt][kk], bf[2], bf[3]);
                }
            }
        }
        const int key0 = k_begin + tile * TILE;
        if (key0 + TILE - 1 > hi_min || (MASK == MASK_LOCAL && key0 < lo_max)) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int key = key0 + nt * 8 + 2 * t4 + (e & 1), hh = e >> 1;
                        if (key > hi[mt][hh] || (MASK == MASK_LOCAL && key < lo[mt][hh])) s[mt][nt][e] = -RL_INF;
                    }
        }

        // ---- online softmax (log2 domain), per row
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
                float mx = fmaxf(fmaxf(s[mt][0][2 * hh], s[mt][0][2 * hh + 1]),
                                 fmaxf(s[mt][1][2 * hh], s[mt][1][2 * hh + 1]));
                mx = quad_max(mx);
                const float alpha = st[mt][hh].raise(mx * scale_log2);
                const float shift = st[mt][hh].shift();
                float rs = 0.f;
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const float p = online_weight(s[mt][nt][2 * hh + e], scale_log2, shift);
                        s[mt][nt][2 * hh + e] = p;
                        rs += p;
                    }
                st[mt][hh].add(alpha, rs);
#pragma unroll
                for (int dt = 0; dt < DTILE; ++dt) {
                    o_acc[mt][dt][2 * hh] *= alpha;
                    o_acc[mt][dt][2 * hh + 1] *= alpha;
                }
            }

        // ---- O += P V
        u32 pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            pa[mt][0] = Num<T>::pack2(s[mt][0][0], s[mt][0][1]);
            pa[mt][1] = Num<T>::pack2(s[mt][0][2], s[mt][0][3]);
            pa[mt][2] = Num<T>::pack2(s[mt][1][0], s[mt][1][1]);
            pa[mt][3] = Num<T>::pack2(s[mt][1][2], s[mt][1][3]);
        }
        if constexpr (FP8) {
            // chunk c (d 16c .. 16c + 15) -> n-tile 2c holds d 16c + 2n, n-tile 2c + 1 holds d 16c + 2n + 1
#pragma unroll
            for (int dp = 0; dp < D / 32; ++dp) {               // chunks 2 dp and 2 dp + 1
                u32 r[4];
                ldsm_x4_t(r, vb + (v_lane ^ (dp << 5)));
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    // bytes (key 2t: d 2g, 2g+1; key 2t+1: d 2g, 2g+1) -> (d 2g: keys 2t, 2t+1; d 2g+1: ...)
                    u32 lo[2], hi[2];                               // [d even, d odd]
                    widen_e4m3x4<T>(__byte_perm(r[2 * h], 0, 0x3120), lo[0], lo[1]);       // keys 0..7
                    widen_e4m3x4<T>(__byte_perm(r[2 * h + 1], 0, 0x3120), hi[0], hi[1]);   // keys 8..15
                    const int c = 2 * dp + h;
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(o_acc[mt][2 * c], pa[mt], lo[0], hi[0]);
                        mma16816<T>(o_acc[mt][2 * c + 1], pa[mt], lo[1], hi[1]);
                    }
                }
            }
        } else {
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                u32 bf[4];
                ldsm_x4_t(bf, vb + (v_lane ^ (dp << 5)));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816<T>(o_acc[mt][2 * dp], pa[mt], bf[0], bf[1]);
                    mma16816<T>(o_acc[mt][2 * dp + 1], pa[mt], bf[2], bf[3]);
                }
            }
        }
        __syncwarp();   // the stage is refilled by the next iteration's issue
    }
    cp_async_wait<0>();

    // ---- merge the NW warp states through shared memory (the rings are free now)
    __syncthreads();
    float* sO = reinterpret_cast<float*>(smem);             // [NW][ROWS][D]
    float* sM = sO + NW * ROWS * D;                         // [NW][ROWS]
    float* sL = sM + NW * ROWS;                             // [NW][ROWS]
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const int row = mt * 16 + g + 8 * hh;
            const float l = quad_sum(st[mt][hh].l);
            if (t4 == 0) {
                sM[warp * ROWS + row] = st[mt][hh].m;
                sL[warp * ROWS + row] = l;
            }
            if constexpr (FP8) {                                   // this lane holds d 16c + 4t .. + 3
                float* dst = sO + (warp * ROWS + row) * D + 4 * t4;
#pragma unroll
                for (int c = 0; c < D / 16; ++c)
                    *reinterpret_cast<float4*>(dst + c * 16) =
                        make_float4(o_acc[mt][2 * c][2 * hh], o_acc[mt][2 * c + 1][2 * hh],
                                    o_acc[mt][2 * c][2 * hh + 1], o_acc[mt][2 * c + 1][2 * hh + 1]);
            } else {
                float* dst = sO + (warp * ROWS + row) * D + 2 * t4;
#pragma unroll
                for (int dt = 0; dt < DTILE; ++dt)
                    *reinterpret_cast<float2*>(dst + dt * 8) = make_float2(o_acc[mt][dt][2 * hh], o_acc[mt][dt][2 * hh + 1]);
            }
        }
    __syncthreads();

    for (int id = threadIdx.x; id < nrows * (D / 4); id += NW * 32) {
        const int row = id / (D / 4), c4 = id % (D / 4);
        OnlineState total = OnlineState::empty();         // the NW warps' states merged in turn
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int w = 0; w < NW; ++w) {
            float s_old, s_new;                               // s_new = 0 for a warp that saw no key
            total = merge(total, OnlineState{sM[w * ROWS + row], sL[w * ROWS + row]}, s_old, s_new);
            const float4 x = *reinterpret_cast<const float4*>(sO + (w * ROWS + row) * D + c4 * 4);
            acc.x = acc.x * s_old + s_new * x.x; acc.y = acc.y * s_old + s_new * x.y;
            acc.z = acc.z * s_old + s_new * x.z; acc.w = acc.w * s_old + s_new * x.w;
        }
        const int t = token_of(row), head = head_of(row, t);
        const float num = (!SPLIT || split == 0) ? add_sink(total, sinks, head) : 1.f;   // the sink once
        float inv, lse;
        total.finish(FP8 ? v_scale * num : num, inv, lse);
        const i64 bqh = ((i64)b * q_len + t) * num_heads + head;          // [B, q_len, h] row
        if (SPLIT) {
            const i64 bh = (i64)split * batch * q_len * num_heads + bqh;
            *reinterpret_cast<float4*>(static_cast<float*>(out) + bh * D + c4 * 4) =
                make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
            if (c4 == 0) out_lse[bh] = lse;
        } else {
            const i64 bh = bqh;
            Pack<T, 4> pk;
            pk.v[0] = Num<T>::from_float(acc.x * inv);
            pk.v[1] = Num<T>::from_float(acc.y * inv);
            pk.v[2] = Num<T>::from_float(acc.z * inv);
            pk.v[3] = Num<T>::from_float(acc.w * inv);
            *reinterpret_cast<Pack<T, 4>*>(static_cast<T*>(out) + bh * D + c4 * 4) = pk;
            if (out_lse && c4 == 0) out_lse[bh] = lse;
        }
    }
}
