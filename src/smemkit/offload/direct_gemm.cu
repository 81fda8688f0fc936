// Direct-access GEMM of the host rows of a split weight, for large batches (DAK, seed 003 §4.2
// and §4.3.2; SPEC §2; issue 5). Launched by smemkit/offload/direct_gemm.py.
//
//   y[m, n_hbm + n] = sum_k x[m, k] W_host[n, k] (+ bias[n_hbm + n])    m < M, n < n_h
//
// W_host is the host part of a SplitWeight (pinned memory, n_h x K, row-major). The kernel reads
// it itself, by tensor copies (TMA) from its mapped address straight into shared memory: no
// staging buffer in HBM, no copy engine. The HBM rows are cuBLAS's, on another stream, at the
// same time (direct_gemm.py).
//
// Clusters of P CTAs (P = 1, 2, 4) share each weight tile (DAK's TMA multicast): CTA rank r of a
// cluster multiplies x rows [128 (g P + r), + 128) (g: the cluster's m-group), and the weight tile
// (128 host rows x 64 k) is brought by tensor copies of 64-row boxes (then 16-row boxes for a
// last tile's remainder), box j issued by rank j % P and multicast to all P CTAs. So a host byte
// crosses PCIe once per cluster, not once per CTA: host memory is not cached in the L2, and a
// batch of M rows in P = 1 CTAs would read the host part ceil(M / 128) times. With M > 128 P rows,
// m_groups = ceil(M / (128 P)) cluster groups each read it once.
// Box sizes, measured on the H200 (commit 84d716e): 64- and 128-row boxes of 128 B rows reach
// 51 GB/s from 16 CTAs with or without multicast, 32-row boxes 29-32 GB/s.
// Boxes reaching past the tensor's last row were slow: 1.8 GB/s with some wholly past it, 3.0 with
// one partial box in every band of 128 rows, 32 -> 18 GB/s with one in eight bands. So no box is
// issued wholly past the host rows, and a partial (16-row) box only for a remainder of n_h % 16
// rows (a SplitWeight's host rows are a multiple of 16 when N is); the rows a tile lacks stay
// stale in shared memory: weight row n feeds only output column n, which is not stored.

// Work: a unit is one tile of BN = 128 host rows x one k-split (cps k-chunks of 64). The clusters
// of one m-group walk the units round-robin by cluster index (never by %smid); a CTA's k-split
// partial (fp32) goes to the workspace ws[split][M][n_h], and the CTA that arrives last on the
// (m-block, tile) counter (threadfence + atomicAdd) sums the partials in split order 0..S-1, adds
// the bias and stores: bitwise the same result whichever CTA is last. With split = 1 the tile is
// stored directly. The counters are left at zero.
//
// Roles (9 warps): lane 0 of warp 8 is the producer, warps 0-7 multiply.
//   producer: a ring of `stages` slots of 32 KB (x tile 128 x 64 then weight tile 128 x 64, both
//             128-byte rows in the 128-byte swizzle: chunk c of row r at r*128 + 16 (c ^ (r & 7))).
//             For each stage it waits until the slot is empty in every CTA of the cluster, then
//             announces the slot's bytes on its `full` barrier and issues the x box (a tensor copy
//             from the CTA's own x map, which it wrote from the kernel parameters) and its share
//             of the weight boxes (multicast). The bytes of host reads in flight per cluster are
//             bounded by the ring: stages x 16 KB (the congestion window). The x tile is a
//             tensor copy too: copied by the producer warp's cp.async (16 B per lane) it took
//             1.08 us per stage with no math at all, against 0.67 us for the math with no x
//             copies (H200, commit 84d716e).
//   math:     warp w takes x rows 64 (w / 4) .. + 63 and weight rows 32 (w % 4) .. + 31 of the
//             128 x 128 output tile: per 16-k step four ldmatrix.x4 for x, two for the weight, 16
//             mma.sync.m16n8k16 (fp32 accumulators). When done with a slot, lane 0 arrives on the
//             slot's `empty` barrier in every CTA of the cluster (P remote arrivals).
// Edges: k past K, x rows past M and a remainder box's rows past n_h are zero-filled by the tensor
// copies (their out-of-bounds fill; the bytes still count on the barrier); a CTA wholly past M
// takes no x and does no math (it only frees its slots for the cluster's multicasts); outputs past
// M or n_h are not stored.
//
// Compile-time: DG_DTYPE 0 bf16, 1 fp16 (x, W, bias, y share it).
#ifndef DG_DTYPE
#define DG_DTYPE 0
#endif
#define SMEMKIT_HALF_BF16 (DG_DTYPE == 0)
#include <smemkit/half_mma.cuh>

