// moe_gemv: the expert GEMVs of one mixture-of-experts decode step, reading only routed experts.
//
// A decode step routes each of T tokens to k experts: P = T k (token, expert) pairs. For each
// pair p this computes y[p, :] = W[e_p] x[p / row_div, :], W[e] an N x K row-major matrix at
// w_ptrs[e], which is either in HBM or a device alias of pinned host memory (DAK's direct read:
// the SMs load host bytes in place, no copy and no synchronisation, so the step stays one CUDA
// graph). gate_up uses row_div = k (every pair of a token reads that token's hidden state), down
// row_div = 1 (pair p reads its own activation row).
//
// Work is split into items (expert e, tile of TILE_ROWS output rows). An item first collects the
// pairs routed to e (a scan of P expert ids into shared memory); an expert nobody is routed to
// costs one scan per tile and reads none of its bytes. An expert with more than PAIR_CHUNK pairs
// streams its tile once per chunk of pairs (the decode sizes measured route about 2 per expert). Each warp owns ROWS_PER_WARP rows of the tile; its
// lanes stride K in 16-byte vectors, load each weight vector once and use it for up to PAIR_CHUNK
// pairs, accumulating in float32 and reducing across the warp. The order in which pairs land in
// shared memory varies between runs, but each output element is one pair's dot product summed in
// a fixed order, so the results are bitwise reproducible.
//
// The first host_ctas CTAs own the host experts' items (e >= e_hbm), looping over them with a
// stride of host_ctas: a bounded number of CTAs reads over the host link at once (the split
// GEMV's measured best is tens, not hundreds, congestion.py). Every later CTA is one HBM item.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef MOE_DTYPE
#define MOE_DTYPE 0
#endif
#if MOE_DTYPE == 0
typedef __nv_bfloat16 elem_t;
typedef __nv_bfloat162 elem2_t;
#define TO_FLOAT2 __bfloat1622float2
#define FROM_FLOAT __float2bfloat16
#else
typedef __half elem_t;
typedef __half2 elem2_t;
#define TO_FLOAT2 __half22float2
#define FROM_FLOAT __float2half
#endif

#define THREADS 256
#define WARPS 8
#define ROWS_PER_WARP 2
#define TILE_ROWS 16
#define PAIR_CHUNK 8
#define MAX_PAIRS 1024
#define VEC 8

__device__ __forceinline__ void fma_vec(float &acc, const uint4 &w, const uint4 &x) {
    const elem2_t *w2 = reinterpret_cast<const elem2_t *>(&w);
    const elem2_t *x2 = reinterpret_cast<const elem2_t *>(&x);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float2 a = TO_FLOAT2(w2[i]);
        float2 b = TO_FLOAT2(x2[i]);
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
}

__device__ __forceinline__ uint4 load_stream(const elem_t *p) {
    // weights are read once per step: keep them out of L1 and evict them first from L2
    return __ldcs(reinterpret_cast<const uint4 *>(p));
}

__device__ void run_item(const unsigned long long *__restrict__ w_ptrs, const elem_t *__restrict__ x,
                         const int *__restrict__ pair_expert, int row_div, elem_t *__restrict__ y, int P,
                         int N, int K, int e, int tile, int *s_pairs, int *s_rows, int *s_count) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    __syncthreads();  // the previous item's readers are done with s_pairs
    if (tid == 0) *s_count = 0;
    __syncthreads();
    for (int p = tid; p < P; p += THREADS) {
        if (pair_expert[p] == e) {
            const int slot = atomicAdd(s_count, 1);
            s_pairs[slot] = p;
            s_rows[slot] = p / row_div;
        }
    }
    __syncthreads();
    const int count = *s_count;
    if (count == 0) return;
    const elem_t *w = reinterpret_cast<const elem_t *>(w_ptrs[e]);
    const int row0 = tile * TILE_ROWS + warp * ROWS_PER_WARP;
    if (row0 >= N) return;
    for (int c0 = 0; c0 < count; c0 += PAIR_CHUNK) {
        const int chunk = min(PAIR_CHUNK, count - c0);
        float acc[ROWS_PER_WARP][PAIR_CHUNK];
#pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r)
#pragma unroll
            for (int q = 0; q < PAIR_CHUNK; ++q) acc[r][q] = 0.f;
#pragma unroll 2
        for (int k0 = lane * VEC; k0 < K; k0 += 32 * VEC) {
            uint4 wv[ROWS_PER_WARP];
#pragma unroll
            for (int r = 0; r < ROWS_PER_WARP; ++r) {
                const int row = min(row0 + r, N - 1);  // a tail row repeats the last: written never
                wv[r] = load_stream(w + (size_t)row * K + k0);
            }
#pragma unroll
            for (int q = 0; q < PAIR_CHUNK; ++q) {
                if (q < chunk) {
                    const elem_t *xrow = x + (size_t)s_rows[c0 + q] * K;
                    const uint4 xv = __ldg(reinterpret_cast<const uint4 *>(xrow + k0));
#pragma unroll
                    for (int r = 0; r < ROWS_PER_WARP; ++r) fma_vec(acc[r][q], wv[r], xv);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
#pragma unroll
            for (int q = 0; q < PAIR_CHUNK; ++q) {
                float v = acc[r][q];
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
                if (lane == 0 && q < chunk && row0 + r < N) {
                    y[(size_t)s_pairs[c0 + q] * N + row0 + r] = FROM_FLOAT(v);
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
moe_gemv(const unsigned long long *__restrict__ w_ptrs, const elem_t *__restrict__ x,
         const int *__restrict__ pair_expert, elem_t *__restrict__ y, int row_div, int P, int N, int K,
         int num_experts, int e_hbm, int host_ctas) {
    __shared__ int s_pairs[MAX_PAIRS];
    __shared__ int s_rows[MAX_PAIRS];  // the input row of each collected pair
    __shared__ int s_count;
    const int n_tiles = (N + TILE_ROWS - 1) / TILE_ROWS;
    const int b = blockIdx.x;
    if (b < host_ctas) {
        const int items = (num_experts - e_hbm) * n_tiles;
        for (int item = b; item < items; item += host_ctas) {
            run_item(w_ptrs, x, pair_expert, row_div, y, P, N, K, e_hbm + item / n_tiles, item % n_tiles,
                     s_pairs, s_rows, &s_count);
        }
    } else {
        const int item = b - host_ctas;
        run_item(w_ptrs, x, pair_expert, row_div, y, P, N, K, item / n_tiles, item % n_tiles, s_pairs,
                 s_rows, &s_count);
    }
}
