// Split-K GEMM for the ring path's host chunks (issue 5, large batch). Launched by
// smemkit/offload/chunk_gemm.py.
//
//   y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n])     fp32 accumulation, 16-bit in and out,
//   x: M x K (row stride ldx), w: N x K (row stride ldw: a chunk of weight rows in the ring),
//   y: M x N written at row stride ldy (a column slice of the layer's row-major output).
//
// Why not cuBLAS: a host chunk is a few hundred weight rows at most, so its output has few
// 128-wide tiles and cuBLAS runs each over the whole K: 26-43 us for any chunk of the H200 runs
// (benchmarks/results/h200/ring_side/, launch-timed), and the last chunk's GEMM is the ring's
// tail after its copy. Here the K range is cut into `split` slices over the grid so every SM
// gets work: a chunk of 64 rows x K 4096 at M = 512 is 8 tiles x 16 slices = 128 CTAs of 4
// k-steps each.
//
// CTA: 128 threads, a 64 x 64 output tile (4 warps of 32 x 32, 2 x 4 mma.sync.m16n8k16 each),
// k-steps of 64, a ring of STAGES shared-memory stages filled by cp.async.cg (16 B per copy,
// out-of-range rows and k zero-filled; K is a multiple of 8, so a copy is wholly in or out).
// A stage row is 64 elements = 128 B = 8 chunks of 16 B; chunk c of row r sits at position
// c ^ (r & 7), so the 8 rows an ldmatrix phase reads (one chunk column) hit 8 distinct 16-byte
// bank groups, and so do the copies (8 threads per row).
//
// Split-K: with split == 1 the CTA writes y directly. Otherwise each CTA stores its fp32 partial
// of the valid outputs to ws[slice][M][N], and a second kernel, chunk_reduce, sums the slices in
// order 0..split-1 over the whole grid (one output per thread), adds the bias, converts and
// stores: results are bitwise reproducible. (A first version let the CTA arriving last on a tile
// sum its slices: one SM reading split x 16 KB made a 64-row chunk 2-3x slower than cuBLAS,
// benchmarks/results/h200/run_2026-11-30_sixteenth/c1.)
//
// Compile-time choice: CG_DTYPE 0 bf16 (default), 1 fp16 (x, w, bias and y share it).
#ifndef CG_DTYPE
#define CG_DTYPE 0
#endif
#define SMEMKIT_HALF_BF16 (CG_DTYPE == 0)
#include <smemkit/half_mma.cuh>

#define CG_THREADS 128
#define CG_BM 64
#define CG_BN 64
#define CG_BK 64
#define CG_STAGES 4
#define CG_REDUCE_THREADS 256
#define CG_TILE_BYTES (CG_BM * CG_BK * 2)              // one operand's stage (BM == BN)
#define CG_STAGE_BYTES (2 * CG_TILE_BYTES)
#define CG_SMEM_BYTES (CG_STAGES * CG_STAGE_BYTES)    // dynamic shared memory of a launch

using namespace smemkit;

