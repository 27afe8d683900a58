// Flash attention forward for Hopper (sm_90a), warp-specialized: the default flash kernel on sm_90 for d 128.
//
// Same contract as flash_fwd.cu: q [B, h, Tq, 128], k/v [B, h_kv, Tk, 128] (contiguous fp16 or
// bf16), o like q, lse fp32 [B, h, Tq] (natural log; may be null). Query head `head` reads KV head
// head / group; MASK and vis as in flash_fwd.cu (causal: query i sees key j iff j <= i + (Tk - Tq);
// MASK_LOCAL adds a window and / or chunk, and the CTA streams only the key tiles from its first
// row's first key to its last row); sinks fp32 [h] or null.
// S = Q K^T and O += P V are wgmma m64n128k16 as in flash_fwd_hopper.cu (helpers in hopper.cuh).
#include "hopper.cuh"
using namespace rl;

// Warp-specialized form: two consumer warpgroups (128 query rows) and a producer warpgroup. The
// producer streams K/V tiles by cp.async into an NST-stage ring; each stage has a "full"
// mbarrier (the producer's 128 threads arrive as their copies land) and an "empty" one (the 256
// consumer threads arrive once their MMAs on it are done), so no CTA-wide barrier runs per tile
// and the two consumers drift apart. Named barriers then make them take turns issuing S = Q K^T
// (pingpong): one warpgroup's softmax runs while the other's MMAs use the tensor cores.
// setmaxnreg moves registers from the producer (32) to the consumers (232): 384 threads at entry
// would otherwise cap everyone at 168. PIPE: not implemented here (must be false).
template <typename T, int BN, int NST, bool PIPE, int MASK>
__global__ void __launch_bounds__(384, 1)
flash_fwd_hopper_ws(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    T* __restrict__ o, float* __restrict__ lse,
                    int Tq, int Tk, int num_heads, int group, float scale_log2,
                    const float* __restrict__ sinks, int window, int chunk)
{
    const Visibility vis{window, chunk};
    constexpr bool CAUSAL = MASK != MASK_NONE;
    constexpr int D = 128, BM = 128, NS = BN / 2, KS = BN / 16;
    constexpr u32 Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2;
    constexpr int BAR_Q = 1, BAR_TURN = 2;               // named barriers (0 is __syncthreads)
    static_assert(!PIPE, "the warp-specialized kernel issues S and P V in separate steps");

    extern __shared__ __align__(1024) unsigned char smem[];
    const u32 sQ = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 sK = sQ + Q_BYTES;                       // NST stages of K, then NST of V
    const u32 sV = sK + NST * KV_BYTES;
    const u32 full = sV + NST * KV_BYTES, empty = full + NST * 8;

    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int qtile = CAUSAL ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int head = blockIdx.y, b = blockIdx.z;
    const int kvh = head / group;
    const int q0 = qtile * BM;
    const int offset = Tk - Tq;
    const i64 q_off = ((i64)b * num_heads + head) * (i64)Tq * D;
    const i64 kv_off = ((i64)b * (num_heads / group) + kvh) * (i64)Tk * D;

    int kv_end = Tk;
    if (CAUSAL) kv_end = min(Tk, q0 + BM + offset);
    const int kv_begin = vis.lo<MASK>(q0 + offset);
    const int j0 = kv_begin / BN;                      // ring slot j holds key tile j0 + j
    const int n_tiles = kv_end > kv_begin ? (kv_end + BN - 1) / BN - j0 : 0;

    if (tid == 0) {
#pragma unroll
        for (int st = 0; st < NST; ++st) {
            hop::mbar_init(full + st * 8, 128);
            hop::mbar_init(empty + st * 8, 256);
        }
    }
    __syncthreads();

    if (wg == 2) {
        // ---- producer warpgroup: the K and V tiles of the ring, as load_tile maps them
        asm volatile("setmaxnreg.dec.sync.aligned.u32 32;\n" ::: "memory");
        const int ptid = tid - 256;
        for (int j = 0; j < n_tiles; ++j) {
            const int st = j % NST;
            if (j >= NST) hop::mbar_wait(empty + st * 8, ((j / NST) - 1) & 1);
            const int n0 = (j0 + j) * BN;
            hop::load_tile<BN, 128>(sK + st * KV_BYTES, k + kv_off + (i64)n0 * D, Tk - n0, ptid);
            hop::load_tile<BN, 128>(sV + st * KV_BYTES, v + kv_off + (i64)n0 * D, Tk - n0, ptid);
            hop::mbar_arrive_cp_async(full + st * 8);
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");

    // ---- consumers: Q by all 256 threads, then each warpgroup on its 64 rows
    hop::load_tile<BM, 256>(sQ, q + q_off + (i64)q0 * D, Tq - q0, tid);
    cp_async_commit();
    cp_async_wait<0>();
    hop::fence_proxy_async();
    hop::bar_sync(BAR_Q, 256);

    const int row_lo = q0 + wg * 64 + warp * 16 + g;
    const u64 dq = hop::desc(sQ + wg * 64 * 128, 16, 1024);
    const u64 dk = hop::desc(sK, 16, 1024);
    const u64 dv = hop::desc(sV, BN * 128, 1024);

    float oacc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) oacc[i] = 0.f;
    OnlineState st[2] = {OnlineState::empty(), OnlineState::empty()};
    u32 pa[KS][4];
    float s[NS];

    auto issue_s = [&](int j) {
        const u64 dkj = dk + (((j % NST) * KV_BYTES) >> 4);
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
            hop::SsN<BN>::template run<T>(s, dq + (((kk >> 2) * BM * 128 + (kk & 3) * 32) >> 4),
                                          dkj + (((kk >> 2) * BN * 128 + (kk & 3) * 32) >> 4), kk);
    };
    auto issue_pv = [&](int j) {
        const u64 dvj = dv + (((j % NST) * KV_BYTES) >> 4);
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) hop::Wgmma<T>::rs_n128(oacc, pa[kk], dvj + ((kk * 2048) >> 4));
    };
    auto softmax = [&](int j, float (&alpha)[2]) {
        const int n0 = (j0 + j) * BN;
        if (hop::tile_needs_mask<MASK, BN>(n0, q0 + wg * 64 + offset, Tk, vis))
            hop::mask_tile<MASK>(s, n0, row_lo, t4, Tk, offset, vis);
        hop::softmax_tile(s, st, alpha, scale_log2);
    };
    auto wait_full = [&](int j) {
        hop::mbar_wait(full + (j % NST) * 8, (j / NST) & 1);
        hop::fence_proxy_async();
    };
    const int my_turn = BAR_TURN + wg, other_turn = BAR_TURN + (wg ^ 1);
    if (wg == 1) hop::bar_arrive(other_turn, 256);      // warpgroup 0 issues first

    {
        for (int j = 0; j < n_tiles; ++j) {
            float alpha[2];
            wait_full(j);
            hop::bar_sync(my_turn, 256);
            hop::fence();
            issue_s(j);
            hop::commit();
            hop::bar_arrive(other_turn, 256);
            hop::wait<0>();
            hop::pin(s);
            softmax(j, alpha);
            hop::rescale_pack<T>(oacc, pa, s, alpha);
            hop::fence();
            issue_pv(j);
            hop::commit();
            hop::wait<0>();
            hop::pin(oacc);
            hop::mbar_arrive(empty + (j % NST) * 8);
        }
    }
    if (wg == 0) hop::bar_sync(my_turn, 256);           // take warpgroup 1's last turn signal

    float* lse_bh = lse ? lse + ((i64)b * num_heads + head) * Tq : nullptr;
    hop::store_out<T>(oacc, st, o + q_off, lse_bh, row_lo, t4, Tq, sinks, head);
}
