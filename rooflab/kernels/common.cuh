#pragma once
// rooflab kernels: shared device helpers (number formats, PTX wrappers, tile swizzle).
// Inlined by the Python loader into each kernel source, so NVRTC needs no include path.
// Everything here is plain CUDA C++ plus inline PTX for sm_80 and newer
// (mma.sync m16n8k16, ldmatrix, cp.async), and for sm_89 and newer the e4m3 widening that only
// fp8 KV instantiations use; no WMMA, no CUTLASS, no std headers.

#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace rl {

typedef unsigned int u32;
typedef long long i64;

#define RL_DEV __device__ __forceinline__

// ---------------------------------------------------------------- number formats
// One traits struct per storage type: scalar conversion, and packing two fp32
// values into the 32-bit register layout mma.sync takes for an A or B operand pair.
template <typename T> struct Num;

template <> struct Num<__half> {
    static RL_DEV float to_float(__half x) { return __half2float(x); }
    static RL_DEV __half from_float(float x) { return __float2half_rn(x); }
    static RL_DEV u32 pack2(float lo, float hi) {
        union { __half2 h; u32 u; } c; c.h = __floats2half2_rn(lo, hi); return c.u;
    }
    static RL_DEV float2 unpack2(u32 u) {
        union { __half2 h; u32 u; } c; c.u = u; return __half22float2(c.h);
    }
};

template <> struct Num<__nv_bfloat16> {
    static RL_DEV float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
    static RL_DEV __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
    static RL_DEV u32 pack2(float lo, float hi) {
        union { __nv_bfloat162 h; u32 u; } c; c.h = __floats2bfloat162_rn(lo, hi); return c.u;
    }
    static RL_DEV float2 unpack2(u32 u) {
        union { __nv_bfloat162 h; u32 u; } c; c.u = u; return __bfloat1622float2(c.h);
    }
};

template <> struct Num<float> {
    static RL_DEV float to_float(float x) { return x; }
    static RL_DEV float from_float(float x) { return x; }
};

// N elements of T moved as one aligned vector access (16 bytes when sizeof(T) * N == 16).
template <typename T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };

// ---------------------------------------------------------------- fp8 (e4m3) storage
// A KV-cache element stored as one e4m3 byte (1 sign bit, 4 exponent bits with bias 7, 3
// mantissa bits; 0x7F and 0xFF are NaN, there is no inf). A storage tag only: kernels copy
// the bytes and widen them to fp16 / bf16 on the way into an mma.
struct e4m3 { unsigned char bits; };

// Four e4m3 bytes -> two 16-bit pairs: bytes 0, 1 -> lo, bytes 2, 3 -> hi (lower byte in the
// lower half, the order mma operands pack pairs). cvt.rn.f16x2.e4m3x2 (sm_89 and newer) is exact,
// since every e4m3 value is an fp16 value (2^-9 .. 448), and keeps NaN; bf16 goes through fp32,
// exact again (e4m3 has fewer mantissa bits and a narrower range than bf16).
template <typename T> RL_DEV void widen_e4m3x4(u32 x, u32& lo, u32& hi);
template <> RL_DEV void widen_e4m3x4<__half>(u32 x, u32& lo, u32& hi) {
    asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n"
        " cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h;\n}\n" : "=r"(lo), "=r"(hi) : "r"(x));
}
template <> RL_DEV void widen_e4m3x4<__nv_bfloat16>(u32 x, u32& lo, u32& hi) {
    u32 a, b;
    widen_e4m3x4<__half>(x, a, b);
    const float2 fa = Num<__half>::unpack2(a), fb = Num<__half>::unpack2(b);
    lo = Num<__nv_bfloat16>::pack2(fa.x, fa.y);
    hi = Num<__nv_bfloat16>::pack2(fb.x, fb.y);
}

