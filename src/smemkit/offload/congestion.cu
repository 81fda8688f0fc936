// Congestion probe for direct host reads (DAK's congestion control; SPEC §2; issue 5).
// Launched by smemkit/offload/congestion.py.
//
// One grid of PROBE_THREADS-thread CTAs, two roles by block index (never %smid):
//   blockIdx.x <  host_ctas  read `host_n16` 16-byte words of pinned host memory (its mapped
//                            pointer), split evenly over the host CTAs, each thread keeping `lpt`
//                            loads in flight (window = lpt * PROBE_THREADS * 16 B per CTA: 4 KB per
//                            unit of lpt); each iteration issues its lpt loads and consumes them
//                            before the next (`#pragma unroll 1`), so the window is a bound. When a
//                            host CTA is done it adds 1 to *done.
//   blockIdx.x >= host_ctas  stream a device buffer (a read-only XOR "sum", HBM_LPT loads in flight
//                            per thread, each CTA cycling over its own slice) until every host CTA
//                            is done and each warp has done at least `hbm_min_iters` iterations.
//                            With host_ctas = 0 (or host_n16 = 0), hbm_min_iters alone sets the
//                            work: the HBM-only reference.
// Every CTA writes stats[4 * cta + {0, 1, 2, 3}] = {globaltimer at start, at end (ns), bytes read,
// XOR of what it read (keeps the loads alive)}. The host turns them into each role's bandwidth:
// bytes / (last end - first start) over that role's CTAs.
//
// HOST_LOAD selects the host load as in split_gemv.cu (ld_v4's policies in ptx.cuh): 0 ld.global.cs
// (default), 1 ld.global.nc.L1::no_allocate, 2 plain ld.global.
#include <smemkit/ptx.cuh>

#ifndef HOST_LOAD
#define HOST_LOAD 0
#endif

#define PROBE_THREADS 256
#define HBM_LPT 8

namespace cprobe {

using namespace smemkit;

// HOST_LOAD 0/1/2 = ld_v4 policies stream / no-allocate / plain (ptx.cuh).
__device__ __forceinline__ uint4 ld_host(const uint4* p) { return ld_v4<HOST_LOAD>(p); }

__device__ __forceinline__ uint4 ld_hbm(const uint4* p) { return ld_v4<kLdNoAllocate>(p); }

__device__ __forceinline__ u32 fold(const uint4& v) { return v.x ^ v.y ^ v.z ^ v.w; }

__device__ __forceinline__ u32 ld_volatile(const u32* p) {
  u32 v;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Words [begin, end) of `src`; L loads of 16 B per thread in flight.
template <int L>
__device__ __forceinline__ u32 read_host(const uint4* __restrict__ src, u64 begin, u64 end) {
  constexpr u64 chunk = static_cast<u64>(L) * PROBE_THREADS;
  u32 acc = 0;
  u64 i = begin;
#pragma unroll 1
  for (; i + chunk <= end; i += chunk) {
    uint4 v[L];
#pragma unroll
    for (int l = 0; l < L; ++l) v[l] = ld_host(src + i + l * PROBE_THREADS + threadIdx.x);
#pragma unroll
    for (int l = 0; l < L; ++l) acc ^= fold(v[l]);
  }
#pragma unroll 1
  for (u64 j = i + threadIdx.x; j < end; j += PROBE_THREADS) acc ^= fold(ld_host(src + j));
  return acc;
}

}  // namespace cprobe

using namespace cprobe;

extern "C" __global__ void __launch_bounds__(PROBE_THREADS) congestion_probe(
    const uint4* __restrict__ host, u64 host_n16, const uint4* __restrict__ hbm, u64 hbm_n16,
    int host_ctas, int lpt, u64 hbm_min_iters, u32* done, u64* stats) {
  __shared__ u64 s_bytes;
  __shared__ u32 s_acc;
  if (threadIdx.x == 0) {
    s_bytes = 0;
    s_acc = 0;
  }
  __syncthreads();
  const u64 t0 = globaltimer();
  u32 acc = 0;
  const int cta = static_cast<int>(blockIdx.x);
  if (cta < host_ctas) {
    const u64 per = (host_n16 + host_ctas - 1) / host_ctas;
    const u64 begin = min(host_n16, per * cta);
    const u64 end = min(host_n16, begin + per);
    switch (lpt) {
      case 1: acc = read_host<1>(host, begin, end); break;
      case 2: acc = read_host<2>(host, begin, end); break;
      case 4: acc = read_host<4>(host, begin, end); break;
      case 8: acc = read_host<8>(host, begin, end); break;
      default: acc = read_host<16>(host, begin, end); break;
    }
    if (threadIdx.x == 0) s_bytes = (end - begin) * 16;
  } else {
    // This CTA's slice of the device buffer, a whole number of CTA-wide chunks.
    constexpr u64 chunk = static_cast<u64>(HBM_LPT) * PROBE_THREADS;
    const int nctas = static_cast<int>(gridDim.x) - host_ctas;
    const u64 slice = hbm_n16 / nctas / chunk * chunk;
    const uint4* base = hbm + slice * (cta - host_ctas);
    const u32 need = static_cast<u32>(host_n16 > 0 ? host_ctas : 0);
    u64 pos = 0, iters = 0;
#pragma unroll 1
    for (;;) {
      uint4 v[HBM_LPT];
#pragma unroll
      for (int l = 0; l < HBM_LPT; ++l) v[l] = ld_hbm(base + pos + l * PROBE_THREADS + threadIdx.x);
#pragma unroll
      for (int l = 0; l < HBM_LPT; ++l) acc ^= fold(v[l]);
      pos += chunk;
      if (pos + chunk > slice) pos = 0;
      ++iters;
      // Each warp decides for itself (no CTA barrier in the loop): lane 0 polls the flag.
      int stop = 0;
      if ((threadIdx.x & 31) == 0) stop = iters >= hbm_min_iters && ld_volatile(done) >= need;
      if (__shfl_sync(0xffffffffu, stop, 0)) break;
    }
    if ((threadIdx.x & 31) == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&s_bytes),
                                           static_cast<unsigned long long>(iters) * 32 * HBM_LPT * 16);
  }
  atomicXor(&s_acc, acc);
  __syncthreads();
  if (threadIdx.x == 0) {
    const u64 t1 = globaltimer();
    stats[4 * cta + 0] = t0;
    stats[4 * cta + 1] = t1;
    stats[4 * cta + 2] = s_bytes;
    stats[4 * cta + 3] = s_acc;
    if (cta < host_ctas) {
      __threadfence();
      atomicAdd(done, 1u);
    }
  }
}
