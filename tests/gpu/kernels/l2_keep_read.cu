// Two reads of a buffer for the timing test: one that keeps the lines in L2 (an evict_last
// policy, as smemkit's re-read kernels load rows they read again) and one with plain loads.
typedef unsigned long long u64;

template <bool Keep>
__device__ void read_all(const float4* x, long long n, float* sink) {
  u64 policy = 0;
  if (Keep) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  float acc = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v;
    if (Keep) {
      asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                   : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(x + i), "l"(policy));
    } else {
      v = __ldg(x + i);
    }
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) sink[0] = acc;  // never true for the test's data; keeps the loads
}

extern "C" __global__ void read_keep(const float4* x, long long n, float* sink) { read_all<true>(x, n, sink); }
extern "C" __global__ void read_plain(const float4* x, long long n, float* sink) { read_all<false>(x, n, sink); }

// Drops every 128-byte line of `p` from the L2 without writing it back (discard.global.L2,
// sm_80+): after a dirtying fill, the L2 holds none of the fill's lines and no write-back is owed.
extern "C" __global__ void discard_l2(char* p, long long lines) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < lines;
       i += (long long)gridDim.x * blockDim.x) {
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i * 128) : "memory");
  }
}
