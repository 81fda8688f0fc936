// Split GEMV / skinny GEMM for decode, weight split between HBM and pinned host memory
// (DAK, seed 003; SPEC §2; issue 5). Launched by smemkit/offload/gemv.py.
//
//   y[b, n] = sum_k x[b, k] W[n, k] (+ bias[n])     b < B <= 64, fp32 accumulation,
//   rows n <  n_hbm of W come from `w_hbm` (device memory, n_hbm x K, row-major),
//   rows n >= n_hbm come from `w_host` (pinned host memory through its mapped device pointer,
//   (N - n_hbm) x K, row-major): the kernel reads both tiers at once, no staging buffer.
//
// This file combines the faster of two designs for each tier, both measured on the H200:
//   HBM rows: the stage-ring design: cp.async.cg copies of whole 128-byte lines of W *and* x
//             into a ring of shared-memory stages, one pipeline per CTA across its units; it
//             measured 1.5-3x faster than the register design at r = 0 (commit cb352a7).
//   host rows: the register design (ld.global.cs into registers, per-warp groups staged through
//             shared memory, x fragments from global/L1): 45 GB/s host-only, 1.22x the ideal at
//             r = 1 (commit 8963877), where the cp.async stage ring measured 2.55x and the ring's
//             register batch mode 1.68x (commit cb352a7).
//
// One grid, two roles chosen by block index (never by %smid):
//   blockIdx.x <  host_ctas   host CTAs (the congestion-controlled set). A unit is one 16-row
//                             tile of the host rows (HOST_ROWS) times one k-split. The 8 warps
//                             split the unit's k-range: warp w takes groups of `host_steps` k-steps
//                             of 32 k (HOST_KSTEP) starting at step w * host_steps, every
//                             8 * host_steps steps; it issues all loads of a group (2 x 16 B per
//                             thread per k-step), waits for them, multiplies, so a CTA has at most
//                             host_steps * 8 KB of host reads outstanding (the congestion window).
//                             The warps are independent (no CTA barrier inside the k-loop), so
//                             while one warp multiplies, the others' loads are in flight. The 8
//                             warps' partial tiles are summed through shared memory in warp order
//                             (deterministic).
//   blockIdx.x >= host_ctas   HBM CTAs. A unit is 128 * HBM_MT rows x one k-split; a stage is
//                             those rows x 64 k (16 KB, 32 KB at HBM_MT = 2) plus B rows of x; the
//                             CTA keeps `hbm_depth` stages in flight.
// Units are dealt to the CTAs of a role round-robin by block index. An HBM CTA runs ONE pipeline
// across all of its units (the loads of the next unit are in flight while the current unit stores
// its result), so a unit boundary costs no pipeline drain.
//
// HBM loads: cp.async.cg (LDGSTS, 16 B per thread, L1 bypassed) straight into a ring of shared-
// memory stages: 8 consecutive threads copy one row's 128 B, so every warp instruction reads whole
// 128-byte lines (4 rows x 128 B), and no registers are held by loads in flight. x (B x 64 k per
// stage) is copied into the same stage, so the x fragments come from shared memory like the weight
// fragments: nothing on the critical path waits for an L2 round trip except the pipeline's head.
// Shared layout of a stage: row r (weight rows first, then 8 * NT x rows) at r * 128 B, its 16-byte
// chunk c at position c ^ 4 * (r & 1): the fragment reads of a quarter warp (rows 2q, 2q + 1,
// chunks 4s .. 4s + 3) then hit 32 distinct banks, and so do the copies (one row per 8 threads).
// The role is instruction-bound (Nsight Compute on the H200: with per-stage divisions it issued
// 158-160 warp instructions per KB of weight against cuBLAS's 12-19, commit e2fa620), so a stage
// costs as little as it can: each thread's copy pointers are set once per unit, two cursors walk
// the stage sequence without divisions, and per-slot full / empty mbarriers (no CTA barrier per
// stage) let the warps drift a stage apart. The cursors ran 0.67-0.93x the time of per-stage
// divisions and pointer set-up at r = 0 (commit 7c9d4f1), the mbarriers 0.86-1.00x the time of a
// CTA barrier per stage at r = 0 (commit 377a7d5).
//
// Host loads: 16-byte register loads through the mapped pointer (HOST_LOAD). With HOST_STAGE >= 1
// a warp's group (16 rows x host_steps * 64 B) is loaded chunk-major, so consecutive lanes read
// consecutive 16-byte chunks of a row (64 B per row at host_steps = 1, 128 B and more from 2), and
// stored to the warp's own shared-memory tile (row stride S chunks, S * 16 = 64 mod 128 bytes: no
// bank conflicts), from which the mma fragments are read; x fragments are ld.global.nc (L1).
//
// Split-K across CTAs (split_g / split_h > 1): each unit writes its fp32 partial tile to the
// workspace ws[split][B][N]; the CTA that arrives last on the tile's counter (threadfence +
// atomicAdd, the classic "last block" pattern) sums the partials in split order 0..S-1, adds the
// bias, converts and stores, and resets the counter to 0 for the next launch. The sum order never
// depends on which CTA arrives last, so results are bitwise reproducible.
//
// Math: mma.sync.m16n8k16 (bf16 or fp16 in, fp32 accumulate) with the weight tile as A (16 rows x
// 16 k, row-major) and x as B (16 k x 8 batch columns, "col": k contiguous per column). Only the
// dot product matters, so the 16 k of one mma may be any 16 of a 32-k half-stage as long as A and B
// agree. Thread (g = lane/4, t = lane%4) reads W[row g][8t .. 8t+7] and W[row g+8][8t .. 8t+7]
// (two 16-byte chunks) and x[column g][8t .. 8t+7] (one): registers .x/.y of each feed the first
// mma (a0..a3 = Wg.x, Wg8.x, Wg.y, Wg8.y; b0, b1 = x.x, x.y), .z/.w the second. With the PTX
// fragment layouts (a0: row g, cols 2t..2t+1; a1: row g+8; a2/a3: cols 2t+8..2t+9;
// b0: rows 2t..2t+1 of column g; b1: rows 2t+8..2t+9) both operands map fragment position
// 2t+j -> k = 8t+j and 2t+8+j -> k = 8t+2+j, the same bijection, so the result is exact.
// Accumulator c0, c1: row g, batch columns 2t, 2t+1; c2, c3: row g+8.
//
// Compile-time choices (defaults build with no defines):
//   GEMV_DTYPE  0 bf16, 1 fp16 (x, W, bias and y share it)
//   HOST_LOAD   the host load instruction: 0 ld.global.cs (streaming, evict-first; the load
//               `smemkit probe` measured at 51 GB/s on pinned memory, benchmarks/results/h200/
//               probe.json; default), 1 ld.global.nc.L1::no_allocate, 2 plain ld.global
//   HOST_STAGE  1 (default, the register scheme): load a group into registers, wait, store it to
//               the warp's shared tile, multiply; 0: each thread loads its mma fragments
//               directly (64 B per row per instruction, no shared memory); 2: as 1, but the next
//               group's loads are issued right after the current group is stored, before its
//               math (the same window, kept full during the multiply; measured as fast as 1 at
//               r = 1: 51.0 GB/s median at 16 CTAs x 16 KB, commit 0d2a6a5); 3: the group's 16
//               rows are brought by the bulk-copy engine (cp.async.bulk, one copy of
//               host_steps * 64 B per row, issued by lanes 0-15, completing on the warp's mbarrier)
//               straight into the warp's shared tile: no host data passes through registers
//               (20.6 GB/s median there, 0.4x the loads: the copy unit keeps fewer host reads
//               outstanding; commit 0d2a6a5).
// Kernels: split_gemv_nt1, _nt2, _nt4, _nt8 (NT = batch tiles of 8: B <= 8 * NT).
#ifndef GEMV_DTYPE
#define GEMV_DTYPE 0
#endif
#define SMEMKIT_HALF_BF16 (GEMV_DTYPE == 0)
#include <smemkit/half_mma.cuh>
#ifndef HOST_LOAD
#define HOST_LOAD 0
#endif
#ifndef HOST_STAGE
#define HOST_STAGE 1
#endif

