// smemkit/half_mma.cuh: 16-bit tensor-core and load helpers shared by the offload kernels
// (split_gemv.cu, split_attention.cu).
//
// The including file defines SMEMKIT_HALF_BF16 (1: bf16, 0: fp16) before including this header;
// u16 values hold one element of that type.
#pragma once

#include <smemkit/ptx.cuh>

#ifndef SMEMKIT_HALF_BF16
#error "define SMEMKIT_HALF_BF16 (1 bf16, 0 fp16) before including smemkit/half_mma.cuh"
#endif

typedef unsigned short u16;

namespace smemkit {

__device__ __forceinline__ uint4 zero4() { return make_uint4(0u, 0u, 0u, 0u); }

// 16-byte loads that differ only in their cache operator (the PTX instruction spelled out).
#define SMEMKIT_LOAD16(name, instruction)                                        \
  __device__ __forceinline__ uint4 name(const u16* p) {                          \
    uint4 v;                                                                      \
    asm volatile(instruction " {%0, %1, %2, %3}, [%4];"                           \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                     \
                 : "l"(p));                                                       \
    return v;                                                                     \
  }
// Through the read-only path, cached in L1 (small operands every warp re-reads).
SMEMKIT_LOAD16(ld_nc16, "ld.global.nc.v4.u32")
// Streamed (evict-first): host rows through the mapped pointer of pinned memory, the load
// `smemkit probe` measured at 51 GB/s.
SMEMKIT_LOAD16(ld_cs16, "ld.global.cs.v4.u32")
// Read once: read-only path, no L1 allocation.
SMEMKIT_LOAD16(ld_once16, "ld.global.nc.L1::no_allocate.v4.u32")
// Plain (the split GEMV's host_load = 2 experiment).
SMEMKIT_LOAD16(ld_plain16, "ld.global.v4.u32")
#undef SMEMKIT_LOAD16

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
