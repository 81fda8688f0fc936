// Host-read paths probe: how fast the asynchronous copy engine of the SMs reads pinned host memory
// straight into shared memory, by plain bulk copies and by tensor copies (TMA), with and without
// cluster multicast (DAK, seed 003; SPEC §2; issue 5: "choose among TMA, cp.async.bulk and plain
// 16-byte loads for the host reads by measurement"). Launched by smemkit/offload/host_paths.py;
// the 16-byte-load reference is the congestion probe's host role (congestion.cu).
//
// Both kernels keep a ring of `stages` shared-memory slots per CTA: one thread keeps every slot's
// copy in flight (bytes in flight per CTA = stages x slot bytes), every thread XORs the whole slot
// once it has landed (so the data are used, and the host can check that the right bytes came),
// then the slot is refilled with the CTA's next piece. Each CTA writes
// stats[4 * cta + {0, 1, 2, 3}] = {globaltimer at start, at end (ns), bytes landed in this CTA,
// XOR of every 32-bit word that landed}; the host turns them into the link rate.
#include <smemkit/ptx.cuh>

#define HP_THREADS 128
#define HP_MAX_STAGES 8

namespace hpaths {

using namespace smemkit;

// XOR of the slot's 32-bit words (`bytes` a multiple of 16; thread i takes 16-byte words i, i + HP_THREADS, ...).
__device__ __forceinline__ u32 xor_slot(const unsigned char* slot, u32 bytes) {
  const uint4* v = reinterpret_cast<const uint4*>(slot);
  u32 acc = 0;
#pragma unroll 4
  for (u32 i = threadIdx.x; i < bytes / 16; i += HP_THREADS) {
    const uint4 w = v[i];
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  return acc;
}

__device__ __forceinline__ void write_stats(u64* stats, u64 t0, u64 landed, u32 acc, u32* s_acc) {
  atomicXor(s_acc, acc);
  __syncthreads();
  if (threadIdx.x == 0) {
    const int cta = static_cast<int>(blockIdx.x);
    stats[4 * cta + 0] = t0;
    stats[4 * cta + 1] = globaltimer();
    stats[4 * cta + 2] = landed;
    stats[4 * cta + 3] = *s_acc;
  }
}

// The dynamic shared memory rounded up to 1024 bytes (128-byte swizzled TMA boxes need it).
__device__ __forceinline__ unsigned char* aligned_ring(unsigned char* base) {
  const u32 a = smem_u32(base);
  return base + (((a + 1023u) & ~1023u) - a);
}

}  // namespace hpaths

using namespace hpaths;

// cp.async.bulk: CTA c reads chunks [c x per, (c + 1) x per) of `chunk` bytes each (the last CTA
// fewer) from `src` (the mapped device pointer of pinned host memory, or any global address).
extern "C" __global__ void __launch_bounds__(HP_THREADS) host_bulk_probe(
    const unsigned char* __restrict__ src, u64 n_chunks, u32 chunk, int stages, u64* stats) {
  extern __shared__ unsigned char hp_dyn[];
  __shared__ __align__(8) u64 bars[HP_MAX_STAGES];
  __shared__ u32 s_acc;
  unsigned char* ring = aligned_ring(hp_dyn);
  const u64 per = (n_chunks + gridDim.x - 1) / gridDim.x;
  const u64 c0 = min(n_chunks, per * blockIdx.x);
  const u64 count = min(n_chunks, c0 + per) - c0;
  if (threadIdx.x == 0) {
    s_acc = 0;
    for (int s = 0; s < stages; ++s) mbarrier_init(smem_u32(&bars[s]), 1);
    fence_proxy_async_shared();
  }
  __syncthreads();
  const u64 t0 = globaltimer();
  if (threadIdx.x == 0) {
    for (u64 i = 0; i < min(count, static_cast<u64>(stages)); ++i) {
      mbarrier_arrive_expect_tx(smem_u32(&bars[i]), chunk);
      cp_async_bulk_g2s(smem_u32(ring + i * chunk), src + (c0 + i) * chunk, chunk, smem_u32(&bars[i]));
    }
  }
  u32 acc = 0;
#pragma unroll 1
  for (u64 i = 0; i < count; ++i) {
    const int s = static_cast<int>(i % stages);
    mbarrier_wait_parity(smem_u32(&bars[s]), static_cast<u32>((i / stages) & 1));
    acc ^= xor_slot(ring + s * chunk, chunk);
    __syncthreads();  // every thread is done with slot s
    if (threadIdx.x == 0 && i + stages < count) {
      fence_proxy_async_shared();
      mbarrier_arrive_expect_tx(smem_u32(&bars[s]), chunk);
      cp_async_bulk_g2s(smem_u32(ring + s * chunk), src + (c0 + i + stages) * chunk, chunk,
                        smem_u32(&bars[s]));
    }
  }
  write_stats(stats, t0, count * chunk, acc, &s_acc);
}

// TMA: the tensor map at `tmap` describes the host part as a row-major bf16 matrix; its box is
// box_rows x tile_cols. A tile is (box_rows x P) rows x tile_cols columns; tile t covers rows
// (t / tiles_per_band) x tile rows and columns (t % tiles_per_band) x tile_cols (k-steps of one
// band of rows, as a GEMM walks them). Cluster q of the grid takes tiles [q x per, (q + 1) x per).
// With clusters of P > 1, CTA rank r copies rows [r x box_rows, (r + 1) x box_rows) of each tile
// to every CTA of the cluster (multicast): each host byte crosses the link once and lands in P
// CTAs. A slot is refilled only after the whole cluster is done with it (cluster barrier).
extern "C" __global__ void __launch_bounds__(HP_THREADS) host_tma_probe(
    const void* __restrict__ tmap, int n_tiles, int tiles_per_band, int box_rows, int tile_cols,
    int stages, u64* stats) {
  extern __shared__ unsigned char hp_dyn[];
  __shared__ __align__(8) u64 bars[HP_MAX_STAGES];
  __shared__ u32 s_acc;
  unsigned char* ring = aligned_ring(hp_dyn);
  const int P = static_cast<int>(cluster_nctarank());
  const int rank = static_cast<int>(cluster_ctarank());
  const int q = static_cast<int>(blockIdx.x) / P;
  const int nq = static_cast<int>(gridDim.x) / P;
  const u32 box_bytes = static_cast<u32>(box_rows) * tile_cols * 2;
  const u32 tile_bytes = box_bytes * P;
  const int per = (n_tiles + nq - 1) / nq;
  const int t_begin = min(n_tiles, per * q);
  const int count = min(n_tiles, t_begin + per) - t_begin;
  const u16 mask = static_cast<u16>((1u << P) - 1u);
  if (threadIdx.x == 0) {
    s_acc = 0;
    for (int s = 0; s < stages; ++s) mbarrier_init(smem_u32(&bars[s]), 1);
    fence_mbarrier_init_cluster();
    fence_proxy_async_shared();
  }
  if (P > 1) {
    cluster_sync();  // every CTA's mbarriers exist before any multicast lands on them
  } else {
    __syncthreads();
  }
  const u64 t0 = globaltimer();
  auto issue = [&](int i, int s) {
    const int t = t_begin + i;
    const int row = (t / tiles_per_band) * box_rows * P + rank * box_rows;
    const int col = (t % tiles_per_band) * tile_cols;
    const u32 dst = smem_u32(ring + static_cast<u64>(s) * tile_bytes + static_cast<u64>(rank) * box_bytes);
    mbarrier_arrive_expect_tx(smem_u32(&bars[s]), tile_bytes);
    if (P > 1) {
      cp_async_bulk_tensor_2d_g2s_multicast(dst, tmap, col, row, smem_u32(&bars[s]), mask);
    } else {
      cp_async_bulk_tensor_2d_g2s(dst, tmap, col, row, smem_u32(&bars[s]));
    }
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < min(count, stages); ++i) issue(i, i);
  }
  u32 acc = 0;
#pragma unroll 1
  for (int i = 0; i < count; ++i) {
    const int s = i % stages;
    mbarrier_wait_parity(smem_u32(&bars[s]), static_cast<u32>((i / stages) & 1));
    acc ^= xor_slot(ring + static_cast<u64>(s) * tile_bytes, tile_bytes);
    if (P > 1) {
      cluster_sync();  // no CTA of the cluster still reads slot s
    } else {
      __syncthreads();
    }
    if (threadIdx.x == 0 && i + stages < count) {
      fence_proxy_async_shared();
      issue(i + stages, s);
    }
  }
  write_stats(stats, t0, static_cast<u64>(count) * tile_bytes, acc, &s_acc);
  if (P > 1) cluster_sync();  // no multicast still in flight towards a CTA that has exited
}
