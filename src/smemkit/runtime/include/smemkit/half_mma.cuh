// smemkit/half_mma.cuh: 16-bit tensor-core and load helpers shared by the offload kernels
// (split_gemv.cu, split_attention.cu, direct_gemm.cu).
//
// The including file defines SMEMKIT_HALF_BF16 (1: bf16, 0: fp16) before including this header;
// u16 (ptx.cuh) values hold one element of that type.
#pragma once

#include <smemkit/ptx.cuh>

#ifndef SMEMKIT_HALF_BF16
#error "define SMEMKIT_HALF_BF16 (1 bf16, 0 fp16) before including smemkit/half_mma.cuh"
#endif

namespace smemkit {

__device__ __forceinline__ uint4 zero4() { return make_uint4(0u, 0u, 0u, 0u); }

// 16-byte loads of 16-bit data: the policies are ptx.cuh's ld_v4 (kLdCached for x / q, which
// every warp re-reads; kLdStream for host rows through the mapped pointer of pinned memory, the
// load `smemkit probe` measured at 51 GB/s; kLdNoAllocate for HBM data read once).

// Partials written by other CTAs: read at L2 (never a stale L1 line).
__device__ __forceinline__ float ld_partial(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}

// c += A (16 x 16, row) . B (16 x 8, col), fp32 accumulators, 16-bit operands.
__device__ __forceinline__ void mma16816(float (&c)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0,
                                         u32 b1) {
#if SMEMKIT_HALF_BF16
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// Four 8x8 matrices of 16-bit elements from shared memory (lanes 8j..8j+7 give the row
// addresses of matrix j); thread l receives row l/4, elements 2(l%4), 2(l%4)+1 of each: the mma
// fragment layout.
__device__ __forceinline__ void ldmatrix_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ float to_f32(u16 h) {
#if SMEMKIT_HALF_BF16
  return __uint_as_float(static_cast<u32>(h) << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

__device__ __forceinline__ u16 from_f32(float f) {
  u16 h;
#if SMEMKIT_HALF_BF16
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
#else
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
#endif
  return h;
}

}  // namespace smemkit
