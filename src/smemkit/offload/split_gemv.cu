// Split GEMV / skinny GEMM for decode, weight split between HBM and pinned host memory
// (DAK, seed 003; SPEC §2; issue 5). Launched by smemkit/offload/gemv.py.
//
//   y[b, n] = sum_k x[b, k] W[n, k] (+ bias[n])     b < B <= 64, fp32 accumulation,
//   rows n <  n_hbm of W come from `w_hbm` (device memory, n_hbm x K, row-major),
//   rows n >= n_hbm come from `w_host` (pinned host memory through its mapped device pointer,
//   (N - n_hbm) x K, row-major): the kernel reads both tiers at once, no staging buffer.
//
// One grid, two roles chosen by block index (never by %smid):
//   blockIdx.x <  host_ctas   host CTAs (the congestion-controlled set). A unit is one 16-row
//                             tile of the host rows times one k-split; the CTA's 8 warps split the
//                             unit's k-range, each warp takes `host_steps` k-steps (32 k each) at
//                             a time and waits for them (`#pragma unroll 1`), so a CTA has at most
//                             host_steps * 8 KB of host reads outstanding: the congestion window.
//                             The 8 warps' partial tiles are summed through shared memory in warp
//                             order (deterministic).
//   blockIdx.x >= host_ctas   HBM CTAs. A unit is 128 rows (8 warps x 16 rows) times one k-split;
//                             each warp streams its 16 rows with 16-byte ld.global.nc loads,
//                             double-buffered in registers (HBM_STEPS k-steps per buffer, so
//                             2 * HBM_STEPS loads of 16 B in flight per thread while the previous
//                             buffer is multiplied).
// Units are dealt to the CTAs of a role round-robin by block index.
//
// Split-K across CTAs (split_g / split_h > 1): each unit writes its fp32 partial tile to the
// workspace ws[split][B][N]; the CTA that arrives last on the tile's counter (threadfence +
// atomicAdd, the classic "last block" pattern) sums the partials in split order 0..S-1, adds the
// bias, converts and stores, and resets the counter to 0 for the next launch. The sum order never
// depends on which CTA arrives last, so results are bitwise reproducible.
//
// Math: mma.sync.m16n8k16 (bf16 or fp16 in, fp32 accumulate) with the weight tile as A (16 rows x
// 16 k, row-major) and x as B (16 k x 8 batch columns, "col": k contiguous per column). Only the
// dot product matters, so the 16 k of one mma may be any 16 of the step's 32 as long as A and B
// agree. Thread (g = lane/4, t = lane%4) loads W[row g][8t .. 8t+7] and W[row g+8][8t .. 8t+7]
// (two 16-byte loads) and x[column g][8t .. 8t+7] (one): registers .x/.y of each feed the first
// mma (a0..a3 = Wg.x, Wg8.x, Wg.y, Wg8.y; b0, b1 = x.x, x.y), .z/.w the second. With the PTX
// fragment layouts (a0: row g, cols 2t..2t+1; a1: row g+8; a2/a3: cols 2t+8..2t+9;
// b0: rows 2t..2t+1 of column g; b1: rows 2t+8..2t+9) both operands map fragment position
// 2t+j -> k = 8t+j and 2t+8+j -> k = 8t+2+j, the same bijection, so the result is exact.
// Accumulator c0, c1: row g, batch columns 2t, 2t+1; c2, c3: row g+8.
//
// x (B x K) is read per fragment with ld.global.nc (cached in L1): it is up to 64 x 28672 x 2 B =
// 3.6 MB, too large for shared memory at the widest K, and the 8 warps of an HBM CTA read the same
// x fragments at nearly the same time, so L1 serves most of them (x/W traffic from L2 is B/128).
//
// Compile-time choices (defaults build with no defines):
//   GEMV_DTYPE  0 bf16, 1 fp16 (x, W, bias and y share it)
//   HOST_LOAD   how host rows are read: 0 ld.global.cs (streaming; the load `smemkit probe`
//               measured at 51 GB/s on pinned memory), 1 ld.global.nc.L1::no_allocate, 2 plain
//               ld.global
//   HOST_STAGE  1 (default): a host warp loads its group as whole row segments (hs * 64 bytes
//               contiguous per row, so 128-256 B per row per instruction for hs >= 2) into its
//               own shared-memory tile, then reads its mma fragments from there; 0: each thread
//               loads its fragments directly (64 B per row per instruction, the layout the mma
//               fragments impose). Over PCIe, longer contiguous requests should move more bytes
//               per transaction; the H200 run compares the two.
// Kernels: split_gemv_nt1, _nt2, _nt4, _nt8 (NT = batch tiles of 8: B <= 8 * NT).
#include <smemkit/ptx.cuh>

