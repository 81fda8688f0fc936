// Why do two probe figures differ from the CREDIT paper's H100 values by more than 30 %?
// Same measurement, two spellings: cooperative_groups (as the paper's primitive benchmark is
// described) against smemkit's inline PTX (smemkit/ptx.cuh), on a cluster of 2 CTAs of 256
// threads forced onto different SMs.
#include <cooperative_groups.h>
#include <smemkit/ptx.cuh>
namespace cg = cooperative_groups;
using namespace smemkit;

// out[0] = cycles for `reps` barriers timed by rank 0 thread 0. mode 0: cg cluster.sync();
// mode 1: smemkit cluster_sync() (barrier.cluster.arrive.release + wait.acquire).
extern "C" __global__ void barrier_variants(u64* out, int reps, int mode) {
  extern __shared__ unsigned pad[];
  auto cluster = cg::this_cluster();
  if (threadIdx.x == 0) pad[0] = 1;
  for (int i = 0; i < 100; ++i) mode ? cluster_sync() : cluster.sync();
  cluster.sync();
  const long long t0 = clock64();
  if (mode) {
#pragma unroll 1
    for (int i = 0; i < reps; ++i) cluster_sync();
  } else {
#pragma unroll 1
    for (int i = 0; i < reps; ++i) cluster.sync();
  }
  const long long t1 = clock64();
  if (cluster.block_rank() == 0 && threadIdx.x == 0) out[0] = t1 - t0;
}

// Local read rate with a volatile shared pointer (C++ loads, the paper's spelling), 256 threads
// of rank 0, `iters` coalesced 32-bit loads each. out[0] = cycles (earliest warp start to latest
// warp end), out[1] = checksum.
extern "C" __global__ void local_read_volatile(u64* out, int iters) {
  extern __shared__ unsigned words[];
  __shared__ long long ws[8], we[8];
  auto cluster = cg::this_cluster();
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) words[i] = i * 2654435761u;
  cluster.sync();
  if (cluster.block_rank() == 0) {
    volatile unsigned* w = words;
    unsigned idx = threadIdx.x, acc = 0;
    __syncthreads();
    const long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
      acc += w[idx];
      idx = (idx + 256) & 4095;
    }
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) { ws[threadIdx.x / 32] = t0; we[threadIdx.x / 32] = t1; }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long lo = ws[0], hi = we[0];
      for (int k = 1; k < 8; ++k) { lo = min(lo, ws[k]); hi = max(hi, we[k]); }
      out[0] = hi - lo;
    }
    if (acc == 0xdeadbeefu) out[1] = acc;
  }
  cluster.sync();
}