#define GEMV_THREADS 256
#define GEMV_WARPS 8
#define TILE_M 16
#define TILE_K 64
#define ROW_CHUNKS 8
#define HOST_ROWS 16
#define HOST_KSTEP 32
#define HOST_STEPS_MAX 4
#define HBM_DEPTH_MAX 7


namespace sgemv {

using namespace smemkit;

// Per batch-tile count NT: 16-row tiles per warp on the HBM path (HBM_MT; rows per HBM unit =
// 128 * HBM_MT) and the CTAs per SM the kernel is built for (__launch_bounds__ minimum blocks:
// 128 registers per thread at 2, 255 at 1). The HBM pipeline depth is a launch argument
// (default gemv.HBM_DEPTH).
#ifndef NT_TABLE
#define HBM_MT_NT1 1
#define HBM_MT_NT2 1
#define HBM_MT_NT4 1
#define HBM_MT_NT8 2
#define MIN_CTAS_NT1 2
#define MIN_CTAS_NT2 2
#define MIN_CTAS_NT4 2
#define MIN_CTAS_NT8 1
#endif
template <int NT>
struct HbmMt;
template <>
struct HbmMt<1> {
  static constexpr int value = HBM_MT_NT1;
};
template <>
struct HbmMt<2> {
  static constexpr int value = HBM_MT_NT2;
};
template <>
struct HbmMt<4> {
  static constexpr int value = HBM_MT_NT4;
};
template <>
struct HbmMt<8> {
  static constexpr int value = HBM_MT_NT8;
};

// 16 bytes global -> shared, asynchronously; src_bytes = 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
// The mbarrier at `bar` counts one arrival of this thread once all of its earlier cp.async copies
// have landed (noinc: the arrival is part of the barrier's expected count).
__device__ __forceinline__ void cp_async_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Host weight rows, through the mapped (UVA) pointer of pinned memory, into registers.
__device__ __forceinline__ uint4 ld_weight_host(const u16* p) {
  return ld_v4<HOST_LOAD>(p);  // HOST_LOAD 0 / 1 / 2: streamed, no-L1-allocate, plain (ld_v4's policies)
}

// x fragments of the host role: small and re-read by every warp of the CTA, so cached in L1.
__device__ __forceinline__ uint4 ld_x(const u16* p) { return ld_v4<kLdCached>(p); }

// Position (in 16-byte chunks) of chunk c of stage row r.
__device__ __forceinline__ int swz(int r, int c) { return r * ROW_CHUNKS + (c ^ ((r & 1) << 2)); }

// Store one 16-row accumulator tile: rows n0 + g (+8) of the output (global row numbers), valid
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

__device__ __forceinline__ float4 ld_partial4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// The last CTA of a tile: y = sum of the `split` partials in split order, + bias. Each thread
// takes two groups of V outputs (V = 4 consecutive rows with float4 loads when N % 4 == 0, else 1)
// and loads up to 8 splits of both before adding (16 independent L2 loads in flight), so the
// tail costs ~split/8 L2 round trips per 512 V outputs. Every output is summed in split order
// 0..S-1 either way (the same bits).
template <int V>
__device__ __forceinline__ void reduce_partials_v(const float* __restrict__ ws, int split, int n0,
                                                  int rows, int N, int B,
                                                  const u16* __restrict__ bias,
                                                  u16* __restrict__ y) {
  const int groups = rows / V;  // V divides rows (gemv.py: N % 4 == 0 makes every tier's rows so)
  const int items = groups * B;
  for (int i0 = threadIdx.x; i0 < items; i0 += 2 * GEMV_THREADS) {
    int off[2];
    bool ok[2];
    float s[2][V];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int i = i0 + u * GEMV_THREADS;
      ok[u] = i < items;
      const int b = ok[u] ? i / groups : 0;
      off[u] = b * N + n0 + (ok[u] ? (i - b * groups) * V : 0);
#pragma unroll
      for (int e = 0; e < V; ++e) s[u][e] = 0.0f;
    }
    for (int sp0 = 0; sp0 < split; sp0 += 8) {
      float v[2][8][V];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const bool live = ok[u] && sp0 + j < split;
          const float* p = ws + static_cast<u64>(sp0 + j) * B * N + off[u];
          if (V == 4) {
            const float4 f = live ? ld_partial4(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            v[u][j][0] = f.x;
            v[u][j][V > 1 ? 1 : 0] = f.y;
            v[u][j][V > 2 ? 2 : 0] = f.z;
            v[u][j][V > 3 ? 3 : 0] = f.w;
          } else {
            v[u][j][0] = live ? ld_partial(p) : 0.0f;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
          for (int e = 0; e < V; ++e) {
            if (sp0 + j < split) s[u][e] += v[u][j][e];
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      if (!ok[u]) continue;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int n = off[u] % N + e;
        float r = s[u][e];
        if (bias != nullptr) r += to_f32(bias[n]);
        y[off[u] + e] = from_f32(r);
      }
    }
  }
}

__device__ __forceinline__ void reduce_partials(const float* __restrict__ ws, int split, int n0,
                                                int rows, int N, int B,
                                                const u16* __restrict__ bias,
                                                u16* __restrict__ y) {
  if ((N & 3) == 0 && (n0 & 3) == 0 && (rows & 3) == 0) {
    reduce_partials_v<4>(ws, split, n0, rows, N, B, bias, y);
  } else {
    reduce_partials_v<1>(ws, split, n0, rows, N, B, bias, y);
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
  int N, K, B, n_hbm, host_ctas, host_steps, split_g, steps_g, split_h, steps_h, hbm_depth;
};

// This thread's share of the copies of every stage of the HBM ring (the same for all stages):
// thread q copies chunk c = q % 8 (k offset 8c) of stage rows q / 8 + 32 j, j < WJ, and, with
// XJ more, of x rows q / 8 + 32 j < 8 NT. The first row's pointer is set once per unit
// (set_unit) and the x one once per launch, so a stage costs each thread an address add and a
// cp.async per copy; out-of-range rows and k are zero-filled (K is a multiple of 8, so a 16-byte
// chunk is wholly in or out).
template <int NT, int R>
struct StageCopies {
  static constexpr int WJ = R * ROW_CHUNKS / GEMV_THREADS;
  static constexpr int XJ = (8 * NT * ROW_CHUNKS + GEMV_THREADS - 1) / GEMV_THREADS;
  static constexpr int JROWS = GEMV_THREADS / ROW_CHUNKS;  // rows between a thread's copies
  const u16* base;  // a valid address for the zero-filling copies (they read nothing)
  const u16* w;     // row q / 8 of the unit, at k offset 8c
  const u16* x;     // x row q / 8, at k offset 8c
  u64 jstep;     // JROWS rows of K elements
  u32 dst;       // shared offset of this thread's first copy
  u32 wok, xok;  // bit j: weight row / x row q / 8 + 32 j exists
  int c8;

  __device__ __forceinline__ StageCopies(const u16* __restrict__ xs, int B, int K) {
    const int q = static_cast<int>(threadIdx.x);
    const int row = q >> 3;
    c8 = 8 * (q & 7);
    jstep = static_cast<u64>(JROWS) * K;
    dst = swz(row, q & 7) * 16;  // row + 32 j has row's parity: the same chunk position
    base = xs;
    x = xs + static_cast<u64>(row) * K + c8;
    w = xs;
    wok = 0;
    xok = 0;
#pragma unroll
    for (int j = 0; j < XJ; ++j) xok |= static_cast<u32>(row + j * JROWS < min(B, 8 * NT)) << j;
  }

  // The unit whose rows start at r0 (weight rows below rows_valid exist).
  __device__ __forceinline__ void set_unit(const u16* __restrict__ src, int r0, int rows_valid, int K) {
    const int row = r0 + (static_cast<int>(threadIdx.x) >> 3);
    w = src + static_cast<u64>(row) * K + c8;
    wok = 0;
#pragma unroll
    for (int j = 0; j < WJ; ++j) wok |= static_cast<u32>(row + j * JROWS < rows_valid) << j;
  }

  // k-chunk kc of the current unit (and the x rows) into the stage at shared address `slot`.
  __device__ __forceinline__ void issue(u32 slot, int kc, int K) const {
    const int k0 = kc * TILE_K;
    const bool kin = k0 + c8 < K;
#pragma unroll
    for (int j = 0; j < WJ; ++j) {
      const bool ok = kin && ((wok >> j) & 1u);
      cp_async16(slot + dst + j * JROWS * ROW_CHUNKS * 16, ok ? w + j * jstep + k0 : base, ok ? 16u : 0u);
    }
#pragma unroll
    for (int j = 0; j < XJ; ++j) {
      if (j * GEMV_THREADS + static_cast<int>(threadIdx.x) < 8 * NT * ROW_CHUNKS) {
        const bool ok = kin && ((xok >> j) & 1u);
        cp_async16(slot + (R * ROW_CHUNKS * 16) + dst + j * JROWS * ROW_CHUNKS * 16,
                   ok ? x + j * jstep + k0 : base, ok ? 16u : 0u);
      }
    }
  }
};

// Multiply one stage: warp w takes 16-row tiles (w % MW) * MT .. + MT - 1 (MW = 8 / KWS warps per
// k-half) and, with KWS = 2, only the k-half w / MW of the stage's 64 k. The HBM role uses KWS = 1;
// KWS = 2 fits a role with fewer rows than warps per k-half (the stage-ring host role of commit
// 363b08b, which the register host role outran).
template <int NT, int MT, int KWS, int R>
__device__ __forceinline__ void compute_stage(float (&acc)[MT][NT][4], const uint4* slot, int B,
                                              int warp, int g, int t) {
  constexpr int MW = GEMV_WARPS / KWS;
  const uint4* xs = slot + R * ROW_CHUNKS;
  const int mrow0 = (warp % MW) * MT * TILE_M;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    if (KWS == 2 && s != warp / MW) continue;
    const int c = 4 * s + t;
    uint4 xf[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      if (nt * 8 < B) xf[nt] = xs[swz(nt * 8 + g, c)];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r = mrow0 + mt * TILE_M + g;
      const uint4 wa = slot[swz(r, c)];
      const uint4 wb = slot[swz(r + 8, c)];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        if (nt * 8 < B) {
          mma16816(acc[mt][nt], wa.x, wb.x, wa.y, wb.y, xf[nt].x, xf[nt].y);
          mma16816(acc[mt][nt], wa.z, wb.z, wa.w, wb.w, xf[nt].z, xf[nt].w);
        }
      }
    }
  }
}

// The HBM role's whole job. The CTA's units are first, first + stride, ... < units; unit u is row
// block u / split (R rows) x k-split u % split (cps k-chunks). Stage q of the CTA's sequence is
// chunk q % cps of its unit q / cps; the ring holds depth + 1 stages, `depth` of them in flight
// while the oldest is multiplied. Two cursors walk that sequence one stage at a time (the copies,
// `depth` stages ahead, and the math), so a stage costs no division. No CTA barrier per stage:
// slot s's `full` mbarrier completes when every thread's copies into it have landed, its `empty`
// one when every warp has multiplied it; a warp multiplies stage q as soon as it is full, then
// refills the slot of stage q - 1 once every warp is done with that stage (warps may drift a
// stage apart). Why that orders every access: a slot's reads of stage q - 1 come before its
// warp's __syncwarp and lane 0's release arrive on `empty`, and its copies of stage q + depth are
// issued only after the acquire wait on that phase; a stage's copies land before its `full` phase
// completes (each thread's noinc arrive fires when its copies have landed), and every read follows
// the acquire wait on it. compute-sanitizer's racecheck does not follow mbarrier ordering: it flags
// correct mbarrier hand-overs of control kernels too (benchmarks/racecheck_controls.cu,
// benchmarks/results/h200/sanitizer.json).
template <int NT, int MT>
__device__ __forceinline__ void hbm_role(const Args& a, const u16* __restrict__ src, int rows_valid,
                                         int split, int cps, int first, int stride, int units,
                                         int depth, u32* counters, uint4* ring, u64* full, u64* empty,
                                         int* s_last) {
  constexpr int R = GEMV_WARPS * MT * TILE_M;
  constexpr int SLOT = (R + 8 * NT) * ROW_CHUNKS;  // in uint4
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int kchunks = (a.K + TILE_K - 1) / TILE_K;
  const int nu = first < units ? (units - first + stride - 1) / stride : 0;
  const int total = nu * cps;
  const int nslots = depth + 1;
  const u32 ring_addr = smem_u32(ring);
  const int mrow0 = warp * MT * TILE_M;

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;

  if (threadIdx.x == 0) {
    for (int i = 0; i < nslots; ++i) {
      mbarrier_init(smem_u32(&full[i]), GEMV_THREADS);
      mbarrier_init(smem_u32(&empty[i]), GEMV_WARPS);
    }
  }
  __syncthreads();
  StageCopies<NT, R> copies(a.x, a.B, a.K);
  // copy cursor: the next stage to issue is chunk ic of the CTA's unit `iu` (k-chunk ikc), into slot is
  int ic = 0, iu = first, ikc = 0, is = 0, issued = 0;
  auto start_unit = [&](int unit) {
    const int rb = unit / split;
    copies.set_unit(src, rb * R, rows_valid, a.K);
    ikc = (unit - rb * split) * cps;
  };
  if (total > 0) start_unit(iu);
  auto issue_next = [&]() {
    if (issued < total) {
      if (ikc < kchunks) copies.issue(ring_addr + is * SLOT * 16, ikc, a.K);
      ++issued;
      ++ikc;
      if (++ic == cps && issued < total) {
        ic = 0;
        iu += stride;
        start_unit(iu);
      }
    }
    cp_async_arrive_noinc(smem_u32(&full[is]));  // also for a stage with nothing to copy
    is = is + 1 == nslots ? 0 : is + 1;
  };
  // After the last stage of a unit: the result (or this split's partial) goes out.
  auto epilogue = [&](int rb, int sp) {
    float* part = split > 1 ? a.ws + static_cast<u64>(sp) * a.B * a.N : nullptr;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      store_tile<NT>(acc[mt], rb * R + mrow0 + mt * TILE_M, rows_valid, a.N, a.B, g, t, a.bias, a.y,
                     part);
    }
    if (split > 1 && arrive_last(counters + rb, split, s_last)) {
      reduce_partials(a.ws, split, rb * R, min(R, rows_valid - rb * R), a.N, a.B, a.bias, a.y);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
  };

#pragma unroll 1
  for (int q = 0; q < depth; ++q) issue_next();
  // math cursor: stage q is chunk cc of unit cu (row block crb, k-split csp, k-chunk ckc), slot cs
  int cc = 0, cu = first, crb = first / split, csp = first - (first / split) * split, cs = 0;
  int ckc = csp * cps;
  u32 full_parity = 0, empty_parity = 0;  // bit i: the phase of slot i's barrier waited for next
  int ps = nslots - 1;                     // the slot of stage q - 1
#pragma unroll 1
  for (int q = 0; q < total; ++q) {
    mbarrier_wait_parity(smem_u32(&full[cs]), (full_parity >> cs) & 1u);
    full_parity ^= 1u << cs;
    if (ckc < kchunks) compute_stage<NT, MT, 1, R>(acc, ring + cs * SLOT, a.B, warp, g, t);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(smem_u32(&empty[cs]));
    if (q > 0) {  // stage q + depth goes where stage q - 1 was: wait until no warp reads it
      mbarrier_wait_parity(smem_u32(&empty[ps]), (empty_parity >> ps) & 1u);
      empty_parity ^= 1u << ps;
    }
    issue_next();
    ps = cs;
    ++ckc;
    cs = cs + 1 == nslots ? 0 : cs + 1;
    if (++cc == cps) {
      epilogue(crb, csp);
      cc = 0;
      cu += stride;
      crb = cu / split;
      csp = cu - crb * split;
      ckc = csp * cps;
    }
  }
  cp_async_wait_all();
}

// One 32-k step of a host warp's 16-row tile against every batch tile: wa/wb hold rows g and g+8
// at k .. k+7 (zero when out of range). The x fragments are loaded first, from clamped (always
// valid) addresses with no branch, so their loads issue together; out-of-range ones are zeroed
// after the load. Batch tiles wholly past B are skipped (a warp-uniform test).
template <int NT>
__device__ __forceinline__ void host_mma_step(float (&acc)[NT][4], const uint4& wa, const uint4& wb,
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

// Row stride (16-byte chunks) of a host warp's staging tile for a group of hs k-steps (C = 4 hs
// chunks per row): S * 16 = 64 mod 128 bytes, so the fragment reads are bank-conflict free.
// gemv.host_stage_bytes mirrors it.
__device__ __forceinline__ int host_stage_stride(int hs) {
  const int C = 4 * hs;
  return (C % 8 == 4) ? C : C + 4;
}

// One group of a host warp: 16 rows x hs k-steps (C = 4 hs chunks of 16 B per row) from k-step st,
// chunk-major (lane-consecutive chunks of a row), 2 hs loads of 16 B per thread.
__device__ __forceinline__ void host_load_group(uint4 (&v)[2 * HOST_STEPS_MAX], const u16* __restrict__ w,
                                                int m0, int n_host, int K, int st, int st1, int hs,
                                                int lane) {
  const int C = 4 * hs;
#pragma unroll
  for (int i = 0; i < 2 * HOST_STEPS_MAX; ++i) {
    const int q = i * 32 + lane;
    const int row = q / C, c = q - (q / C) * C;
    const int step = st + (c >> 2);
    const int k = step * HOST_KSTEP + 8 * (c & 3);
    const bool ok = i < 2 * hs && m0 + row < n_host && step < st1 && k < K;
    v[i] = ok ? ld_weight_host(w + static_cast<u64>(m0 + row) * K + k) : zero4();
  }
}

#if HOST_STAGE == 3
// HOST_STAGE 3: lanes 0..15 bulk-copy their row's k-range [kbeg, kend) of a group into the warp's
// tile (row stride S chunks) on the warp's mbarrier; the chunks no copy writes (rows past the host
// part, k past K) are zeroed by plain stores, so stale shared memory (possibly NaN) never meets the
// tensor cores. Returns after the copies have landed.
__device__ __forceinline__ void host_bulk_group(uint4* stage, int S, int C, u32 bar, u32 phase,
                                                const u16* __restrict__ w, int m0, int n_host, int K,
                                                int kbeg, int kend, int lane) {
  const int rows = min(HOST_ROWS, n_host - m0);
  const int chunks = (kend - kbeg) >> 3;  // K is a multiple of 8: whole 16-byte chunks
  const u32 row_bytes = static_cast<u32>(chunks) * 16u;
  __syncwarp();  // every lane is done reading the previous group
  if (lane == 0) mbarrier_arrive_expect_tx(bar, static_cast<u32>(rows) * row_bytes);
  __syncwarp();
  if (lane < rows) {
    fence_proxy_async_shared();  // the previous group's reads before the copy's writes
    cp_async_bulk_g2s(smem_u32(stage + lane * S), w + static_cast<u64>(m0 + lane) * K + kbeg, row_bytes, bar);
  }
  if (rows < HOST_ROWS || chunks < C) {
    for (int q = lane; q < HOST_ROWS * C; q += 32) {
      const int row = q / C, c = q - (q / C) * C;
      if (row >= rows || c >= chunks) stage[row * S + c] = zero4();
    }
  }
  mbarrier_wait_parity(bar, phase);
  __syncwarp();
}
#endif

// The host role (the register scheme). `stage_base` is the dynamic shared memory (8 warps x 16 rows x S
// chunks with HOST_STAGE >= 1), `red` the static k-sum buffer.
template <int NT>
__device__ __forceinline__ void host_role(const Args& a, uint4* stage_base, float (*red)[NT * 4][32],
                                          int hbm_blocks, int* s_last) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ksteps = (a.K + HOST_KSTEP - 1) / HOST_KSTEP;  // 32-k steps
  const int n_host = a.N - a.n_hbm;
  const int tiles = (n_host + HOST_ROWS - 1) / HOST_ROWS;
  const int units = tiles * a.split_h;
  const int hs = a.host_steps;
  const int S = host_stage_stride(hs);
  uint4* stage = stage_base + warp * HOST_ROWS * S;
  (void)stage;
  (void)S;
#if HOST_STAGE == 3
  __shared__ __align__(8) u64 host_bars[GEMV_WARPS];  // one per warp: its bulk copies land on it
  const u32 bar = smem_u32(&host_bars[warp]);
  if (lane == 0) {
    mbarrier_init(bar, 1);
    fence_mbarrier_init_cluster();
  }
  __syncwarp();
  u32 phase = 0;
#endif
#pragma unroll 1
  for (int unit = blockIdx.x; unit < units; unit += a.host_ctas) {
    const int mt = unit / a.split_h;
    const int s = unit - mt * a.split_h;
    const int m0 = mt * HOST_ROWS;  // local row in the host part
    // steps_h counts 64-k chunks (the planner's unit); the warps walk them as 32-k steps
    const int st0 = 2 * s * a.steps_h;
    const int st1 = min(ksteps, st0 + 2 * a.steps_h);
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#if HOST_STAGE
    const int C = 4 * hs;
#if HOST_STAGE == 2
    uint4 v[2 * HOST_STEPS_MAX];
    if (st0 + warp * hs < st1) host_load_group(v, a.w_host, m0, n_host, a.K, st0 + warp * hs, st1, hs, lane);
#endif
#pragma unroll 1
    for (int st = st0 + warp * hs; st < st1; st += GEMV_WARPS * hs) {
#if HOST_STAGE == 3
      host_bulk_group(stage, S, C, bar, phase, a.w_host, m0, n_host, a.K, st * HOST_KSTEP,
                      min(a.K, min(st + hs, st1) * HOST_KSTEP), lane);
      phase ^= 1u;
#else
#if HOST_STAGE == 1
      uint4 v[2 * HOST_STEPS_MAX];
      host_load_group(v, a.w_host, m0, n_host, a.K, st, st1, hs, lane);
#endif
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 2 * HOST_STEPS_MAX; ++i) {
        const int q = i * 32 + lane;
        if (i < 2 * hs) stage[(q / C) * S + (q - (q / C) * C)] = v[i];
      }
      __syncwarp();
#endif
#if HOST_STAGE == 2
      // the next group's reads go out now, so the window stays full during this group's math
      if (st + GEMV_WARPS * hs < st1) {
        host_load_group(v, a.w_host, m0, n_host, a.K, st + GEMV_WARPS * hs, st1, hs, lane);
      }
#endif
#if HOST_STAGE == 2
#pragma unroll 1  // the prefetched group is live across the math: keep the mma loop rolled (nt4: no spill)
#else
#pragma unroll
#endif
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        if (u < hs && st + u < st1) {
          const uint4 wa = stage[g * S + 4 * u + t];
          const uint4 wb = stage[(g + 8) * S + 4 * u + t];
          host_mma_step<NT>(acc, wa, wb, a.x, a.K, a.B, (st + u) * HOST_KSTEP + 8 * t, g);
        }
      }
      __syncwarp();  // the next group overwrites `stage`
    }
#else
    const int ra = m0 + g, rbw = m0 + g + 8;
    const bool oka = ra < n_host, okb = rbw < n_host;
    const u16* pa = a.w_host + static_cast<u64>(oka ? ra : 0) * a.K;
    const u16* pb = a.w_host + static_cast<u64>(okb ? rbw : 0) * a.K;
#pragma unroll 1
    for (int st = st0 + warp * hs; st < st1; st += GEMV_WARPS * hs) {
      uint4 wa[HOST_STEPS_MAX], wb[HOST_STEPS_MAX];
#pragma unroll
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        const int k = (st + u) * HOST_KSTEP + 8 * t;
        const bool v = u < hs && st + u < st1 && k < a.K;
        wa[u] = (v && oka) ? ld_weight_host(pa + k) : zero4();
        wb[u] = (v && okb) ? ld_weight_host(pb + k) : zero4();
      }
#pragma unroll
      for (int u = 0; u < HOST_STEPS_MAX; ++u) {
        if (u < hs && st + u < st1) {
          host_mma_step<NT>(acc, wa[u], wb[u], a.x, a.K, a.B, (st + u) * HOST_KSTEP + 8 * t, g);
        }
      }
    }
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
        reduce_partials(a.ws, a.split_h, a.n_hbm + m0, min(HOST_ROWS, n_host - m0), a.N, a.B, a.bias,
                        a.y);
      }
    } else {
      __syncthreads();  // `red` is rewritten by the next unit
    }
  }
}

