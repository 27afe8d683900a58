// Merge S split-KV partial states at once (the reduction after paged decode with splits).
//
// o_part fp32 [S, rows, d], lse_part fp32 [S, rows] (rows = batch * heads) -> out T [rows, d],
// out_lse fp32 [rows] (optional).  One pass over the splits with a running maximum:
// when split s raises the maximum, the accumulated sum and vector are rescaled.
// Guards as in merge_states: +inf and -inf LSEs are empty splits, whose o is never read;
// a row whose splits are all empty gets o = 0 and lse = -inf.
// Layout: blockDim = (d / 4, rows_per_block); each thread owns 4 consecutive fp32 of one row
// and issues the loads of UNROLL splits before using them.
#include "common.cuh"
using namespace rl;

template <typename T, int UNROLL>
__global__ void merge_partials(const float* __restrict__ o_part, const float* __restrict__ lse_part,
                               T* __restrict__ out, float* __restrict__ out_lse,
                               int num_splits, i64 rows, int d)
{
    const int c = threadIdx.x;
    const i64 row = (i64)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) return;
    float m = -RL_INF, l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < num_splits; s0 += UNROLL) {
        float ls[UNROLL];
        float4 xs[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int s = s0 + u;
            if (s < num_splits) {
                ls[u] = lse_part[(i64)s * rows + row];
                xs[u] = *reinterpret_cast<const float4*>(o_part + ((i64)s * rows + row) * d + c * 4);
            } else {
                ls[u] = -RL_INF;
                xs[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const float x = isinf(ls[u]) ? -RL_INF : ls[u];
            if (x == -RL_INF) continue;                     // empty split
            if (x > m) {                                    // new maximum: rescale what is banked
                const float sc = expf(m - x);               // 0 when m is still -inf
                l *= sc; acc.x *= sc; acc.y *= sc; acc.z *= sc; acc.w *= sc;
                m = x;
            }
            const float w = expf(x - m);
            l += w;
            acc.x += w * xs[u].x; acc.y += w * xs[u].y; acc.z += w * xs[u].z; acc.w += w * xs[u].w;
        }
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    Pack<T, 4> pk;
    pk.v[0] = Num<T>::from_float(acc.x * inv);
    pk.v[1] = Num<T>::from_float(acc.y * inv);
    pk.v[2] = Num<T>::from_float(acc.z * inv);
    pk.v[3] = Num<T>::from_float(acc.w * inv);
    *reinterpret_cast<Pack<T, 4>*>(out + row * d + c * 4) = pk;
    if (out_lse && c == 0) out_lse[row] = l > 0.f ? m + logf(l) : -RL_INF;
}