namespace {

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// Byte offset of chunk c (16 B) of row r in a swizzled 64 x 64 operand tile.
__device__ __forceinline__ u32 swz(int r, int c) { return static_cast<u32>(r * 128 + ((c ^ (r & 7)) << 4)); }

// Copy k-step `ks` of rows [row0, row0 + 64) of `src` (rows < rows_end, k < K) into the tile at
// `tile`: thread t copies chunk t % 8 of rows t / 8 + 16 j.
__device__ __forceinline__ void load_tile(u32 tile, const u16* __restrict__ src, int ld, int row0,
                                          int rows_end, int ks, int K) {
  const int c = threadIdx.x & 7;
  const int k = ks * CG_BK + c * 8;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int r = (threadIdx.x >> 3) + 16 * j;
    const bool ok = row0 + r < rows_end && k < K;
    const u16* p = ok ? src + static_cast<u64>(row0 + r) * ld + k : src;
    cp_async16(tile + swz(r, c), p, ok ? 16u : 0u);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(CG_THREADS, 3)
chunk_gemm(const u16* __restrict__ x, const u16* __restrict__ w, const u16* __restrict__ bias,
           u16* __restrict__ y, float* __restrict__ ws, int M, int N, int K, int ldx, int ldw, int ldy,
           int split, int steps_per_split) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tiles_n = (N + CG_BN - 1) / CG_BN;
  const int tile = blockIdx.x;
  const int m0 = (tile / tiles_n) * CG_BM;
  const int n0 = (tile % tiles_n) * CG_BN;
  const int slice = blockIdx.y;
  const int ksteps = (K + CG_BK - 1) / CG_BK;
  const int ks0 = slice * steps_per_split;
  const int nsteps = min(ksteps, ks0 + steps_per_split) - ks0;  // >= 1 (the launcher's split)
  const u32 base = smem_addr(smem);

  // prologue: the first STAGES - 1 k-steps in flight (empty groups keep the wait count uniform)
#pragma unroll
  for (int s = 0; s < CG_STAGES - 1; ++s) {
    if (s < nsteps) {
      const u32 st = base + s * CG_STAGE_BYTES;
      load_tile(st, x, ldx, m0, M, ks0 + s, K);
      load_tile(st + CG_TILE_BYTES, w, ldw, n0, N, ks0 + s, K);
    }
    cp_async_commit();
  }

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wm = (warp >> 1) * 32;  // the warp's rows of the tile
  const int wn = (warp & 1) * 32;   // and columns
  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  for (int s = 0; s < nsteps; ++s) {
    cp_async_wait<CG_STAGES - 2>();  // k-step s has landed (this thread's copies) ...
    __syncthreads();                 // ... everyone's, and k-step s - 1's slot is free to refill
    const int next = s + CG_STAGES - 1;
    if (next < nsteps) {
      const u32 st = base + (next % CG_STAGES) * CG_STAGE_BYTES;
      load_tile(st, x, ldx, m0, M, ks0 + next, K);
      load_tile(st + CG_TILE_BYTES, w, ldw, n0, N, ks0 + next, K);
    }
    cp_async_commit();

    const u32 a_tile = base + (s % CG_STAGES) * CG_STAGE_BYTES;
    const u32 b_tile = a_tile + CG_TILE_BYTES;
#pragma unroll
    for (int kk = 0; kk < CG_BK / 16; ++kk) {
      u32 a[2][4], b[4][2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {  // A 16 x 16: lanes 0-15 rows at chunk 2kk, 16-31 at 2kk + 1
        const int r = wm + i * 16 + (lane & 15);
        ldmatrix_x4(a_tile + swz(r, 2 * kk + (lane >> 4)), a[i][0], a[i][1], a[i][2], a[i][3]);
      }
#pragma unroll
      for (int p = 0; p < 2; ++p) {  // B: two 8-column blocks x k 16 per ldmatrix.x4
        const int r = wn + p * 16 + ((lane >> 4) << 3) + (lane & 7);
        ldmatrix_x4(b_tile + swz(r, 2 * kk + ((lane >> 3) & 1)), b[2 * p][0], b[2 * p][1],
                    b[2 * p + 1][0], b[2 * p + 1][1]);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma16816(acc[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]);
    }
  }
  cp_async_wait<0>();

  // accumulator (i, j): c0, c1 at row g, columns 2t, 2t + 1; c2, c3 at row g + 8
  const int g = lane >> 2;
  const int t2 = (lane & 3) * 2;
  if (split == 1) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm + i * 16 + g + 8 * h;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int n = n0 + wn + j * 8 + t2 + e;
            if (n >= N) continue;
            const float bv = bias != nullptr ? to_f32(bias[n]) : 0.0f;
            y[static_cast<u64>(m) * ldy + n] = from_f32(acc[i][j][2 * h + e] + bv);
          }
      }
    return;
  }

  // split-K: this slice's fp32 partial of the valid outputs, ws[slice][m][n]; chunk_reduce sums them
  float* part = ws + static_cast<u64>(slice) * M * N;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm + i * 16 + g + 8 * h;
      if (m >= M) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int n = n0 + wn + j * 8 + t2 + e;
          if (n < N) part[static_cast<u64>(m) * N + n] = acc[i][j][2 * h + e];
        }
    }
}

// y[m, n] = sum over slices 0..split-1 of ws[slice][m][n] in that order (+ bias[n]): one output per
// thread, 8 slices' loads in flight, so the sum costs ~split/8 L2 round trips whatever the tile.
extern "C" __global__ void __launch_bounds__(CG_REDUCE_THREADS)
chunk_reduce(const float* __restrict__ ws, const u16* __restrict__ bias, u16* __restrict__ y, int M,
             int N, int ldy, int split) {
  const u64 count = static_cast<u64>(M) * N;
  const u64 i = static_cast<u64>(blockIdx.x) * CG_REDUCE_THREADS + threadIdx.x;
  if (i >= count) return;
  float sum = 0.0f;
  for (int s0 = 0; s0 < split; s0 += 8) {
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = s0 + j < split ? ld_partial(ws + (s0 + j) * count + i) : 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (s0 + j < split) sum += v[j];
    }
  }
  const int m = static_cast<int>(i / N);
  const int n = static_cast<int>(i - static_cast<u64>(m) * N);
  y[static_cast<u64>(m) * ldy + n] = from_f32(sum + (bias != nullptr ? to_f32(bias[n]) : 0.0f));
}