#ifndef GEMV_DTYPE
#define GEMV_DTYPE 0
#endif
#ifndef HOST_LOAD
#define HOST_LOAD 0
#endif
#ifndef HOST_STAGE
#define HOST_STAGE 1
#endif

#define GEMV_THREADS 256
#define GEMV_WARPS 8
#define TILE_M 16
#define TILE_K 32
#define BLOCK_ROWS (GEMV_WARPS * TILE_M)
#define HOST_STEPS_MAX 4

typedef unsigned short u16;

namespace sgemv {

using namespace smemkit;

// Per batch-tile count NT: k-steps per register buffer on the HBM path (two buffers, so
// 2 * 2 * HBM_STEPS loads of 16 B per thread) and the CTAs per SM the kernel is built for
// (__launch_bounds__ minimum blocks: 128 registers per thread at 2, 255 at 1).
#ifndef NT_TABLE
#define HBM_STEPS_NT1 4
#define HBM_STEPS_NT2 4
#define HBM_STEPS_NT4 2
#define HBM_STEPS_NT8 4
#define MIN_CTAS_NT1 2
#define MIN_CTAS_NT2 2
#define MIN_CTAS_NT4 2
#define MIN_CTAS_NT8 1
#endif
template <int NT>
struct HbmSteps;
template <>
struct HbmSteps<1> {
  static constexpr int value = HBM_STEPS_NT1;
};
template <>
struct HbmSteps<2> {
  static constexpr int value = HBM_STEPS_NT2;
};
template <>
struct HbmSteps<4> {
  static constexpr int value = HBM_STEPS_NT4;
};
template <>
struct HbmSteps<8> {
  static constexpr int value = HBM_STEPS_NT8;
};

__device__ __forceinline__ uint4 zero4() { return make_uint4(0u, 0u, 0u, 0u); }

// These three loads spell out their PTX instead of using ptx.cuh's ld_v4<POLICY>: routed
// through the template, ptxas allocated registers differently for this kernel (nt8: 242 vs 238,
// one local-memory load appeared), and the measured numbers are for this form.
// HBM weight rows: read once, so no L1 allocation.
__device__ __forceinline__ uint4 ld_weight_hbm(const u16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Host weight rows, through the mapped (UVA) pointer of pinned memory.
__device__ __forceinline__ uint4 ld_weight_host(const u16* p) {
  uint4 v;
#if HOST_LOAD == 0
  asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#elif HOST_LOAD == 1
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#else
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#endif
  return v;
}

// x fragments: small and re-read by every warp of the CTA, so cached in L1.
__device__ __forceinline__ uint4 ld_x(const u16* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Partials written by other CTAs: read at L2 (never a stale L1 line).
__device__ __forceinline__ float ld_partial(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void mma16816(float (&c)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0,
                                         u32 b1) {
#if GEMV_DTYPE == 0
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

__device__ __forceinline__ float to_f32(u16 h) {
#if GEMV_DTYPE == 0
  return __uint_as_float(static_cast<u32>(h) << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

__device__ __forceinline__ u16 from_f32(float f) {
  u16 h;
#if GEMV_DTYPE == 0
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
#else
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
#endif
  return h;
}

// One k-step (32 k) of one warp's 16-row tile against every batch tile: wa/wb hold rows g and
// g+8 at k .. k+7 (zero when out of range). The x fragments are loaded first, from clamped (always
// valid) addresses with no branch, so their loads issue together; out-of-range ones are zeroed
// after the load. Batch tiles wholly past B are skipped (a warp-uniform test).
template <int NT>
__device__ __forceinline__ void mma_step(float (&acc)[NT][4], const uint4& wa, const uint4& wb,
                                         const u16* __restrict__ x, int K, int B, int k, int g) {
  uint4 xf[NT];
  const int kc = min(k, K - 8);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    if (nt * 8 < B) {
      const int b = nt * 8 + g;
      xf[nt] = ld_x(x + static_cast<u64>(min(b, B - 1)) * K + kc);
      if (b >= B || k >= K) xf[nt] = zero4();
    }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    if (nt * 8 < B) {
      mma16816(acc[nt], wa.x, wb.x, wa.y, wb.y, xf[nt].x, xf[nt].y);
      mma16816(acc[nt], wa.z, wb.z, wa.w, wb.w, xf[nt].z, xf[nt].w);
    }
  }
}

// Store one warp's accumulator tile: rows n0 + g (+8) of the output (global row numbers), valid
// below row_end; batch columns nt*8 + 2t + j. With `part` (a workspace slice) the fp32 partial is
// stored; otherwise bias is added and the value converted.
template <int NT>
__device__ __forceinline__ void store_tile(const float (&acc)[NT][4], int n0, int row_end, int N,
                                           int B, int g, int t, const u16* __restrict__ bias,
                                           u16* __restrict__ y, float* __restrict__ part) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = n0 + g + 8 * h;
    if (n >= row_end) continue;
    const float bv = (part == nullptr && bias != nullptr) ? to_f32(bias[n]) : 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int b = nt * 8 + 2 * t + j;
        if (b >= B) continue;
        const float v = acc[nt][2 * h + j];
        if (part != nullptr) {
          part[static_cast<u64>(b) * N + n] = v;
        } else {
          y[static_cast<u64>(b) * N + n] = from_f32(v + bv);
        }
      }
    }
  }
}

// After every thread of the CTA stored its partials: count this CTA's arrival on `counter`.
// True (in every thread) for the CTA that arrived last, which then owns the reduction; that CTA
// also resets the counter to 0, so the next launch starts clean.
__device__ __forceinline__ bool arrive_last(u32* counter, int split, int* s_last) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const u32 old = atomicAdd(counter, 1u);
    const int last = old == static_cast<u32>(split - 1);
    if (last) atomicExch(counter, 0u);
    *s_last = last;
  }
  __syncthreads();
  const bool last = *s_last != 0;
  if (last) __threadfence();
  return last;
}

