// smemkit/reduce_reuse.cuh: device helpers shared by the generated reduction-reuse kernels
// (smemkit.reduction.codegen). A generated kernel defines its workload's expressions and calls
// these for slicing, staging, block reduction and the one-way cluster exchange.
#pragma once
#include <smemkit/ptx.cuh>

namespace smemkit {

// ---- arithmetic with torch's semantics ----------------------------------------------------
// max/min that propagate NaN (fmaxf/fminf would drop it), as torch.maximum/amax do: one
// max.NaN / min.NaN instruction (sm_80+; these kernels need sm_90), a NaN operand giving the
// canonical NaN. With two compares and a select instead, quant_int8's cluster kernel ran at 3.79
// TB/s at 64K against 4.29 with these (commit 90cb384).
__device__ __forceinline__ float nan_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float nan_min(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// 1/sqrt correctly rounded enough for 1e-5 relative accuracy (rsqrtf is ~2 ulp, fine too, but
// sqrt + div keeps inf/0 behaviour identical to the reference).
__device__ __forceinline__ float rsqrt_ieee(float x) { return 1.0f / sqrtf(x); }

struct OpSum {
  static __device__ __forceinline__ float identity() { return 0.0f; }
  static __device__ __forceinline__ float apply(float a, float b) { return a + b; }
};
struct OpMax {
  static __device__ __forceinline__ float identity() { return -__int_as_float(0x7f800000); }
  static __device__ __forceinline__ float apply(float a, float b) { return nan_max(a, b); }
};
struct OpMin {
  static __device__ __forceinline__ float identity() { return __int_as_float(0x7f800000); }
  static __device__ __forceinline__ float apply(float a, float b) { return nan_min(a, b); }
};

// Butterfly over the warp: every lane ends with the same, order-fixed result.
template <class Op>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// ---- row slicing ----------------------------------------------------------------------------
// CTA `rank` of P owns row columns [lo, hi); data is handled in 16-byte vectors of the flat
// (row-major) array, so a slice covers flat vectors [v0, v1) whose first and last may be partial.
struct Slice {
  long long row_start;  // flat index of column 0 of this row
  int lo, hi;           // columns owned by this CTA
  long long v0;         // first flat vector index touched
  int nvec;             // vectors touched
  long long full0;      // first fully owned vector (flat vector index)
  int nfull;            // fully owned vectors (contiguous, 16-byte aligned): the bulk-copy range
  int ifull0;           // full0 - v0 (0 or 1): the slice's first fully owned vector, counted from v0
};

__device__ __forceinline__ Slice make_slice(int row, int N, int rank, int P) {
  Slice s;
  // ceil(N / P) rounded up to whole 16-byte vectors: smemkit.reduction.variant.slice_columns, the
  // rule the generated kernels' _cap is derived from (tests/cpu/reduction/test_slice_rule.py reads
  // this line and checks it against that function)
  const int per = ((N + P - 1) / P + 3) & ~3;
  s.row_start = static_cast<long long>(row) * N;
  s.lo = min(N, rank * per);
  s.hi = min(N, s.lo + per);
  const long long f_lo = s.row_start + s.lo, f_hi = s.row_start + s.hi;
  s.v0 = f_lo >> 2;
  s.nvec = s.hi > s.lo ? static_cast<int>(((f_hi + 3) >> 2) - s.v0) : 0;
  s.full0 = (f_lo + 3) >> 2;
  const long long full1 = f_hi >> 2;
  s.nfull = full1 > s.full0 ? static_cast<int>(full1 - s.full0) : 0;
  s.ifull0 = static_cast<int>(s.full0 - s.v0);
  return s;
}

// Load the partial vectors of an input's slice (at most one at each end) into shared memory laid
// out by flat vector (smem vector i holds flat vector s.v0 + i), zero outside the slice. The
// fully owned vectors between them are bulk-copied (stage_full_vectors). Uses threads 32..39.
__device__ __forceinline__ void stage_partial_vectors(float4* dst, const float* __restrict__ src,
                                                      const Slice& s) {
  const int e = static_cast<int>(threadIdx.x) - 32;
  if (e < 0 || e >= 8 || s.nvec == 0) return;
  const int which = e >> 2, lane = e & 3;
  const int i = which == 0 ? 0 : s.nvec - 1;
  if (which == 1 && i == 0) return;  // a single vector is handled once, by which == 0
  const long long v = s.v0 + i;
  if (v >= s.full0 && v < s.full0 + s.nfull) return;  // full: the bulk copy brings it
  const long long f = 4 * v + lane;
  const long long f_lo = s.row_start + s.lo, f_hi = s.row_start + s.hi;
  reinterpret_cast<float*>(dst + i)[lane] = (f >= f_lo && f < f_hi) ? src[f] : 0.0f;
}

// Thread 0 issues the bulk copy of the fully owned, 16-byte aligned vectors of the slice.
__device__ __forceinline__ void stage_full_vectors(float4* dst, const float* __restrict__ src,
                                                   const Slice& s, u32 bar) {
  if (threadIdx.x == 0 && s.nfull > 0) {
    cp_async_bulk_g2s(smem_u32(dst + (s.full0 - s.v0)), src + 4 * s.full0,
                      static_cast<u32>(s.nfull) * 16u, bar);
  }
}

// L2 policy for data a later pass reads again: keep it (evict last), as the re-read variant
// wants its second and third passes over a row to hit L2 rather than HBM.
__device__ __forceinline__ u64 l2_keep_policy() {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

__device__ __forceinline__ float4 ldg_keep(const float4* p, u64 policy) {
  float4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

// The lanes of vector v that the slice owns, by guarded scalar loads (never out of bounds), zeros
// elsewhere: the load_vector* functions' path for the partial vectors at a slice's ends.
__device__ __forceinline__ float4 load_partial_vector(const float* __restrict__ src, long long v,
                                                      const Slice& s) {
  const long long f_lo = s.row_start + s.lo, f_hi = s.row_start + s.hi;
  float r[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const long long f = 4 * v + k;
    r[k] = (f >= f_lo && f < f_hi) ? __ldg(src + f) : 0.0f;
  }
  return make_float4(r[0], r[1], r[2], r[3]);
}

// A vector of an input read straight from global memory: one 16-byte load when the slice owns
// all four lanes, load_partial_vector otherwise. LastUse streams the data (evict first);
// otherwise it is kept in L2 for the next pass with `policy`.
template <bool LastUse>
__device__ __forceinline__ float4 load_vector(const float* __restrict__ src, long long v, const Slice& s,
                                              u64 policy) {
  const float4* p = reinterpret_cast<const float4*>(src) + v;
  if (v >= s.full0 && v < s.full0 + s.nfull) return LastUse ? __ldcs(p) : ldg_keep(p, policy);
  return load_partial_vector(src, v, s);
}

// load_vector for the regs kernels' one read of every element into registers: no cache hint.
// Streaming these loads (__ldcs) measured 3-6 % slower on the H200 (lars, pearson_bwd at 4K-8K;
// commit b13c30d).
__device__ __forceinline__ float4 load_vector_once(const float* __restrict__ src, long long v, const Slice& s) {
  if (v >= s.full0 && v < s.full0 + s.nfull) return __ldg(reinterpret_cast<const float4*>(src) + v);
  return load_partial_vector(src, v, s);
}

// Whether the slice owns its vector i (flat vector s.v0 + i) whole: one 32-bit compare, as the
// element loops test it for every vector.
__device__ __forceinline__ bool owns_index(int i, const Slice& s) {
  return static_cast<unsigned>(i - s.ifull0) < static_cast<unsigned>(s.nfull);
}

// Thread 0 prefetches the fully owned vectors of an input's slice into the L2 (an input the
// output pass reads from global memory once: its loads then hit the L2 instead of waiting on HBM).
__device__ __forceinline__ void prefetch_full_vectors_l2(const float* __restrict__ src, const Slice& s) {
  if (threadIdx.x == 0 && s.nfull > 0) prefetch_bulk_l2(src + 4 * s.full0, static_cast<u32>(s.nfull) * 16u);
}

// Whether the n vectors v, v + stride, ..., v + (n - 1) * stride are all owned whole (the batched
// loads of reread_l2 then need no per-vector test).
__device__ __forceinline__ bool owns_vectors(long long v, int n, int stride, const Slice& s) {
  return v >= s.full0 && v + static_cast<long long>(n - 1) * stride < s.full0 + s.nfull;
}

// One 16-byte load of a vector the slice owns whole: streamed on its last use, else kept in L2.
template <bool LastUse>
__device__ __forceinline__ float4 load_full_vector(const float* __restrict__ src, long long v, u64 policy) {
  const float4* p = reinterpret_cast<const float4*>(src) + v;
  return LastUse ? __ldcs(p) : ldg_keep(p, policy);
}

}  // namespace smemkit
