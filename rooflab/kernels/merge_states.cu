// Merge two partial attention states over disjoint key ranges by their LSEs.
//
// o_a, o_b, out: [rows, d] of T (rows = tokens * heads); lse_a, lse_b, out_lse: fp32 [rows].
// M = max(lse_a, lse_b); w_x = exp(lse_x - M) / (exp(lse_a - M) + exp(lse_b - M));
// out = w_a o_a + w_b o_b (scales first: a convex combination), out_lse = M + ln(sum).
// Guards: an LSE of +inf marks an empty side like -inf; an empty side's o is never read
// (0 * NaN would leak); both sides empty give out = 0 and out_lse = -inf, never NaN.
//
// The weights come from rl::merge (common.cuh) on the states (lse_a, 1) and (lse_b, 1).
// Layout: blockDim = (d / VEC, rows_per_step); thread (x, y) moves VEC elements (16 bytes when
// d allows) of ROWS rows, all loads issued before any arithmetic; indices are 64-bit.
#include "common.cuh"
using namespace rl;

RL_DEV float empty_as_neg_inf(float lse) { return isinf(lse) ? -RL_INF : lse; }

template <typename T, int VEC, int ROWS>
__global__ void merge_states(const T* __restrict__ o_a, const float* __restrict__ lse_a,
                             const T* __restrict__ o_b, const float* __restrict__ lse_b,
                             T* __restrict__ out, float* __restrict__ out_lse, i64 rows, int d)
{
    typedef Pack<T, VEC> P;
    const int c = threadIdx.x;                              // vector index within a row
    const i64 row0 = (i64)blockIdx.x * blockDim.y * ROWS + threadIdx.y;
    P a[ROWS], bv[ROWS];
    float la[ROWS], lb[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = row0 + (i64)r * blockDim.y;
        if (row < rows) {
            const i64 e = row * d + (i64)c * VEC;
            a[r] = *reinterpret_cast<const P*>(o_a + e);
            bv[r] = *reinterpret_cast<const P*>(o_b + e);
            la[r] = lse_a[row];
            lb[r] = lse_b[row];
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = row0 + (i64)r * blockDim.y;
        if (row >= rows) continue;
        float ea, eb;
        const OnlineState m = merge<ExpE>(OnlineState::of_lse(empty_as_neg_inf(la[r])),
                                          OnlineState::of_lse(empty_as_neg_inf(lb[r])), ea, eb);
        P res;
        float lse;
        if (m.m == -RL_INF) {                               // both empty
#pragma unroll
            for (int i = 0; i < VEC; ++i) res.v[i] = Num<T>::from_float(0.f);
            lse = -RL_INF;
        } else {
            const float sa = ea / m.l, sb = eb / m.l;       // m.l = ea + eb >= 1
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const float va = sa > 0.f ? sa * Num<T>::to_float(a[r].v[i]) : 0.f;
                const float vb = sb > 0.f ? sb * Num<T>::to_float(bv[r].v[i]) : 0.f;
                res.v[i] = Num<T>::from_float(va + vb);
            }
            lse = m.m + logf(m.l);
        }
        *reinterpret_cast<P*>(out + row * d + (i64)c * VEC) = res;
        if (out_lse && c == 0) out_lse[row] = lse;
    }
}
