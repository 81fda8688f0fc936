// Microbenchmarks behind `smemkit probe` (CREDIT Table II and the host link).
//
// The DSMEM kernels run as a cluster of CTAs that each take just over half an SM's shared
// memory, so no two can share an SM (the SM ids are written out and checked on the host).
// Methodology follows the CREDIT paper's description (seed 000, §III-A): dependent 32-bit
// loads for latency, 256 threads issuing independent 32-bit accesses for rates, back-to-back
// arrive+wait for the barrier; each figure is the median of at least 15 launches.
#include <smemkit/ptx.cuh>

using namespace smemkit;

#define CHASE_WORDS 4096
#define CHASE_STRIDE 257  // coprime with CHASE_WORDS: one cycle through every word
#define RATE_THREADS 256

// Dependent-load latency. out[0..1] = SM id of rank 0 and 1, out[2] = cycles for `steps`
// loads by rank 0's thread 0, out[3] = the final pointer (keeps the chain alive).
extern "C" __global__ void smem_chase(u64* out, int steps, int remote) {
  extern __shared__ __align__(16) u32 chain[];
  const u32 rank = cluster_ctarank();
  const u32 base = smem_u32(chain);
  for (int i = threadIdx.x; i < CHASE_WORDS; i += blockDim.x) {
    const u32 next = base + 4u * ((i + CHASE_STRIDE) % CHASE_WORDS);
    chain[i] = remote ? mapa(next, rank) : next;  // each CTA links its own words
  }
  if (threadIdx.x == 0) out[rank] = smid();
  cluster_sync();
  if (rank == 0 && threadIdx.x == 0) {
    u32 p;
    long long t0, t1;
    if (remote) {
      p = mapa(base, 1);
#pragma unroll 1
      for (int i = 0; i < CHASE_WORDS; ++i) p = ld_cluster_u32(p);
      t0 = clock64();
#pragma unroll 1
      for (int i = 0; i < steps; ++i) p = ld_cluster_u32(p);
      t1 = clock64();
    } else {
      p = base;
#pragma unroll 1
      for (int i = 0; i < CHASE_WORDS; ++i) p = ld_shared_u32(p);
      t0 = clock64();
#pragma unroll 1
      for (int i = 0; i < steps; ++i) p = ld_shared_u32(p);
      t1 = clock64();
    }
    out[2] = static_cast<u64>(t1 - t0);
    out[3] = p;
  }
  cluster_sync();  // rank 1's shared memory must outlive rank 0's remote loads
}

// Throughput of one CTA's 256 threads: mode 0 local read, 1 remote read, 2 local store,
// 3 remote store (remote = rank 1's shared memory). Each thread makes `iters` 32-bit accesses,
// coalesced (a warp covers 128 contiguous bytes). out[0..1] = SM ids, out[2] = cycles from the
// earliest warp start to the latest warp end, out[3] = a checksum that keeps loads alive.
extern "C" __global__ void __launch_bounds__(RATE_THREADS) smem_rate(u64* out, int iters, int mode) {
  extern __shared__ __align__(16) u32 words[];
  __shared__ long long warp_start[RATE_THREADS / 32], warp_end[RATE_THREADS / 32];
  const u32 rank = cluster_ctarank();
  for (int i = threadIdx.x; i < CHASE_WORDS; i += blockDim.x) words[i] = i * 2654435761u;
  if (threadIdx.x == 0) out[rank] = smid();
  cluster_sync();
  if (rank == 0) {
    const u32 remote = mapa(smem_u32(words), 1);
    u32 idx = threadIdx.x, acc = 0;
    __syncthreads();
    const long long t0 = clock64();
    // Local accesses go through a volatile C++ pointer, remote ones through ld/st.shared::cluster:
    // the loop bodies the CREDIT paper describes. (An asm ld.shared spelling of the local loop
    // measured 14.0 B/cycle against 20.1 for this one: the rate is issue-bound, so the loop's
    // instruction mix is part of the figure; see docs/probe.md.)
    volatile u32* const vw = words;
    if (mode == 0) {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) {
        acc += vw[idx];
        idx = (idx + RATE_THREADS) & (CHASE_WORDS - 1);
      }
    } else if (mode == 1) {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) {
        acc += ld_cluster_u32(remote + 4 * idx);
        idx = (idx + RATE_THREADS) & (CHASE_WORDS - 1);
      }
    } else if (mode == 2) {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) {
        vw[idx] = i + threadIdx.x;
        idx = (idx + RATE_THREADS) & (CHASE_WORDS - 1);
      }
    } else {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) {
        st_cluster_u32(remote + 4 * idx, i + threadIdx.x);
        idx = (idx + RATE_THREADS) & (CHASE_WORDS - 1);
      }
    }
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) {
      warp_start[threadIdx.x / 32] = t0;
      warp_end[threadIdx.x / 32] = t1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long lo = warp_start[0], hi = warp_end[0];
      for (int w = 1; w < RATE_THREADS / 32; ++w) {
        lo = min(lo, warp_start[w]);
        hi = max(hi, warp_end[w]);
      }
      out[2] = static_cast<u64>(hi - lo);
    }
    if (acc == 0xdeadbeefu) out[3] = acc;  // practically never true; keeps the loads
  }
  cluster_sync();
}

// Cluster barrier latency: every thread of every CTA runs `warmup` then `reps` arrive+wait
// rounds; rank 0's thread 0 times the `reps`. out[rank] = SM id, out[P] = cycles.
extern "C" __global__ void cluster_barrier(u64* out, int warmup, int reps) {
  extern __shared__ __align__(16) u32 pad[];
  const u32 rank = cluster_ctarank();
  const u32 P = cluster_nctarank();
  if (threadIdx.x == 0) {
    pad[0] = rank;
    out[rank] = smid();
  }
#pragma unroll 1
  for (int i = 0; i < warmup; ++i) cluster_sync();
  cluster_sync();
  const long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < reps; ++i) cluster_sync();
  const long long t1 = clock64();
  if (rank == 0 && threadIdx.x == 0) out[P] = static_cast<u64>(t1 - t0);
}

// Streams `n16` 16-byte words from `src` (device or pinned host memory through its UVA
// pointer) with a grid-stride loop, four loads in flight per thread; one XOR per CTA goes to
// sink[blockIdx.x] so nothing is optimised away.
extern "C" __global__ void stream_read(const uint4* __restrict__ src, u64 n16, u64* sink) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  u32 acc = 0;
  u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = __ldcs(src + i), b = __ldcs(src + i + stride);
    uint4 c = __ldcs(src + i + 2 * stride), d = __ldcs(src + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
           d.z ^ d.w;
  }
  for (; i < n16; i += stride) {
    uint4 a = __ldcs(src + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if ((threadIdx.x & 31) == 0) atomicXor(reinterpret_cast<unsigned int*>(sink + blockIdx.x), acc);
}

// Spins for `cycles` SM cycles; timed with events it gives the SM clock under load.
extern "C" __global__ void spin(u64* out, u64 cycles) {
  const long long t0 = clock64();
  long long t = t0;
  while (static_cast<u64>(t - t0) < cycles) t = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<u64>(t - t0);
}
