// Flash attention forward for Hopper (sm_90a): warpgroup MMA (wgmma.mma_async), d = 128.
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
//
// Shared layout of a [rows x 128] tile: two column blocks of 64 elements (128 bytes a row); in
// each block row r's 16-byte chunk c sits at chunk c ^ (r % 8) (the 128-byte swizzle, which the
// hardware applies to address bits 4-6 from bits 7-9; tiles start on 1024-byte boundaries).
#include "common.cuh"
using namespace rl;

typedef unsigned long long u64;

namespace hop {

// Shared-memory matrix descriptor: start address, leading / stride byte offsets (all >> 4),
// swizzle mode 1 = 128 B in bits 62-63, base offset 0 (tiles are 1024-byte aligned).
RL_DEV u64 desc(u32 addr, u32 lbo, u32 sbo) {
    return (u64)((addr & 0x3FFFFu) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}

RL_DEV void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
RL_DEV void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> RL_DEV void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
// cp.async writes are generic-proxy writes; the tensor cores read through the async proxy.
RL_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Pin registers in program order around the asynchronous MMAs (the compiler must not read an
// accumulator between issue and wait, nor move work on it across the wait).
template <int N> RL_DEV void pin(float (&x)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(x[i]) :: "memory");
}
template <int N> RL_DEV void pin(u32 (&x)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(x[i][e]) :: "memory");
}

// wgmma wrappers: ss = both operands from shared memory (K-major), rs = A from registers and
// B MN-major (transposed) from shared memory. Accumulator of m64nN: N / 2 floats a thread,
// element 4i + 2h + e at row 16 * warp + lane / 4 + 8h, column 8i + 2 (lane % 4) + e.
template <typename T> struct Wgmma;
#define RL_WGMMA_BODY \
    static RL_DEV void ss_n128(float (&d)[64], u64 a, u64 b, int scale_d) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
            "%64, %65, p, 1, 1, 0, 0;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
            : "l"(a), "l"(b), "r"(scale_d)); \
    } \
    static RL_DEV void ss_n64(float (&d)[32], u64 a, u64 b, int scale_d) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
            "%32, %33, p, 1, 1, 0, 0;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
            : "l"(a), "l"(b), "r"(scale_d)); \
    } \
    static RL_DEV void rs_n128(float (&d)[64], const u32 (&a)[4], u64 b) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
            "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1)); \
    } \

#define TY "f16"
template <> struct Wgmma<__half> { RL_WGMMA_BODY };
#undef TY
#define TY "bf16"
template <> struct Wgmma<__nv_bfloat16> { RL_WGMMA_BODY };
#undef TY

template <int BN> struct SsN;
template <> struct SsN<128> { template <typename T> static RL_DEV void run(float (&d)[64], u64 a, u64 b, int s) { Wgmma<T>::ss_n128(d, a, b, s); } };
template <> struct SsN<64> { template <typename T> static RL_DEV void run(float (&d)[32], u64 a, u64 b, int s) { Wgmma<T>::ss_n64(d, a, b, s); } };

// Byte offset of (row, 16-byte chunk c in 0..15) in a swizzled [ROWS x 128] tile.
template <int ROWS> RL_DEV u32 tile_off(int row, int c) {
    return static_cast<u32>((c >> 3) * (ROWS * 128) + row * 128 + (((c & 7) ^ (row & 7)) << 4));
}

// Copy rows [row0, row0 + ROWS) of a [*, 128] matrix into a swizzled tile; rows at or past
// `valid` are zero-filled. Thread tid moves chunk tid % 16 of rows tid / 16 + i * (NT / 16);
// NT / 16 is a multiple of 8, so every row of a thread has the same swizzle phase.
template <int ROWS, int NT, typename T>
RL_DEV void load_tile(u32 dst, const T* src, int valid, int tid) {
    constexpr int RSTEP = NT / 16;
    static_assert(RSTEP % 8 == 0, "copy rows must keep row % 8 fixed");
    const int r0 = tid >> 4, c = tid & 15;
    const u32 d0 = dst + tile_off<ROWS>(r0, c);
    const T* s0 = src + (i64)r0 * 128 + c * 8;
#pragma unroll
    for (int i = 0; i < (ROWS + RSTEP - 1) / RSTEP; ++i) {
        const int r = r0 + i * RSTEP;
        if (ROWS % RSTEP == 0 || r < ROWS)
            cp_async16(d0 + i * RSTEP * 128, s0 + (i64)i * RSTEP * 128, r < valid);
    }
}

