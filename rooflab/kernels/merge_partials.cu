// Merge S split-KV partial states at once (the reduction after paged decode with splits).
//
// o_part fp32 [S, rows, d], lse_part fp32 [S, rows] (rows = batch * heads) -> out T [rows, d],
// out_lse fp32 [rows] (optional).  One pass over the splits with a running maximum:
// when split s raises the maximum, the accumulated sum and vector are rescaled.
// Guards as in merge_states: +inf and -inf LSEs are empty splits, whose o is never read;
// a row whose splits are all empty gets o = 0 and lse = -inf.
// The running merge is rl::merge (common.cuh) on the states (lse_s, 1).
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
    OnlineState total = OnlineState::empty();
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
            if (x == -RL_INF) continue;                     // empty split: its o is never read
            float s_old, w;                                 // rescale what is banked, weigh the new split
            total = merge<ExpE>(total, OnlineState::of_lse(x), s_old, w);
            acc.x = acc.x * s_old + w * xs[u].x; acc.y = acc.y * s_old + w * xs[u].y;
            acc.z = acc.z * s_old + w * xs[u].z; acc.w = acc.w * s_old + w * xs[u].w;
        }
    }
    float inv, lse;
    total.finish<ExpE>(1.f, inv, lse);
    Pack<T, 4> pk;
    pk.v[0] = Num<T>::from_float(acc.x * inv);
    pk.v[1] = Num<T>::from_float(acc.y * inv);
    pk.v[2] = Num<T>::from_float(acc.z * inv);
    pk.v[3] = Num<T>::from_float(acc.w * inv);
    *reinterpret_cast<Pack<T, 4>*>(out + row * d + c * 4) = pk;
    if (out_lse && c == 0) out_lse[row] = lse;
}
