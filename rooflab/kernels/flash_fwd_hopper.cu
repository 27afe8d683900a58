// Flash attention forward for Hopper (sm_90a): warpgroup MMA (wgmma.mma_async), d = 128; the plain form
// (all warps copy and compute; PIPE overlaps tile j's softmax with tile j - 1's P V). The default on
// sm_90 is the warp-specialized form in flash_fwd_hopper_ws.cu; helpers are in hopper.cuh.
//
// Same contract as flash_fwd.cu: q [B, h, Tq, 128], k/v [B, h_kv, Tk, 128] (contiguous fp16 or
// bf16), o like q, lse fp32 [B, h, Tq] (natural log; may be null). Query head `head` reads KV head
// head / group; causal: query i sees key j iff j <= i + (Tk - Tq).
//
// A CTA holds BM = 64 * NWG query rows; warpgroup w (4 consecutive warps) owns rows 64w..64w+63
// and the whole head dimension, the M side of every wgmma (m64). Per KV tile of BN keys:
//   S = Q K^T    wgmma m64nBNk16, both operands in shared memory (K-major, 128-byte swizzle)
//   online softmax in fp32 registers on the accumulator layout (log2 domain, as flash_fwd.cu)
//   P -> fp16/bf16 in registers, the A operand of O += P V (wgmma m64n128k16, register A;
//   V read from shared memory as an MN-major B, the same swizzled layout as K)
// PIPE: S of tile j is issued together with P V of tile j - 1, so tile j's softmax runs while the
// tensor cores do the previous P V (three V stages, since V of j - 1 is read during iteration j).
// Tiles come in by cp.async (16-byte copies straight into the swizzled layout), one tile ahead,
// one CTA barrier a tile; fence.proxy.async makes the copies visible to the tensor cores.
#include "hopper.cuh"
using namespace rl;