// ---------------------------------------------------------------- special functions
RL_DEV float ex2(float x) {  // 2^x, ~2 ulp; ex2(-inf) = +0
    float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
RL_DEV float lg2(float x) {  // log2(x), x > 0
    float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
#define RL_LOG2E 1.4426950408889634f
#define RL_LN2 0.6931471805599453f
#define RL_INF __int_as_float(0x7f800000)

// ---------------------------------------------------------------- the online-softmax state
// One query row's softmax over the keys seen so far (FlashAttention-2's running max and sum; the
// recurrence of the source chapter "naive attention and online softmax", the merge of its section on
// the log-sum-exp state): m, the largest score seen, and l, the sum of e^(x - m) over those keys
// (a lane's share of its row where a row is spread over a quad). The output accumulator O stays in
// each kernel's own fragment layout; every update returns the factor that rescales it. Kernels keep
// scores in the log2 domain (pre-multiplied by scale * log2(e)), so E is ex2 there; the merge
// kernels work on natural-log LSEs (E = expf). A log-sum-exp L is the state (L, 1); the empty
// state is (-inf, 0), the identity of merge.
// E: the exponential of a state's domain, and the natural-log LSE of a state (m, l) in it.
struct Exp2 {
    static RL_DEV float exp(float x) { return ex2(x); }
    static RL_DEV float lse(float m, float l) { return (m + lg2(l)) * RL_LN2; }
};
struct ExpE {
    static RL_DEV float exp(float x) { return expf(x); }
    static RL_DEV float lse(float m, float l) { return m + logf(l); }
};

struct OnlineState {
    float m, l;

    static RL_DEV OnlineState empty() { return {-RL_INF, 0.f}; }
    static RL_DEV OnlineState of_lse(float lse) { return {lse, 1.f}; }
    RL_DEV void init() { m = -RL_INF; l = 0.f; }
    // What the scores of the current tile are shifted by: m, or 0 while the row has seen nothing
    // (so that -inf - -inf never appears).
    RL_DEV float shift() const { return m == -RL_INF ? 0.f : m; }
    // Take in a tile whose largest score is tile_max (log2 domain): m = max(m, tile_max); returns
    // alpha = 2^(m_old - m_new), the factor for l (applied in add) and for O (by the caller).
    RL_DEV float raise(float tile_max) {
        const float m_new = fmaxf(m, tile_max);
        const float alpha = ex2(m - (m_new == -RL_INF ? 0.f : m_new));
        m = m_new;
        return alpha;
    }
    // l = l alpha + the tile's sum of 2^(x - shift()).
    RL_DEV void add(float alpha, float tile_sum) { l = l * alpha + tile_sum; }
    // The finished row (l already summed over the lanes sharing it): inv = num / l, the factor that
    // normalises O (0 for a row that saw no key), and the natural-log LSE (-inf for none).
    template <class E = Exp2>
    RL_DEV void finish(float num, float& inv, float& lse) const {
        inv = l > 0.f ? num * (1.f / l) : 0.f;        // (1 / l: one reciprocal, as before sinks)
        lse = l > 0.f ? E::lse(m, l) : -RL_INF;
    }
};

// 2^(x scale_log2 - shift): a score's probability weight within its tile (one FFMA and one EX2).
RL_DEV float online_weight(float x, float scale_log2, float shift) { return ex2(fmaf(x, scale_log2, -shift)); }

// Merge two states over disjoint keys: m = max(a.m, b.m), l = a.l s_a + b.l s_b with s_x = E(x.m - m),
// the factors that rescale the two outputs (O = s_a O_a + s_b O_b, before normalising). An empty side
// gets the factor 0, so its O is never weighted in; both empty give the empty state and factors 0.
template <class E = Exp2>
RL_DEV OnlineState merge(OnlineState a, OnlineState b, float& s_a, float& s_b) {
    const float m = fmaxf(a.m, b.m);
    const float shift = m == -RL_INF ? 0.f : m;
    s_a = E::exp(a.m - shift);
    s_b = E::exp(b.m - shift);
    return {m, a.l * s_a + b.l * s_b};
}

// The state of MT row tiles on mma.sync accumulators, before the first key: O = 0 and every row
// empty (two rows per thread per tile).
template <int MT, int DTILE>
RL_DEV void init_softmax_state(float (&o_acc)[MT][DTILE][4], OnlineState (&st)[MT][2]) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < DTILE; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e) o_acc[mt][dt][e] = 0.f;
        st[mt][0].init();
        st[mt][1].init();
    }
}

// ---------------------------------------------------------------- which keys a query sees
// MASK_NONE: every key. MASK_CAUSAL: keys j <= pos, where pos is the query's key position (its row
// plus Tk - Tq: queries sit at the end of the keys). MASK_LOCAL: causal and, in addition, a sliding
// window of W keys (pos - W < j, the window counting the query's own key) and/or a chunk of C tokens
// (floor(j / C) == floor(pos / C), Llama 4's chunked attention); W or C = 0 means no such limit.
// Kernels read only the tiles between the first row's first key and the last row's position, and
// mask element by element only on tiles where some row's range starts or ends.
enum : int { MASK_NONE = 0, MASK_CAUSAL = 1, MASK_LOCAL = 2 };

struct Visibility {
    int window, chunk;

