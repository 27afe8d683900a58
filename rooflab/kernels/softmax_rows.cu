// Row softmax that reads S once and writes P once: each row is held in registers between the
// read and the write (ITEMS vectors of VEC elements per thread, TPR threads per row).
//
// s, p: [rows, n] of T (p may be s: every element is loaded before any is stored);
// p = softmax(scale * s) along the row, fp32 arithmetic, exp in the log2 domain
// (scale_log2 = scale * log2(e)).  Causal (naive attention): row r is query i = r % q_len and
// columns j > i + causal_offset are set to -inf before the max, so S stays fully materialised.
// A row with no finite entry gets p = 0.
// Layout: TPR <= 32 -> blockDim.x / TPR rows a block, reduced with warp shuffles;
// TPR > 32 -> one row a block, reduced through shared memory.
#include "common.cuh"
using namespace rl;

template <int TPR_MAX> RL_DEV float row_reduce(float x, int tpr, bool is_max, float* red)
{
    const int width = tpr < 32 ? tpr : 32;
    for (int off = width >> 1; off > 0; off >>= 1) {
        const float y = __shfl_xor_sync(0xffffffffu, x, off);
        x = is_max ? fmaxf(x, y) : x + y;
    }
    if (tpr > 32) {
        const int warp = threadIdx.x >> 5, nwarps = tpr >> 5;
        if ((threadIdx.x & 31) == 0) red[warp] = x;
        __syncthreads();
        x = red[0];
        for (int w = 1; w < nwarps; ++w) x = is_max ? fmaxf(x, red[w]) : x + red[w];
        __syncthreads();                                    // red is reused by the next reduction
    }
    return x;
}

template <typename T, int VEC, int ITEMS>
__global__ void softmax_rows(const T* s, T* p, i64 rows, int n, int tpr, float scale_log2,
                             int causal, int q_len, int causal_offset)
{
    typedef Pack<T, VEC> P;
    __shared__ float red[32];
    const int lt = threadIdx.x % tpr;
    const i64 row = (i64)blockIdx.x * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool row_ok = row < rows;
    const T* src = s + (row_ok ? row : 0) * (i64)n;

    float x[ITEMS][VEC];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        const int col0 = (lt + it * tpr) * VEC;
        if (row_ok && col0 < n) {
            const P pk = *reinterpret_cast<const P*>(src + col0);
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

    float mx = -RL_INF;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
#pragma unroll
        for (int e = 0; e < VEC; ++e) mx = fmaxf(mx, x[it][e]);
    mx = row_reduce<1024>(mx, tpr, true, red);
    const float m_use = mx == -RL_INF ? 0.f : mx;

    float sum = 0.f;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            x[it][e] = ex2(x[it][e] - m_use);
            sum += x[it][e];
        }
    sum = row_reduce<1024>(sum, tpr, false, red);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;

    T* dst = p + (row_ok ? row : 0) * (i64)n;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
        const int col0 = (lt + it * tpr) * VEC;
        if (row_ok && col0 < n) {
            P pk;
#pragma unroll
            for (int e = 0; e < VEC; ++e) pk.v[e] = Num<T>::from_float(x[it][e] * inv);
            *reinterpret_cast<P*>(dst + col0) = pk;
        }
    }
}