// mbarriers (64-bit, in shared memory) and named CTA barriers, for the warp-specialized kernel.
RL_DEV void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
RL_DEV void mbar_arrive(u32 bar) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" :: "r"(bar) : "memory");
}
// Arrives once this thread's earlier cp.async copies have landed (the count was set for it).
RL_DEV void mbar_arrive_cp_async(u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
}
RL_DEV void mbar_wait(u32 bar, u32 parity) {
    u32 done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
RL_DEV void bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory"); }
RL_DEV void bar_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(count) : "memory"); }

// Mask keys past Tk and, if CAUSAL, keys after the query (row + offset), on accumulator S of a
// tile starting at key n0; row_lo is the thread's first row (its second is row_lo + 8).
template <bool CAUSAL, int NS>
RL_DEV void mask_tile(float (&s)[NS], int n0, int row_lo, int t4, int Tk, int offset) {
#pragma unroll
    for (int i = 0; i < NS; ++i) {
        const int row = row_lo + ((i >> 1) & 1) * 8;
        const int key = n0 + (i >> 2) * 8 + 2 * t4 + (i & 1);
        if (key >= Tk || (CAUSAL && key > row + offset)) s[i] = -RL_INF;
    }
}

// Online softmax over a thread's two rows (h = 0: row_lo, h = 1: row_lo + 8) in the log2
// domain: s becomes P (fp32), alpha the factor that rescales what O held; l is a per-lane partial.
template <int NS>
RL_DEV void softmax_tile(float (&s)[NS], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                         float scale_log2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = -RL_INF;
#pragma unroll
        for (int i = 0; i < NS / 4; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
        mx = quad_max(mx);
        const float m_new = fmaxf(m_run[h], mx * scale_log2);
        const float m_use = (m_new == -RL_INF) ? 0.f : m_new;     // nothing seen yet: no NaN
        alpha[h] = ex2(m_run[h] - m_use);
        m_run[h] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int i = 0; i < NS / 4; ++i)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const float p = ex2(fmaf(s[4 * i + 2 * h + e], scale_log2, -m_use));
                s[4 * i + 2 * h + e] = p;
                rs += p;
            }
        l_run[h] = l_run[h] * alpha[h] + rs;
    }
}

// O *= alpha, and P into the A-fragment layout of m64k16 (the accumulator of keys 16kk.. is it).
template <typename T, int NS>
RL_DEV void rescale_pack(float (&oacc)[64], u32 (&pa)[NS / 8][4], const float (&s)[NS], const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) oacc[i] *= alpha[(i >> 1) & 1];
#pragma unroll
    for (int kk = 0; kk < NS / 8; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) pa[kk][e] = Num<T>::pack2(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
}

// Normalise and write O (u32 pairs) and the natural-log LSE; a row that saw no key gets 0, -inf.
template <typename T>
RL_DEV void store_out(const float (&oacc)[64], const float (&m_run)[2], const float (&l_run)[2],
                      T* o_bh, float* lse_bh, int row_lo, int t4, int Tq) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float l = quad_sum(l_run[h]);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        const int row = row_lo + 8 * h;
        if (row < Tq) {
            T* orow = o_bh + (i64)row * 128;
#pragma unroll
            for (int dt = 0; dt < 16; ++dt)
                *reinterpret_cast<u32*>(orow + dt * 8 + 2 * t4) =
                    Num<T>::pack2(oacc[4 * dt + 2 * h] * inv, oacc[4 * dt + 2 * h + 1] * inv);
            if (lse_bh && t4 == 0)
                lse_bh[row] = l > 0.f ? (m_run[h] + lg2(l)) * RL_LN2 : -RL_INF;
        }
    }
}

}  // namespace hop

// NWG warpgroups (BM = 64 NWG rows), BN keys a tile, PIPE (see above), VSWAP: V's descriptor
// with leading and stride offsets exchanged (a layout probe; 0 is the documented reading).
template <typename T, int NWG, int BN, bool PIPE, bool CAUSAL, int VSWAP>
__global__ void __launch_bounds__(NWG * 128, 1)
flash_fwd_hopper(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                 T* __restrict__ o, float* __restrict__ lse,
                 int Tq, int Tk, int num_heads, int group, float scale_log2)
{
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
    float m_run[2] = {-RL_INF, -RL_INF}, l_run[2] = {0.f, 0.f};
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
        if ((n0 + BN > Tk) || (CAUSAL && n0 + BN - 1 > q0 + wg * 64 + offset))
            hop::mask_tile<CAUSAL>(s, n0, row_lo, t4, Tk, offset);
        hop::softmax_tile(s, m_run, l_run, alpha, scale_log2);
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
    hop::store_out<T>(oacc, m_run, l_run, o + q_off, lse_bh, row_lo, t4, Tq);
}