#define DG_BM 128
#define DG_BN 128
#define DG_BK 64
#define DG_MATH_WARPS 8
#define DG_MATH_THREADS (DG_MATH_WARPS * 32)
#define DG_THREADS (DG_MATH_THREADS + 32)
#define DG_MAX_STAGES 6
#define DG_TILE_BYTES (DG_BM * DG_BK * 2)  // 16 KB: the x tile, and the weight tile (BN = BM)
#define DG_SLOT_BYTES (2 * DG_TILE_BYTES)
#define DG_MATH_BAR 1  // named barrier of the 256 math threads (0 is __syncthreads)
#define DG_BOX 64      // rows of the main weight box (8 KB)
#define DG_SUB_BOX 16  // rows of the remainder box (2 KB)
#define DG_MAP_BYTES 128

namespace dgemm {

using namespace smemkit;

struct Args {
  const unsigned char* wmaps;  // two tensor maps of W_host (n_h x K), boxes 64 k x 64 / 16 rows
  const void* xmap;  // this CTA's copy of the tensor map of x (M x K), box 64 k x 128 rows
  const u16* bias;   // N (0: none)
  u16* y;            // M x N, row-major
  float* ws;         // split x M x n_h partials (split > 1)
  u32* counters;     // m-blocks x tiles (split > 1)
  int M, N, n_hbm, n_h, split, cps, stages;
};

// Byte offset of 16-byte chunk c of row r in a 128-byte-swizzled tile (the TMA's pattern).
__device__ __forceinline__ u32 swz(int r, int c) {
  return static_cast<u32>(r * 128 + ((c ^ (r & 7)) << 4));
}

__device__ __forceinline__ void math_sync() {
  asm volatile("bar.sync %0, %1;" ::"n"(DG_MATH_BAR), "n"(DG_MATH_THREADS) : "memory");
}

// The stage sequence every CTA of a cluster walks: unit u = stream, stream + n_streams, ...;
// stage (u, kc) for kc in the unit's k-chunks.
struct Units {
  int stream, n_streams, units, split, cps, kchunks;
  __device__ __forceinline__ int tile(int u) const { return u / split; }
  __device__ __forceinline__ int kc0(int u) const { return (u % split) * cps; }
  __device__ __forceinline__ int kc1(int u) const { return min(kchunks, kc0(u) + cps); }
};

__device__ __forceinline__ void producer(const Args& a, const Units& w, int mblock, bool live, int rank,
                                         int P, u32 ring, u32 full, u32 empty) {
  const u16 mask = static_cast<u16>((1u << P) - 1u);
  const void* map64 = a.wmaps;
  const void* map16 = a.wmaps + DG_MAP_BYTES;
  int q = 0;
#pragma unroll 1
  for (int u = w.stream; u < w.units; u += w.n_streams) {
    const int tile = w.tile(u);
    const int rows = min(DG_BN, a.n_h - tile * DG_BN);
    const int n64 = rows / DG_BOX, n16 = (rows - n64 * DG_BOX + DG_SUB_BOX - 1) / DG_SUB_BOX;
    const u32 tile_bytes = static_cast<u32>(n64 * DG_BOX + n16 * DG_SUB_BOX) * 128u;
#pragma unroll 1
    for (int kc = w.kc0(u); kc < w.kc1(u); ++kc, ++q) {
      const int slot = q % a.stages;
      const int round = q / a.stages;
      const u32 fb = full + 8u * slot;
      if (round > 0) mbarrier_wait_parity_cta(empty + 8u * slot, static_cast<u32>((round - 1) & 1));
      const u32 xs = ring + static_cast<u32>(slot) * DG_SLOT_BYTES;
      // every weight box of the tile lands in every CTA; a CTA past M takes no x
      mbarrier_arrive_expect_tx(fb, tile_bytes + (live ? DG_TILE_BYTES : 0u));
      if (live) cp_async_bulk_tensor_2d_g2s(xs, a.xmap, kc * DG_BK, mblock * DG_BM, fb);
      for (int b = rank; b < n64 + n16; b += P) {
        const bool big = b < n64;
        const int r0 = big ? b * DG_BOX : n64 * DG_BOX + (b - n64) * DG_SUB_BOX;
        const u32 dst = xs + DG_TILE_BYTES + static_cast<u32>(r0) * 128u;
        const void* map = big ? map64 : map16;
        if (P > 1) {
          cp_async_bulk_tensor_2d_g2s_multicast(dst, map, kc * DG_BK, tile * DG_BN + r0, fb, mask);
        } else {
          cp_async_bulk_tensor_2d_g2s(dst, map, kc * DG_BK, tile * DG_BN + r0, fb);
        }
      }
    }
  }
}

// The (m-block, tile) output of a unit: stored, or its k-split partial stored and, by the last
// CTA to arrive, every partial summed in split order.
__device__ __forceinline__ void epilogue(const Args& a, float (&acc)[4][4][4], int mblock, int tile,
                                         int s, int n_tiles, int* s_last) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = mblock * DG_BM + (warp >> 2) * 64, n0 = tile * DG_BN + (warp & 3) * 32;
  float* part = a.split > 1 ? a.ws + static_cast<u64>(s) * a.M * a.n_h : nullptr;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + 16 * i + g + 8 * h;
      if (m >= a.M) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int n = n0 + 8 * j + 2 * t + e;
          if (n >= a.n_h) continue;
          const float v = acc[i][j][2 * h + e];
          if (part != nullptr) {
            part[static_cast<u64>(m) * a.n_h + n] = v;
          } else {
            const float b = a.bias != nullptr ? to_f32(a.bias[a.n_hbm + n]) : 0.0f;
            a.y[static_cast<u64>(m) * a.N + a.n_hbm + n] = from_f32(v + b);
          }
        }
      }
    }
  }
  if (part == nullptr) return;
  __threadfence();
  math_sync();
  u32* counter = a.counters + mblock * n_tiles + tile;
  if (tid == 0) {
    const u32 old = atomicAdd(counter, 1u);
    const int last = old == static_cast<u32>(a.split - 1);
    if (last) atomicExch(counter, 0u);
    *s_last = last;
  }
  math_sync();
  if (*s_last) {
    __threadfence();
    for (int idx = tid; idx < DG_BM * DG_BN; idx += DG_MATH_THREADS) {
      const int m = mblock * DG_BM + idx / DG_BN, n = tile * DG_BN + idx % DG_BN;
      if (m >= a.M || n >= a.n_h) continue;
      float v = 0.0f;
      for (int sp = 0; sp < a.split; ++sp) {
        v += ld_partial(a.ws + (static_cast<u64>(sp) * a.M + m) * a.n_h + n);
      }
      if (a.bias != nullptr) v += to_f32(a.bias[a.n_hbm + n]);
      a.y[static_cast<u64>(m) * a.N + a.n_hbm + n] = from_f32(v);
    }
  }
  math_sync();  // s_last is rewritten by the next unit's epilogue
}