// The last CTA of a tile: y = sum of the `split` partials in split order, + bias.
__device__ __forceinline__ void reduce_partials(const float* __restrict__ ws, int split, int n0,
                                                int rows, int N, int B,
                                                const u16* __restrict__ bias,
                                                u16* __restrict__ y) {
  for (int i = threadIdx.x; i < rows * B; i += blockDim.x) {
    const int b = i / rows;
    const int n = n0 + (i - b * rows);
    float s = 0.0f;
    for (int sp = 0; sp < split; ++sp) {
      s += ld_partial(ws + (static_cast<u64>(sp) * B + b) * N + n);
    }
    if (bias != nullptr) s += to_f32(bias[n]);
    y[static_cast<u64>(b) * N + n] = from_f32(s);
  }
}

struct Args {
  const u16* w_hbm;
  const u16* w_host;
  const u16* x;
  const u16* bias;
  u16* y;
  float* ws;
  u32* counters;
  int N, K, B, n_hbm, host_ctas, host_steps, split_g, steps_g, split_h, steps_h;
};

template <int NT, int U>
__device__ __forceinline__ void hbm_load(uint4 (&wa)[U], uint4 (&wb)[U], const u16* pa,
                                         const u16* pb, bool oka, bool okb, int st, int st1,
                                         int K, int t) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int k = (st + u) * TILE_K + 8 * t;
    const bool v = st + u < st1 && k < K;
    wa[u] = (v && oka) ? ld_weight_hbm(pa + k) : zero4();
    wb[u] = (v && okb) ? ld_weight_hbm(pb + k) : zero4();
  }
}