// Warp-specialized form: two consumer warpgroups (128 query rows) and a producer warpgroup. The
// producer streams K/V tiles by cp.async into an NST-stage ring; each stage has a "full"
// mbarrier (the producer's 128 threads arrive as their copies land) and an "empty" one (the 256
// consumer threads arrive once their MMAs on it are done), so no CTA-wide barrier runs per tile
// and the two consumers drift apart. Named barriers then make them take turns issuing S = Q K^T
// (pingpong): one warpgroup's softmax runs while the other's MMAs use the tensor cores.
// setmaxnreg moves registers from the producer (32) to the consumers (232): 384 threads at entry
// would otherwise cap everyone at 168. PIPE: not implemented here (must be false).
template <typename T, int BN, int NST, bool PIPE, bool CAUSAL>
__global__ void __launch_bounds__(384, 1)
flash_fwd_hopper_ws(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    T* __restrict__ o, float* __restrict__ lse,
                    int Tq, int Tk, int num_heads, int group, float scale_log2)
{
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
    const int n_tiles = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;

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
            const int n0 = j * BN;
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
    float m_run[2] = {-RL_INF, -RL_INF}, l_run[2] = {0.f, 0.f};
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
        const int n0 = j * BN;
        if ((n0 + BN > Tk) || (CAUSAL && n0 + BN - 1 > q0 + wg * 64 + offset))
            hop::mask_tile<CAUSAL>(s, n0, row_lo, t4, Tk, offset);
        hop::softmax_tile(s, m_run, l_run, alpha, scale_log2);
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
    hop::store_out<T>(oacc, m_run, l_run, o + q_off, lse_bh, row_lo, t4, Tq);
}

// Layout probe (tests): one warpgroup, c1 [64 x 128] = a [64 x 128] . bk [128 x 128]^T through
// the shared-shared path (as S = Q K^T) and c2 [64 x 128] = a . bv [128 x 128] through the
// register-A path with bv MN-major (as O = P V), fp32 out, row-major.
template <typename T, int VSWAP>
__global__ void __launch_bounds__(128, 1)
wgmma_probe(const T* __restrict__ a, const T* __restrict__ bk, const T* __restrict__ bv,
            float* __restrict__ c1, float* __restrict__ c2)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const u32 sA = (smem_u32(smem) + 1023u) & ~1023u, sK = sA + 64 * 256, sV = sK + 128 * 256;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    hop::load_tile<64, 128>(sA, a, 64, tid);
    hop::load_tile<128, 128>(sK, bk, 128, tid);
    hop::load_tile<128, 128>(sV, bv, 128, tid);
    cp_async_commit();
    cp_async_wait<0>();
    hop::fence_proxy_async();
    __syncthreads();
    float d1[64], d2[64];
    u32 af[8][4];
    const u32* a32 = reinterpret_cast<const u32*>(a);
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) {   // a0 (g, 2t), a1 (g + 8, 2t), a2 (g, 2t + 8), a3 (g + 8, 2t + 8)
            const int row = warp * 16 + g + (e & 1) * 8, col = kk * 16 + 2 * t4 + (e >> 1) * 8;
            af[kk][e] = a32[(row * 128 + col) / 2];
        }
#pragma unroll
    for (int i = 0; i < 64; ++i) d2[i] = 0.f;
    const u64 da = hop::desc(sA, 16, 1024), dk = hop::desc(sK, 16, 1024);
    const u64 dv = VSWAP ? hop::desc(sV, 1024, 128 * 128) : hop::desc(sV, 128 * 128, 1024);
    hop::fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
        hop::Wgmma<T>::ss_n128(d1, da + (((kk >> 2) * 64 * 128 + (kk & 3) * 32) >> 4),
                          dk + (((kk >> 2) * 128 * 128 + (kk & 3) * 32) >> 4), kk);
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) hop::Wgmma<T>::rs_n128(d2, af[kk], dv + ((kk * 2048) >> 4));
    hop::commit();
    hop::wait<0>();
    hop::pin(d1);
    hop::pin(d2);
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        const int row = warp * 16 + g + ((i >> 1) & 1) * 8, col = (i >> 2) * 8 + 2 * t4 + (i & 1);
        c1[row * 128 + col] = d1[i];
        c2[row * 128 + col] = d2[i];
    }
}
