// Row softmax that reads S once and writes P once: each row is held in registers between the
// read and the write (ITEMS vectors of VEC elements per thread, TPR threads per row).
//
// s, p: [rows, n] of T (p may be s: a row is loaded whole before any of it is stored, and a
// row is read and written by one block only); p = softmax(scale * s) along the row, fp32
// arithmetic, exp in the log2 domain (scale_log2 = scale * log2(e)).  Causal (naive
// attention): row r is query i = r % q_len and columns j > i + causal_offset are set to -inf
// before the max, so S stays fully materialised.  A row with no finite entry gets p = 0.
//
// NST = 0, direct: TPR <= 32 -> blockDim.x / TPR rows a block, reduced with warp shuffles;
// TPR > 32 -> one row a block, reduced through shared memory.
// NST > 0, streaming (long rows, 16-byte vectors, TPR = blockDim.x > 32): a persistent block
// walks rows blockIdx.x, + gridDim.x, ... and keeps NST - 1 rows in flight ahead of the one it
// reduces, copied by cp.async into an NST-slot shared-memory ring.  Each thread copies exactly
// the chunks it later reads, so the ring needs no barrier; the loads of the next rows stay in
// flight through this row's reductions, which is what keeps HBM busy.
#include "common.cuh"
using namespace rl;

// Row-wide max or sum: warp shuffles, then (TPR > 32) one barrier and a read of every warp's
// partial from shared memory.  `red` is one of four 32-float buffers (max / sum, by row
// parity), so no second barrier is needed before the next row writes its partials.
RL_DEV float row_reduce(float x, int tpr, bool is_max, float* red)
{
    const int width = tpr < 32 ? tpr : 32;
    for (int off = width >> 1; off > 0; off >>= 1) {
        const float y = __shfl_xor_sync(0xffffffffu, x, off);
        x = is_max ? fmaxf(x, y) : x + y;
    }
    if (tpr > 32) {
        const int nwarps = tpr >> 5;
        if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
        __syncthreads();
        x = red[0];
        for (int w = 1; w < nwarps; ++w) x = is_max ? fmaxf(x, red[w]) : x + red[w];
    }
    return x;
}

// Softmax of the row held in x (scaled, log2 domain; -inf where absent), written to dst.
// red: 128 floats; parity alternates between consecutive rows of one block.
template <typename T, int VEC, int ITEMS>
RL_DEV void finish_row(float (&x)[ITEMS][VEC], T* dst, bool row_ok, int n, int lt, int tpr, float* red,
                       int parity)
{
    float mx = -RL_INF;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
#pragma unroll
        for (int e = 0; e < VEC; ++e) mx = fmaxf(mx, x[it][e]);
    mx = row_reduce(mx, tpr, true, red + parity * 64);
    const float m_use = mx == -RL_INF ? 0.f : mx;

    float sum = 0.f;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            x[it][e] = ex2(x[it][e] - m_use);
            sum += x[it][e];
        }
    sum = row_reduce(sum, tpr, false, red + parity * 64 + 32);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;

#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        const int col0 = (lt + it * tpr) * VEC;
        if (row_ok && col0 < n) {
            Pack<T, VEC> pk;
#pragma unroll
            for (int e = 0; e < VEC; ++e) pk.v[e] = Num<T>::from_float(x[it][e] * inv);
            *reinterpret_cast<Pack<T, VEC>*>(dst + col0) = pk;
        }
    }
}

template <typename T, int VEC, int ITEMS>
RL_DEV void load_row(float (&x)[ITEMS][VEC], const T* src, bool from_shared_ok, bool row_ok, int n, int lt,
                     int tpr, float scale_log2, int causal, i64 row, int q_len, int causal_offset)
{
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        const int col0 = (lt + it * tpr) * VEC;
        if (row_ok && col0 < n) {
            const Pack<T, VEC> pk = *reinterpret_cast<const Pack<T, VEC>*>(src + (from_shared_ok ? it * tpr * VEC : col0));
#pragma unroll
            for (int e = 0; e < VEC; ++e) x[it][e] = Num<T>::to_float(pk.v[e]) * scale_log2;
        } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) x[it][e] = -RL_INF;
        }
    }
    if (causal) {
        const int last = (int)(row % q_len) + causal_offset;    // last visible column
#pragma unroll
        for (int it = 0; it < ITEMS; ++it)
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                if ((lt + it * tpr) * VEC + e > last) x[it][e] = -RL_INF;
    }
}

template <typename T, int VEC, int ITEMS, int NST>
__global__ void __launch_bounds__(NST == 0 ? 1024 : 512) softmax_rows(const T* s, T* p, i64 rows, int n, int tpr, float scale_log2,
                             int causal, int q_len, int causal_offset)
{
    __shared__ float red[128];
    float x[ITEMS][VEC];
    if constexpr (NST == 0) {
        const int lt = threadIdx.x % tpr;
        const i64 row = (i64)blockIdx.x * (blockDim.x / tpr) + threadIdx.x / tpr;
        const bool row_ok = row < rows;
        const i64 base = (row_ok ? row : 0) * (i64)n;
        load_row<T, VEC, ITEMS>(x, s + base, false, row_ok, n, threadIdx.x % tpr, tpr, scale_log2,
                                causal, row, q_len, causal_offset);
        finish_row<T, VEC, ITEMS>(x, p + base, row_ok, n, lt, tpr, red, 0);
    } else {
        extern __shared__ __align__(16) unsigned char ring[];
        const int lt = threadIdx.x;                         // tpr == blockDim.x
        const u32 slot_bytes = (u32)(ITEMS * tpr * VEC * sizeof(T));
        const u32 ring0 = smem_u32(ring);
        // thread lt owns chunks lt + it * tpr of every row, at the same place in every slot
        auto issue = [&](i64 r, int slot) {
            const T* src = s + r * (i64)n;
#pragma unroll
            for (int it = 0; it < ITEMS; ++it) {
                const int col0 = (lt + it * tpr) * VEC;
                const bool ok = col0 < n;
                cp_async16(ring0 + slot * slot_bytes + (u32)((lt + it * tpr) * VEC * sizeof(T)),
                           src + (ok ? col0 : 0), ok);
            }
        };
        const i64 stride = gridDim.x;
#pragma unroll
        for (int k = 0; k < NST - 1; ++k) {
            const i64 r = blockIdx.x + k * stride;
            if (r < rows) issue(r, k);
            cp_async_commit();
        }
        int slot = 0, parity = 0;
        for (i64 row = blockIdx.x; row < rows; row += stride) {
            const i64 ahead = row + (NST - 1) * stride;
            if (ahead < rows) issue(ahead, (slot + NST - 1) % NST);
            cp_async_commit();
            cp_async_wait<NST - 1>();
            const T* mine = reinterpret_cast<const T*>(ring + slot * slot_bytes) + lt * VEC;
            load_row<T, VEC, ITEMS>(x, mine, true, true, n, lt, tpr, scale_log2, causal, row, q_len,
                                    causal_offset);
            finish_row<T, VEC, ITEMS>(x, p + row * (i64)n, true, n, lt, tpr, red, parity);
            slot = (slot + 1) % NST;
            parity ^= 1;
        }
        cp_async_wait<0>();
    }
}