template <int NT, int U>
__device__ __forceinline__ void hbm_compute(float (&acc)[NT][4], const uint4 (&wa)[U],
                                            const uint4 (&wb)[U], const Args& a, int st, int st1,
                                            int g, int t) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (st + u < st1) mma_step<NT>(acc, wa[u], wb[u], a.x, a.K, a.B, (st + u) * TILE_K + 8 * t, g);
  }
}

template <int NT>
__device__ __forceinline__ void hbm_role(const Args& a, int cta, int nctas, int* s_last) {
  constexpr int U = HbmSteps<NT>::value;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ksteps = (a.K + TILE_K - 1) / TILE_K;
  const int blocks = ((a.n_hbm + TILE_M - 1) / TILE_M + GEMV_WARPS - 1) / GEMV_WARPS;
  const int units = blocks * a.split_g;
#pragma unroll 1
  for (int unit = cta; unit < units; unit += nctas) {
    const int rb = unit / a.split_g;
    const int s = unit - rb * a.split_g;
    const int m0 = rb * BLOCK_ROWS + warp * TILE_M;
    const int st0 = s * a.steps_g;
    const int st1 = min(ksteps, st0 + a.steps_g);
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
    if (m0 < a.n_hbm) {
      const int ra = m0 + g, rbw = m0 + g + 8;
      const bool oka = ra < a.n_hbm, okb = rbw < a.n_hbm;
      const u16* pa = a.w_hbm + static_cast<u64>(oka ? ra : 0) * a.K;
      const u16* pb = a.w_hbm + static_cast<u64>(okb ? rbw : 0) * a.K;
      uint4 a0[U], b0[U], a1[U], b1[U];
      hbm_load<NT, U>(a0, b0, pa, pb, oka, okb, st0, st1, a.K, t);
      int st = st0;
#pragma unroll 1
      while (st < st1) {
        hbm_load<NT, U>(a1, b1, pa, pb, oka, okb, st + U, st1, a.K, t);
        hbm_compute<NT, U>(acc, a0, b0, a, st, st1, g, t);
        st += U;
        if (st >= st1) break;
        hbm_load<NT, U>(a0, b0, pa, pb, oka, okb, st + U, st1, a.K, t);
        hbm_compute<NT, U>(acc, a1, b1, a, st, st1, g, t);
        st += U;
      }
    }
    float* part = a.split_g > 1 ? a.ws + static_cast<u64>(s) * a.B * a.N : nullptr;
    if (m0 < a.n_hbm) store_tile<NT>(acc, m0, a.n_hbm, a.N, a.B, g, t, a.bias, a.y, part);
    if (a.split_g > 1 && arrive_last(a.counters + rb, a.split_g, s_last)) {
      const int n0 = rb * BLOCK_ROWS;
      reduce_partials(a.ws, a.split_g, n0, min(BLOCK_ROWS, a.n_hbm - n0), a.N, a.B, a.bias, a.y);
    }
  }
}