__device__ __forceinline__ void math(const Args& a, const Units& w, int mblock, bool live, int P,
                                     u32 ring, u32 full, u32 empty, int* s_last) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n_tiles = (a.n_h + DG_BN - 1) / DG_BN;
  // ldmatrix row addresses: x (A) matrices j = lane / 8: rows +8 for j odd, k + 8 for j >= 2;
  // weight (B) matrices: k + 8 for j odd, rows + 8 for j >= 2.
  const int ar = (warp >> 2) * 64 + (lane & 7) + 8 * ((lane >> 3) & 1), ac = lane >> 4;
  const int br = (warp & 3) * 32 + (lane & 7) + 8 * (lane >> 4), bc = (lane >> 3) & 1;
  u32 remote_empty[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) remote_empty[r] = r < P && P > 1 ? mapa(empty, static_cast<u32>(r)) : 0u;
  float acc[4][4][4];
  int q = 0;
#pragma unroll 1
  for (int u = w.stream; u < w.units; u += w.n_streams) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#pragma unroll 1
    for (int kc = w.kc0(u); kc < w.kc1(u); ++kc, ++q) {
      const int slot = q % a.stages;
      mbarrier_wait_parity_cta(full + 8u * slot, static_cast<u32>((q / a.stages) & 1));
      const u32 xs = ring + static_cast<u32>(slot) * DG_SLOT_BYTES, ws = xs + DG_TILE_BYTES;
#pragma unroll
      for (int kk = 0; kk < (live ? DG_BK / 16 : 0); ++kk) {  // a CTA past M only frees its slots
        u32 af[4][4], bf[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          ldmatrix_x4(xs + swz(ar + 16 * i, 2 * kk + ac), af[i][0], af[i][1], af[i][2], af[i][3]);
        }
#pragma unroll
        for (int jp = 0; jp < 2; ++jp) {
          ldmatrix_x4(ws + swz(br + 16 * jp, 2 * kk + bc), bf[2 * jp][0], bf[2 * jp][1],
                      bf[2 * jp + 1][0], bf[2 * jp + 1][1]);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            mma16816(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bf[j][0], bf[j][1]);
      }
      __syncwarp();
      if (lane == 0) {
        if (P > 1) {
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            if (r < P) mbarrier_arrive_remote(remote_empty[r] + 8u * slot);
          }
        } else {
          mbarrier_arrive(empty + 8u * slot);
        }
      }
    }
    if (live) epilogue(a, acc, mblock, w.tile(u), u % w.split, n_tiles, s_last);
  }
}

}  // namespace dgemm