template <int NT>
__device__ __forceinline__ void split_gemv(const Args& a) {
  extern __shared__ uint4 ring[];
  __shared__ float red[GEMV_WARPS][NT * 4][32];
  __shared__ __align__(8) u64 hbm_bars[2][HBM_DEPTH_MAX + 1];  // the HBM ring's full / empty barriers
  __shared__ int s_last;
  constexpr int HBM_R = 128 * HbmMt<NT>::value;
  const int hbm_blocks = (a.n_hbm + HBM_R - 1) / HBM_R;
  if (static_cast<int>(blockIdx.x) < a.host_ctas) {
    host_role<NT>(a, ring, red, hbm_blocks, &s_last);
  } else {
    const int units = hbm_blocks * a.split_g;
    hbm_role<NT, HbmMt<NT>::value>(a, a.w_hbm, a.n_hbm, a.split_g, a.steps_g,
                                   static_cast<int>(blockIdx.x) - a.host_ctas,
                                   static_cast<int>(gridDim.x) - a.host_ctas, units, a.hbm_depth,
                                   a.counters, ring, hbm_bars[0], hbm_bars[1], &s_last);
  }
}

}  // namespace sgemv

// Parameters (the order gemv.py packs):
//   w_hbm, w_host, x, bias (0: none), y, ws (0 when no split), counters (0 when no split),
//   N, K, B, n_hbm, host_ctas, host_steps (1..HOST_STEPS_MAX), split_g, steps_g, split_h, steps_h,
//   hbm_depth (1..HBM_DEPTH_MAX)
// steps_* are k-chunks (64 k) per split; the counters are u32, one per HBM row block
// (128 * HBM_MT rows) followed by one per host 16-row tile, all zero before the first launch (the
// kernel leaves them zero). Dynamic shared memory: the larger of the HBM ring,
// (depth + 1) * (rows per unit + 8 NT) * 128 bytes, and the host warps' staging tiles,
// 8 * 16 * S(host_steps) * 16 bytes with HOST_STAGE >= 1 (gemv.smem_bytes).
#define SPLIT_GEMV_KERNEL(NT)                                                                   \
  extern "C" __global__ void __launch_bounds__(GEMV_THREADS, MIN_CTAS_NT##NT) split_gemv_nt##NT( \
      const u16* __restrict__ w_hbm, const u16* __restrict__ w_host, const u16* __restrict__ x, \
      const u16* __restrict__ bias, u16* __restrict__ y, float* __restrict__ ws,                \
      u32* __restrict__ counters, int N, int K, int B, int n_hbm, int host_ctas,              \
      int host_steps, int split_g, int steps_g, int split_h, int steps_h, int hbm_depth) {     \
    const sgemv::Args a{w_hbm,   w_host,  x,       bias,      y,          ws,                  \
                        counters, N,      K,       B,         n_hbm,      host_ctas,           \
                        host_steps, split_g, steps_g, split_h, steps_h,  hbm_depth};           \
    sgemv::split_gemv<NT>(a);                                                                   \
  }

SPLIT_GEMV_KERNEL(1)
SPLIT_GEMV_KERNEL(2)
SPLIT_GEMV_KERNEL(4)
SPLIT_GEMV_KERNEL(8)