// Shared memory of a CTA: the host warps' staging tiles (16 rows x up to 20 chunks of 16 B per
// warp), reused after the k-loop for the cross-warp sum of the accumulators.
#define STAGE_CHUNKS (TILE_M * (4 * HOST_STEPS_MAX + 4))
template <int NT>
struct Smem {
  static constexpr int red_bytes = GEMV_WARPS * NT * 4 * 32 * 4;
  static constexpr int stage_bytes = HOST_STAGE ? GEMV_WARPS * STAGE_CHUNKS * 16 : 0;
  static constexpr int bytes = red_bytes > stage_bytes ? red_bytes : stage_bytes;
};

template <int NT>
__device__ __forceinline__ void host_role(const Args& a, uint4* smem, int* s_last) {
  float (*red)[NT * 4][32] = reinterpret_cast<float (*)[NT * 4][32]>(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ksteps = (a.K + TILE_K - 1) / TILE_K;
  const int n_host = a.N - a.n_hbm;
  const int tiles = (n_host + TILE_M - 1) / TILE_M;
  const int units = tiles * a.split_h;
  const int hbm_blocks = ((a.n_hbm + TILE_M - 1) / TILE_M + GEMV_WARPS - 1) / GEMV_WARPS;
  const int hs = a.host_steps;
  uint4* stage = smem + warp * STAGE_CHUNKS;
  (void)stage;
#pragma unroll 1
  for (int unit = blockIdx.x; unit < units; unit += a.host_ctas) {
    const int mt = unit / a.split_h;
    const int s = unit - mt * a.split_h;
    const int m0 = mt * TILE_M;  // local row in the host part
    const int st0 = s * a.steps_h;
    const int st1 = min(ksteps, st0 + a.steps_h);
    const int ra = m0 + g, rbw = m0 + g + 8;
    const bool oka = ra < n_host, okb = rbw < n_host;
    const u16* pa = a.w_host + static_cast<u64>(oka ? ra : 0) * a.K;
    const u16* pb = a.w_host + static_cast<u64>(okb ? rbw : 0) * a.K;
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
    // Warp w takes groups of hs k-steps starting at st0 + w*hs, every 8*hs steps. All loads of
    // a group are issued, then multiplied: at most 2*hs loads of 16 B per thread in flight.
#pragma unroll 1
    for (int st = st0 + warp * hs; st < st1; st += GEMV_WARPS * hs) {
#if HOST_STAGE
      // The group is 16 rows x C = 4*hs chunks of 16 B (row r, chunk c = k-step c/4, 8 k at
      // 8*(c%4)); load it chunk-major so consecutive lanes read consecutive chunks of a row.
      const int C = 4 * hs;
      const int S = (C % 8 == 4) ? C : C + 4;  // row stride (chunks): S*16 = 64 mod 128, no conflicts
      uint4 v[2 * HOST_STEPS_MAX];
#pragma unroll
      for (int i = 0; i < 2 * HOST_STEPS_MAX; ++i) {
        const int q = i * 32 + lane;
        const int row = q / C, c = q - (q / C) * C;
        const int step = st + (c >> 2);
        const int k = step * TILE_K + 8 * (c & 3);
        const bool ok = i < 2 * hs && m0 + row < n_host && step < st1 && k < a.K;
        v[i] = ok ? ld_weight_host(a.w_host + static_cast<u64>(m0 + row) * a.K + k) : zero4();
      }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 2 * HOST_STEPS_MAX; ++i) {
        const int q = i * 32 + lane;
        if (i < 2 * hs) stage[(q / C) * S + (q - (q / C) * C)] = v[i];
      }
      __syncwarp();
#pragma unroll
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        if (u < hs && st + u < st1) {
          const uint4 wa = stage[g * S + 4 * u + t];
          const uint4 wb = stage[(g + 8) * S + 4 * u + t];
          mma_step<NT>(acc, wa, wb, a.x, a.K, a.B, (st + u) * TILE_K + 8 * t, g);
        }
      }
      __syncwarp();  // the next group overwrites `stage`
#else
      uint4 wa[HOST_STEPS_MAX], wb[HOST_STEPS_MAX];
#pragma unroll
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        const int k = (st + u) * TILE_K + 8 * t;
        const bool v = u < hs && st + u < st1 && k < a.K;
        wa[u] = (v && oka) ? ld_weight_host(pa + k) : zero4();
        wb[u] = (v && okb) ? ld_weight_host(pb + k) : zero4();
      }
#pragma unroll
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        if (u < hs && st + u < st1) {
          mma_step<NT>(acc, wa[u], wb[u], a.x, a.K, a.B, (st + u) * TILE_K + 8 * t, g);
        }
      }
