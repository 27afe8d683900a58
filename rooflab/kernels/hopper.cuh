#pragma once
// rooflab kernels: Hopper (sm_90a) device helpers shared by flash_fwd_hopper.cu, flash_fwd_hopper_ws.cu,
// mla_decode_hopper.cu and wgmma_probe.cu: wgmma descriptors and wrappers, the 128-byte-swizzled [rows x 128] tile layout
// and its cp.async fill, mbarriers and named barriers, and the per-tile mask / softmax / rescale / store
// steps on the wgmma accumulator layout. Inlined by the Python loader like common.cuh.
//
// Shared layout of a [rows x 128] tile: two column blocks of 64 elements (128 bytes a row); in
// each block row r's 16-byte chunk c sits at chunk c ^ (r % 8) (the 128-byte swizzle, which the
// hardware applies to address bits 4-6 from bits 7-9; tiles start on 1024-byte boundaries).
#include "common.cuh"

namespace rl {
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
    static RL_DEV void ss_n32(float (&d)[16], u64 a, u64 b, int scale_d) { \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n" \
            " wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " " \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, " \
            "%16, %17, p, 1, 1, 0, 0;\n}\n" \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
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

// Mask the keys a row does not see (common.cuh's MASK and vis; keys past Tk always) on accumulator S
// of a tile starting at key n0; row_lo is the thread's first row (its second is row_lo + 8).
template <int MASK, int NS>
RL_DEV void mask_tile(float (&s)[NS], int n0, int row_lo, int t4, int Tk, int offset, const Visibility& vis) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int pos = row_lo + 8 * h + offset;
        const int lo = vis.lo<MASK>(pos), hi = min(vis.hi<MASK>(pos), Tk - 1);
#pragma unroll
        for (int i = 0; i < NS / 4; ++i)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int key = n0 + i * 8 + 2 * t4 + e;
                if ((MASK == MASK_LOCAL && key < lo) || key > hi) s[4 * i + 2 * h + e] = -RL_INF;
            }
    }
}

// Whether the tile of BN keys at n0 needs mask_tile for a warpgroup whose rows sit at key positions
// pos0 .. pos0 + 63: it reaches past Tk or past the first row, or starts before the last row's first key.
template <int MASK, int BN>
RL_DEV bool tile_needs_mask(int n0, int pos0, int Tk, const Visibility& vis) {
    return (n0 + BN > Tk) || (MASK != MASK_NONE && n0 + BN - 1 > pos0) ||
           (MASK == MASK_LOCAL && n0 < vis.first_key(pos0 + 63));
}

// Online softmax over a thread's two rows (h = 0: row_lo, h = 1: row_lo + 8) in the log2
// domain: s becomes P (fp32), alpha the factor that rescales what O held; st.l is a per-lane partial.
template <int NS>
RL_DEV void softmax_tile(float (&s)[NS], OnlineState (&st)[2], float (&alpha)[2], float scale_log2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = -RL_INF;
#pragma unroll
        for (int i = 0; i < NS / 4; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
        mx = quad_max(mx);
        alpha[h] = st[h].raise(mx * scale_log2);
        const float shift = st[h].shift();
        float rs = 0.f;
#pragma unroll
        for (int i = 0; i < NS / 4; ++i)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const float p = online_weight(s[4 * i + 2 * h + e], scale_log2, shift);
                s[4 * i + 2 * h + e] = p;
                rs += p;
            }
        st[h].add(alpha[h], rs);
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

// Normalise and write O (u32 pairs) and the natural-log LSE, the sink (if any) in the denominator;
// a row that saw no key (and has no sink) gets 0, -inf.
template <typename T>
RL_DEV void store_out(const float (&oacc)[64], const OnlineState (&st)[2],
                      T* o_bh, float* lse_bh, int row_lo, int t4, int Tq, const float* sinks, int head) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        OnlineState row_st = st[h];
        row_st.l = quad_sum(row_st.l);
        const float num = add_sink(row_st, sinks, head);
        float inv, lse_row;
        row_st.finish(num, inv, lse_row);
        const int row = row_lo + 8 * h;
        if (row < Tq) {
            T* orow = o_bh + (i64)row * 128;
#pragma unroll
            for (int dt = 0; dt < 16; ++dt)
                *reinterpret_cast<u32*>(orow + dt * 8 + 2 * t4) =
                    Num<T>::pack2(oacc[4 * dt + 2 * h] * inv, oacc[4 * dt + 2 * h + 1] * inv);
            if (lse_bh && t4 == 0) lse_bh[row] = lse_row;
        }
    }
}

}  // namespace hop

}  // namespace rl
