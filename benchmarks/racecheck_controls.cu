// Control kernels for compute-sanitizer's racecheck (benchmarks/sanitizer.py, group control.*).
//
// Each kernel streams `stages` stages of 256 16-byte chunks through a two-slot shared-memory ring:
// thread q writes chunk q of a stage into its slot, and thread (q + 96) % 256, three warps away,
// reads it. They differ only in how a slot changes hands, which is what tells a racecheck report
// on a shipped kernel apart: a hazard on the correctly ordered hand-overs is the tool's, one on
// the unsynchronised ring is what a real missing order looks like.
//   ring_cp_async_mbarrier  cp.async writes, completion counted on the slot's `full` mbarrier by
//                           cp.async.mbarrier.arrive.noinc; readers wait on it, then each warp
//                           arrives on the slot's `empty` mbarrier, which the writers wait on
//                           before refilling it. split_gemv.cu's HBM ring hands slots over so.
//   ring_st_shared_mbarrier the same mbarriers, with plain shared stores and a release arrive.
//   ring_cp_async_syncthreads cp.async.wait_all and __syncthreads at each hand-over.
//   ring_unsynchronised     plain stores, no order at all: a real race.
// out[q] is the sum of the `x` words thread q read, so a wrong hand-over shows in the result too.
#include "smemkit/ptx.cuh"

using namespace smemkit;

namespace {

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int READ_SHIFT = 96;

__device__ __forceinline__ void cp_async16(u32 dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

__device__ __forceinline__ int reader_of(int q) { return (q + READ_SHIFT) % THREADS; }

// MODE 0: cp.async + noinc arrive; 1: st.shared + release arrive.
template <int MODE>
__device__ __forceinline__ void mbarrier_ring(const uint4* __restrict__ src, u32* __restrict__ out,
                                              int stages) {
  __shared__ uint4 ring[2][THREADS];
  __shared__ __align__(8) u64 full[2], empty[2];
  const int q = threadIdx.x, lane = q & 31;
  if (q == 0) {
    for (int i = 0; i < 2; ++i) {
      mbarrier_init(smem_u32(&full[i]), THREADS);
      mbarrier_init(smem_u32(&empty[i]), WARPS);
    }
  }
  __syncthreads();
  auto fill = [&](int stage) {
    const int slot = stage & 1;
    const uint4* from = src + static_cast<u64>(stage) * THREADS + q;
    if (MODE == 0) {
      cp_async16(smem_u32(&ring[slot][q]), from);
      cp_async_arrive_noinc(smem_u32(&full[slot]));
    } else {
      ring[slot][q] = *from;
      mbarrier_arrive(smem_u32(&full[slot]));
    }
  };
  u32 sum = 0;
  if (stages > 0) fill(0);
  for (int s = 0; s < stages; ++s) {
    const int slot = s & 1;
    if (s + 1 < stages) {
      // stage s + 1 goes where stage s - 1 was: wait until every warp has read that one
      if (s >= 1) mbarrier_wait_parity_cta(smem_u32(&empty[(s + 1) & 1]), ((s - 1) >> 1) & 1);
      fill(s + 1);
    }
    mbarrier_wait_parity_cta(smem_u32(&full[slot]), (s >> 1) & 1);
    sum += ring[slot][reader_of(q)].x;
    __syncwarp();
    if (lane == 0) mbarrier_arrive(smem_u32(&empty[slot]));
  }
  if (MODE == 0) cp_async_wait_all();
  out[q] = sum;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    ring_cp_async_mbarrier(const uint4* __restrict__ src, u32* __restrict__ out, int stages) {
  mbarrier_ring<0>(src, out, stages);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    ring_st_shared_mbarrier(const uint4* __restrict__ src, u32* __restrict__ out, int stages) {
  mbarrier_ring<1>(src, out, stages);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    ring_cp_async_syncthreads(const uint4* __restrict__ src, u32* __restrict__ out, int stages) {
  __shared__ uint4 ring[2][THREADS];
  const int q = threadIdx.x;
  u32 sum = 0;
  for (int s = 0; s < stages; ++s) {
    cp_async16(smem_u32(&ring[s & 1][q]), src + static_cast<u64>(s) * THREADS + q);
    cp_async_wait_all();
    __syncthreads();  // the stage has landed for every reader
    sum += ring[s & 1][reader_of(q)].x;
    __syncthreads();  // read before the slot is written again (two stages on)
  }
  out[q] = sum;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    ring_unsynchronised(const uint4* __restrict__ src, u32* __restrict__ out, int stages) {
  __shared__ uint4 ring[2][THREADS];
  const int q = threadIdx.x;
  u32 sum = 0;
  for (int s = 0; s < stages; ++s) {
    ring[s & 1][q] = src[static_cast<u64>(s) * THREADS + q];
    sum += ring[s & 1][reader_of(q)].x;  // no order between another thread's store and this load
  }
  out[q] = sum;
}