#endif
    }
#if HOST_STAGE
    __syncthreads();  // `red` shares memory with the warps' staging tiles
#endif
    // Sum the 8 warps' tiles in warp order (deterministic); warp 0 stores.
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) red[warp][nt * 4 + i][lane] = acc[nt][i];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float v = red[0][nt * 4 + i][lane];
#pragma unroll
          for (int w = 1; w < GEMV_WARPS; ++w) v += red[w][nt * 4 + i][lane];
          acc[nt][i] = v;
        }
      }
      float* part = a.split_h > 1 ? a.ws + static_cast<u64>(s) * a.B * a.N : nullptr;
      store_tile<NT>(acc, a.n_hbm + m0, a.N, a.N, a.B, g, t, a.bias, a.y, part);
    }
    if (a.split_h > 1) {
      if (arrive_last(a.counters + hbm_blocks + mt, a.split_h, s_last)) {
        reduce_partials(a.ws, a.split_h, a.n_hbm + m0, min(TILE_M, n_host - m0), a.N, a.B, a.bias,
                        a.y);
      }
    } else {
      __syncthreads();  // `red` is rewritten by the next unit
    }
  }
}

template <int NT>
__device__ __forceinline__ void split_gemv(const Args& a) {
  __shared__ uint4 smem[Smem<NT>::bytes / 16];
  __shared__ int s_last;
  if (static_cast<int>(blockIdx.x) < a.host_ctas) {
    host_role<NT>(a, smem, &s_last);
  } else {
    hbm_role<NT>(a, static_cast<int>(blockIdx.x) - a.host_ctas,
                 static_cast<int>(gridDim.x) - a.host_ctas, &s_last);
  }
}

}  // namespace sgemv

// Parameters (the order gemv.py packs):
//   w_hbm, w_host, x, bias (0: none), y, ws (0 when no split), counters (0 when no split),
//   N, K, B, n_hbm, host_ctas, host_steps (1..HOST_STEPS_MAX), split_g, steps_g, split_h, steps_h
// steps_* are k-steps (32 k) per split; the counters are u32, one per HBM 128-row block followed
// by one per host 16-row tile, all zero before the first launch (the kernel leaves them zero).
#define SPLIT_GEMV_KERNEL(NT)                                                                   \
  extern "C" __global__ void __launch_bounds__(GEMV_THREADS, MIN_CTAS_NT##NT) split_gemv_nt##NT( \
      const u16* __restrict__ w_hbm, const u16* __restrict__ w_host, const u16* __restrict__ x, \
      const u16* __restrict__ bias, u16* __restrict__ y, float* __restrict__ ws,                \
      u32* __restrict__ counters, int N, int K, int B, int n_hbm, int host_ctas,              \
      int host_steps, int split_g, int steps_g, int split_h, int steps_h) {                    \
    const sgemv::Args a{w_hbm, w_host,  x,     bias,    y,          ws,         counters,      \
                        N,     K,       B,     n_hbm,   host_ctas,  host_steps, split_g,       \
                        steps_g, split_h, steps_h};                                            \
    sgemv::split_gemv<NT>(a);                                                                   \
  }

SPLIT_GEMV_KERNEL(1)
SPLIT_GEMV_KERNEL(2)
SPLIT_GEMV_KERNEL(4)
SPLIT_GEMV_KERNEL(8)