// Parameters (the order direct_gemm.py packs): wmaps (the 64-row map, then the 16-row map, each
// 128 B, 64-byte aligned), xmaps (gridDim.x x 128 B of device memory, 64-byte aligned: each CTA's
// copy of the x map), bias (0: none), y, ws (0: split 1), counters (0: split 1), M, K, N, n_hbm,
// n_h, split, cps (k-chunks of 64 per split), m_groups, stages (1..DG_MAX_STAGES), then the x map's
// 128 bytes as 16 u64 (parameters are captured by value in a CUDA graph, so a replay carries the
// map of the input it was captured with). Grid: P x clusters CTAs of DG_THREADS, clusters of P
// along x, clusters a multiple of m_groups. Dynamic shared memory: stages x 32 KB + 1024.
#define DG_XMAP_PARAMS                                                                          \
  u64 xm0, u64 xm1, u64 xm2, u64 xm3, u64 xm4, u64 xm5, u64 xm6, u64 xm7, u64 xm8, u64 xm9,   \
      u64 xm10, u64 xm11, u64 xm12, u64 xm13, u64 xm14, u64 xm15
extern "C" __global__ void __launch_bounds__(DG_THREADS, 1) direct_gemm(
    const unsigned char* __restrict__ wmaps, unsigned char* __restrict__ xmaps,
    const u16* __restrict__ bias, u16* __restrict__ y, float* __restrict__ ws,
    u32* __restrict__ counters, int M, int K, int N, int n_hbm, int n_h, int split, int cps,
    int m_groups, int stages, DG_XMAP_PARAMS) {
  using namespace dgemm;
  extern __shared__ unsigned char dg_dyn[];
  __shared__ __align__(8) u64 bars[2 * DG_MAX_STAGES];
  __shared__ int s_last;
  unsigned char* xmap = xmaps + static_cast<u64>(blockIdx.x) * DG_MAP_BYTES;
  const Args a{wmaps, xmap, bias, y, ws, counters, M, N, n_hbm, n_h, split, cps, stages};
  const int P = static_cast<int>(cluster_nctarank());
  const int rank = static_cast<int>(cluster_ctarank());
  const int cluster = static_cast<int>(blockIdx.x) / P;
  const int n_clusters = static_cast<int>(gridDim.x) / P;
  const int mblock = (cluster % m_groups) * P + rank;
  const bool live = mblock * DG_BM < M;
  const u32 base = smem_u32(dg_dyn);
  const u32 ring = (base + 1023u) & ~1023u;
  const u32 full = smem_u32(&bars[0]), empty = smem_u32(&bars[DG_MAX_STAGES]);
  const int kchunks = (K + DG_BK - 1) / DG_BK;
  const Units w{cluster / m_groups, n_clusters / m_groups, ((n_h + DG_BN - 1) / DG_BN) * split, split,
                cps, kchunks};
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(full + 8u * s, 1);  // the producer's expect_tx arrival
      mbarrier_init(empty + 8u * s, DG_MATH_WARPS * P);
    }
    fence_mbarrier_init_cluster();
  }
  if (threadIdx.x == DG_MATH_THREADS) {  // the producer thread: this CTA's x map, for its own use
    const u64 words[16] = {xm0, xm1, xm2, xm3, xm4, xm5, xm6, xm7, xm8, xm9, xm10, xm11, xm12, xm13, xm14, xm15};
    u64* dst = reinterpret_cast<u64*>(xmap);
#pragma unroll
    for (int i = 0; i < 16; ++i) dst[i] = words[i];
    tensormap_publish(xmap);
  }
  __syncwarp();  // warp 8 reconverges (one lane wrote the map) before the aligned barrier
  if (P > 1) {
    cluster_sync();  // every CTA's barriers exist before a multicast or a remote arrival
  } else {
    __syncthreads();
  }
  if (threadIdx.x == DG_MATH_THREADS) {
    producer(a, w, mblock, live, rank, P, ring, full, empty);
  } else if (threadIdx.x < DG_MATH_THREADS) {
    math(a, w, mblock, live, P, ring, full, empty, &s_last);
  }
  __syncwarp();  // warp 8 reconverges (one lane ran the producer)
  if (P > 1) cluster_sync();  // no peer still multicasts into, or arrives on, this CTA's shared memory
}