    // The first key a query at key position pos sees (> pos, so nothing, when pos < 0).
    RL_DEV int first_key(int pos) const {
        int lo = 0;
        if (window > 0) lo = max(lo, pos - window + 1);
        if (chunk > 0) lo = max(lo, pos - pos % chunk);    // pos < 0: pos % chunk <= 0 keeps lo > pos
        return lo;
    }
    // Keys lo <= j <= hi visible to a query at pos under MASK (the caller also stops at the last key).
    template <int MASK> RL_DEV int lo(int pos) const { return MASK == MASK_LOCAL ? first_key(pos) : 0; }
    template <int MASK> RL_DEV int hi(int pos) const { return MASK == MASK_NONE ? 0x7fffffff : pos; }
};

// A row's optional sink (one logit per query head, natural-log units, that joins the softmax's
// denominator and no value: gpt-oss's formulation) merged into its finished state: returns the factor
// for O (its share of the new denominator) and leaves the LSE including the sink. Call after the
// lanes' l are summed. The sink is the state (sink, 1): merging it is the general merge.
RL_DEV float add_sink(OnlineState& st, const float* sinks, int head) {
    if (sinks == nullptr) return 1.f;
    float s_row, s_sink;
    st = merge(st, OnlineState::of_lse(sinks[head] * RL_LOG2E), s_row, s_sink);
    return s_row;
}

// ---------------------------------------------------------------- shared memory and copies
RL_DEV u32 smem_u32(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }

// 16-byte global -> shared copy that bypasses registers and L1; src_bytes = 0 fills zeros
// (used for rows past the end of a sequence, so stale shared memory never reaches an mma).
RL_DEV void cp_async16(u32 dst, const void* src, bool valid) {
    int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(n));
}
RL_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> RL_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// Tiles of rows of D 16-bit elements (D/8 16-byte chunks a row) are stored with the
// chunk index XOR-ed by (row % 8): the 8 row addresses an ldmatrix phase reads then
// fall in 8 different 16-byte bank groups, so loads and cp.async stores are conflict-free.
template <int D> RL_DEV u32 swz(int row, int chunk) {
    return static_cast<u32>(row * (D * 2) + ((chunk ^ (row & 7)) << 4));
}

// Tiles of rows of R bytes (R = 64 or 128: rows of D e4m3 bytes): in each 128-byte line the
// chunk position is XOR-ed by the line index, so the 8 rows an ldmatrix phase reads in one chunk
// column fall in 8 different 16-byte bank groups (for R = 128 this is the swizzle above with D = 64).
// The XOR commutes with adding an even chunk offset: swz_line(r, c + 2j) = swz_line(r, c) ^ (j << 5), c in {0, 1}.
template <int R> RL_DEV u32 swz_line(int row, int chunk) {
    static_assert(R % 16 == 0, "rows of whole 16-byte chunks");
    const u32 o = static_cast<u32>(row * R + chunk * 16);
    return (o & ~127u) | ((((o >> 4) ^ (o >> 7)) & 7u) << 4);
}

// ---------------------------------------------------------------- tensor-core fragments
// ldmatrix x4: lanes 8i..8i+7 give the row addresses of 8x8 matrix i; register i receives
// matrix i in the mma fragment layout (row lane/4, columns 2*(lane%4) + {0,1}).
RL_DEV void ldsm_x4(u32 (&r)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
RL_DEV void ldsm_x4_t(u32 (&r)[4], u32 addr) {  // transposed: for B operands stored [k][n]
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// D(16x8, fp32) += A(16x16, row) * B(16x8, col).  Fragment layout, g = lane/4, t = lane%4:
// A: a0 (g, 2t..), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
// B: b0 (k 2t.., n g), b1 (k 2t+8.., n g);  C: c0,c1 (g, 2t..), c2,c3 (g+8, 2t..)
template <typename T> RL_DEV void mma16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <> RL_DEV void mma16816<__half>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> RL_DEV void mma16816<__nv_bfloat16>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Reductions over the 4 lanes of a quad (the lanes holding one row of an mma C fragment).
RL_DEV float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
RL_DEV float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// The keys [begin, end) split `split` of `num_splits` reads of a `ctx`-token sequence: whole pages of `page`
// tokens dealt out in equal runs (the last splits may be short or empty); one split reads them all.
struct KeyRange {
    int begin, end;
    RL_DEV int tiles(int page) const { return (end - begin + page - 1) / page; }
};
template <bool SPLIT> RL_DEV KeyRange split_keys(int ctx, int split, int num_splits, int page) {
    if (!SPLIT) return {0, ctx};
    const int pages = (ctx + page - 1) / page;
    const int span = ((pages + num_splits - 1) / num_splits) * page;
    const int begin = min(ctx, split * span);
    return {begin, min(ctx, begin + span)};
}

}  // namespace rl