// NWG warpgroups (BM = 64 NWG rows), BN keys a tile, PIPE (see above), VSWAP: V's descriptor
// with leading and stride offsets exchanged (a layout probe; 0 is the documented reading).
// MASK: MASK_NONE or MASK_CAUSAL (windows and chunks run in the warp-specialized kernel); sinks as there.
template <typename T, int NWG, int BN, bool PIPE, int MASK, int VSWAP>
__global__ void __launch_bounds__(NWG * 128, 1)
flash_fwd_hopper(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                 T* __restrict__ o, float* __restrict__ lse,
                 int Tq, int Tk, int num_heads, int group, float scale_log2,
                 const float* __restrict__ sinks, int window, int chunk)
{
    const Visibility vis{window, chunk};
    static_assert(MASK != MASK_LOCAL, "windows and chunks: flash_fwd_hopper_ws");
    constexpr bool CAUSAL = MASK == MASK_CAUSAL;
    constexpr int D = 128, BM = 64 * NWG, NT = NWG * 128;
    constexpr int NS = BN / 2;                    // S accumulators a thread
    constexpr int KS = BN / 16;                   // k-steps of P V
    constexpr u32 Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2;
    constexpr int V_STAGES = PIPE ? 3 : 2;
    static_assert(BN == 64 || BN == 128, "BN is 64 or 128");

    extern __shared__ __align__(1024) unsigned char smem[];
    const u32 sQ = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 sK = sQ + Q_BYTES;                  // 2 stages
    const u32 sV = sK + 2 * KV_BYTES;             // V_STAGES stages

    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int qtile = CAUSAL ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;  // longest first
    const int head = blockIdx.y, b = blockIdx.z;
    const int num_kv_heads = num_heads / group;
    const int kvh = head / group;
    const int q0 = qtile * BM;
    const int row_lo = q0 + wg * 64 + warp * 16 + g;   // this thread's rows: row_lo, row_lo + 8
    const int offset = Tk - Tq;

    const i64 q_off = ((i64)b * num_heads + head) * (i64)Tq * D;
    const i64 kv_off = ((i64)b * num_kv_heads + kvh) * (i64)Tk * D;
    const T* kg = k + kv_off;
    const T* vg = v + kv_off;

    int kv_end = Tk;
    if (CAUSAL) kv_end = min(Tk, q0 + BM + offset);
    const int n_tiles = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;

    auto load_kv = [&](int j) {
        const int n0 = j * BN;
        hop::load_tile<BN, NT>(sK + (j & 1) * KV_BYTES, kg + (i64)n0 * D, Tk - n0, tid);
        hop::load_tile<BN, NT>(sV + (j % V_STAGES) * KV_BYTES, vg + (i64)n0 * D, Tk - n0, tid);
    };
    hop::load_tile<BM, NT>(sQ, q + q_off + (i64)q0 * D, Tq - q0, tid);
    if (n_tiles > 0) load_kv(0);
    cp_async_commit();

    // Descriptors (start address advanced per k-step by adding offset >> 4 to the low bits).
    // Q / K: K-major, 8-row groups 1024 B apart (SBO); k-step kk is column block kk / 4,
    // 32 bytes * (kk % 4) into the swizzled row. V: MN-major, 8-key groups 1024 B apart,
    // the two 64-wide d blocks BN * 128 B apart; k-step kk (16 keys) is 2048 B on.
    const u64 dq = hop::desc(sQ + wg * 64 * 128, 16, 1024);
    const u64 dk = hop::desc(sK, 16, 1024);
    const u64 dv = VSWAP ? hop::desc(sV, 1024, BN * 128) : hop::desc(sV, BN * 128, 1024);

    float oacc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) oacc[i] = 0.f;
    OnlineState st[2] = {OnlineState::empty(), OnlineState::empty()};
    u32 pa[KS][4];
    float s[NS];

    auto issue_pv = [&](int j) {
        const u64 dvj = dv + (((j % V_STAGES) * KV_BYTES) >> 4);
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) hop::Wgmma<T>::rs_n128(oacc, pa[kk], dvj + ((kk * 2048) >> 4));
    };

    // Tile j's copies are in and every warpgroup is done with tile j - 1; start tile j + 1.
    auto next_tile = [&](int j) {
        cp_async_wait<0>();
        hop::fence_proxy_async();
        __syncthreads();
        if (j + 1 < n_tiles) load_kv(j + 1);
        cp_async_commit();
    };
    auto issue_s = [&](int j) {
        const u64 dkj = dk + (((j & 1) * KV_BYTES) >> 4);
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
            hop::SsN<BN>::template run<T>(s, dq + (((kk >> 2) * BM * 128 + (kk & 3) * 32) >> 4),
                                          dkj + (((kk >> 2) * BN * 128 + (kk & 3) * 32) >> 4), kk);
    };
    auto softmax = [&](int j, float (&alpha)[2]) {
        const int n0 = j * BN;
        if (hop::tile_needs_mask<MASK, BN>(n0, q0 + wg * 64 + offset, Tk, vis))
            hop::mask_tile<MASK>(s, n0, row_lo, t4, Tk, offset, vis);
        hop::softmax_tile(s, st, alpha, scale_log2);
    };
    auto rescale_pack = [&](const float (&alpha)[2]) { hop::rescale_pack<T>(oacc, pa, s, alpha); };

    if (PIPE) {
        // S of tile j goes out with P V of tile j - 1; tile j's softmax overlaps that P V.
        if (n_tiles > 0) {
            float alpha[2];
            next_tile(0);
            hop::fence();
            issue_s(0);
            hop::commit();
            hop::wait<0>();
            hop::pin(s);
            softmax(0, alpha);
            rescale_pack(alpha);
        }
        for (int j = 1; j < n_tiles; ++j) {
            float alpha[2];
            next_tile(j);
            hop::fence();
            issue_s(j);
            hop::commit();
            issue_pv(j - 1);
            hop::commit();
            hop::wait<1>();
            hop::pin(s);
            softmax(j, alpha);
            hop::wait<0>();
            hop::pin(oacc);
            rescale_pack(alpha);
        }
        if (n_tiles > 0) {
            hop::fence();
            issue_pv(n_tiles - 1);
            hop::commit();
            hop::wait<0>();
            hop::pin(oacc);
        }
    } else {
        for (int j = 0; j < n_tiles; ++j) {
            float alpha[2];
            next_tile(j);
            hop::fence();
            issue_s(j);
            hop::commit();
            hop::wait<0>();
            hop::pin(s);
            softmax(j, alpha);
            rescale_pack(alpha);
            hop::fence();
            issue_pv(j);
            hop::commit();
            hop::wait<0>();
            hop::pin(oacc);
        }
    }
    cp_async_wait<0>();

    float* lse_bh = lse ? lse + ((i64)b * num_heads + head) * Tq : nullptr;
    hop::store_out<T>(oacc, st, o + q_off, lse_bh, row_lo, t4, Tq, sinks, head);
}
