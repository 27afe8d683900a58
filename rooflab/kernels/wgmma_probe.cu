// wgmma layout probe (a GPU test aid): the two MMA paths of the Hopper flash kernels, on one tile,
// with both readings of the MN-major V descriptor, against plain matrix products in the test.
#include "hopper.cuh"
using namespace rl;

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
