// Split decode attention, KV cache split along the batch between HBM and pinned host memory
// (DAK, seed 003; SPEC §2; issue 5 item 3). Launched by smemkit/offload/attention.py.
// Compiled for sm_90a; timed on the H200 in benchmarks/results/h200/offload_attention.json.
//
//   o[b, h, :] = softmax(scale * q[b, h, :] . K[b, h / G, t, :] for t < len[b]) . V[b, h / G, :, :]
//
// q, o: (B, H_q, 128); K, V: (B, H_kv, L, 128), H_q = G * H_kv (GQA; G <= 8). Sequences
// b < b_hbm live in `k_hbm` / `v_hbm` (device memory, (b_hbm, H_kv, L, 128)); sequences
// b >= b_hbm in `k_host` / `v_host` (pinned host memory through its mapped device pointer,
// (B - b_hbm, H_kv, L, 128)). One kernel reads both tiers at once.
//
// Work: a pair p = b * H_kv + hk (one sequence, one KV head, its G query heads: K/V are read once
// for the whole group) is split along the context into chunks (flash-decoding split-K over L). A
// unit = (pair, chunk). One grid, two roles chosen by block index (never by %smid):
//   blockIdx.x <  host_ctas  host CTAs: units of the host pairs, dealt round-robin; only the
//                            first `host_warps` warps load, so a CTA has at most
//                            host_warps * 8 KB of host reads in flight (the congestion window).
//   blockIdx.x >= host_ctas  HBM CTAs: units of the HBM pairs, all 4 warps.
// Within a unit, warp w takes 16-token tiles w, w + W, ... (W = active warps). A tile's K rows
// (16 x 256 B) and V rows are each one contiguous 4 KB block: lane i loads 16-byte chunk
// (i & 15) of tokens 2j + (i >> 4), j = 0..7 (512 contiguous bytes per warp instruction, 16
// loads = 8 KB in flight per warp), stores them to the warp's shared tiles (chunk c of row r at
// c ^ 4 (r & 1): conflict-free for the stores, the mma fragment reads and the V reads).
//   scores   mma.sync.m16n8k16 (fp32 accumulate): K tile as A (16 tokens x 16 of d), q as B (16 of
//            d x 8 heads); thread (g, t) supplies chunk 4s + t of rows g, g + 8 and of head g's q,
//            s = 0..3 (the split_gemv mapping: .x/.y feed one mma, .z/.w the next). Result
//            c0, c1: token g, heads 2t, 2t + 1; c2, c3: token g + 8.
//   softmax  online, base 2 (scale * log2 e folded in), per warp: running max per head in the
//            score lanes; probabilities and the rescale factor go through shared memory.
//   P . V    CUDA cores, fp32: half-warp h owns heads [h G'/2, (h+1) G'/2) (G' = G rounded up to
//            1, 2, 4, 8; at G' = 1 the halves split the tokens instead) and lane (i & 15) d-chunk
//            (i & 15): o[head][8 d] += p * v. The running sum l is kept beside o.
// Combine: the 4 warps' (m, l, o) are merged through shared memory in warp order. With one chunk
// per pair the CTA normalises and stores; otherwise it writes its fp32 partial (m, l, o) to the
// workspace and the CTA arriving last on the pair's counter merges the chunks in chunk order
// 0..n-1 (log-sum-exp), stores, and resets the counter: bitwise reproducible.
// Masking: tokens >= min(len[b], L) are never loaded (zero) and score -inf; a chunk past the end
// yields the empty partial (m = -inf, l = 0). len = 0 gives o = 0.
//
// Compile-time: ATT_DTYPE 0 bf16, 1 fp16 (q, K, V, o share it).
// Kernels: split_attention_g1, _g2, _g4, _g8 (G' = padded group size).
#ifndef ATT_DTYPE
#define ATT_DTYPE 0
#endif
#define SMEMKIT_HALF_BF16 (ATT_DTYPE == 0)
#include <smemkit/half_mma.cuh>

#define ATT_THREADS 128
#define ATT_WARPS 4
#define HEAD_DIM 128
#define TILE_T 16
#define ROW_CHUNKS 16
#define MAX_GROUP 8
#define HOST_WARPS_MAX 4
#define ATT_MIN_CTAS 3

namespace sattn {

using namespace smemkit;

// HBM K/V rows: read once, no L1 allocation; host K/V rows: streamed (split_gemv's host load).
__device__ __forceinline__ uint4 ld_hbm(const u16* p) { return ld_v4<kLdNoAllocate>(p); }
__device__ __forceinline__ uint4 ld_host(const u16* p) { return ld_v4<kLdStream>(p); }
__device__ __forceinline__ uint4 ld_q(const u16* p) { return ld_v4<kLdCached>(p); }

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float lo_f32(u32 w) {
#if ATT_DTYPE == 0
  return __uint_as_float(w << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<u16>(w & 0xffffu)));
  return f;
#endif
}

__device__ __forceinline__ float hi_f32(u32 w) {
#if ATT_DTYPE == 0
  return __uint_as_float(w & 0xffff0000u);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<u16>(w >> 16)));
  return f;
#endif
}

// Position of 16-byte chunk c of tile row r in a warp's shared tile (see the header).
__device__ __forceinline__ int swz(int r, int c) { return r * ROW_CHUNKS + (c ^ ((r & 1) << 2)); }

struct WarpTiles {
  uint4 k[TILE_T * ROW_CHUNKS];  // 4 KB
  uint4 v[TILE_T * ROW_CHUNKS];  // 4 KB
  float p[TILE_T][MAX_GROUP];    // probabilities of the tile
  float alpha[MAX_GROUP];        // rescale factor of this tile, per head
};

struct CombineArea {
  float o[ATT_WARPS][MAX_GROUP][HEAD_DIM];
  float m[ATT_WARPS][MAX_GROUP];
  float l[ATT_WARPS][MAX_GROUP];
};

union Smem {
  WarpTiles w[ATT_WARPS];
  CombineArea c;
};

struct Args {
  const u16* q;
  const u16* k_hbm;
  const u16* v_hbm;
  const u16* k_host;
  const u16* v_host;
  const int* lengths;
  u16* out;
  float* ws;
  u32* counters;
  int B, H_kv, G, L, b_hbm, host_ctas, host_warps, nch_g, chunk_g, nch_h, chunk_h, nch_stride;
  float scale_log2;
};

template <int GT>
struct Cfg {
  static constexpr bool TOKEN_SPLIT = GT == 1;
  static constexpr int HPH = GT >= 2 ? GT / 2 : 1;  // heads per half-warp in P . V
};

// After every thread stored its partials: count this CTA's arrival on `counter`. True (in every
// thread) for the CTA that arrived last; it also resets the counter for the next launch.
__device__ __forceinline__ bool arrive_last(u32* counter, int n, int* s_last) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const u32 old = atomicAdd(counter, 1u);
    const int last = old == static_cast<u32>(n - 1);
    if (last) {
      __threadfence();  // acquire on the thread that observed the count, before telling the CTA
      atomicExch(counter, 0u);
    }
    *s_last = last;
  }
  __syncthreads();
  const bool last = *s_last != 0;
  if (last) __threadfence();
  return last;
}

template <int GT, bool HOST>
__device__ __forceinline__ void process_unit(const Args& a, Smem& sm, int pair, int c, int nch,
                                             int chunk, int active_warps, int* s_last) {
  using C = Cfg<GT>;
  constexpr int HPH = C::HPH;
  const float NEG_INF = __int_as_float(0xff800000);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int half = lane >> 4, c16 = lane & 15;
  const int b = pair / a.H_kv;
  const int hk = pair - b * a.H_kv;
  int len = a.lengths != nullptr ? a.lengths[b] : a.L;
  len = min(max(len, 0), a.L);
  const int t_begin = c * chunk;
  const int t_end = min(t_begin + chunk, len);
  const u64 seq = HOST ? static_cast<u64>(b - a.b_hbm) * a.H_kv + hk : static_cast<u64>(pair);
  const u16* kbase = (HOST ? a.k_host : a.k_hbm) + seq * static_cast<u64>(a.L) * HEAD_DIM;
  const u16* vbase = (HOST ? a.v_host : a.v_hbm) + seq * static_cast<u64>(a.L) * HEAD_DIM;

  float m0 = NEG_INF, m1 = NEG_INF;  // running max of heads 2t, 2t + 1 (score lanes)
  float o[HPH][8];
  float l[HPH];
#pragma unroll
  for (int hh = 0; hh < HPH; ++hh) {
    l[hh] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) o[hh][e] = 0.0f;
  }
  WarpTiles& wt = sm.w[warp];

  if (warp < active_warps && t_begin + warp * TILE_T < t_end) {
    // q fragments of head g of the group (zero for padded heads), chunks 4s + t
    uint4 qf[4];
    const u16* qp = a.q + (static_cast<u64>(pair) * a.G + min(g, a.G - 1)) * HEAD_DIM;
#pragma unroll
    for (int s = 0; s < 4; ++s) qf[s] = g < a.G ? ld_q(qp + (4 * s + t) * 8) : zero4();

#pragma unroll 1
    for (int t0 = t_begin + warp * TILE_T; t0 < t_end; t0 += active_warps * TILE_T) {
      uint4 kr[8], vr[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int tok = t0 + 2 * j + half;
        const bool ok = tok < t_end;
        const u64 off = static_cast<u64>(ok ? tok : 0) * HEAD_DIM + c16 * 8;
        if (HOST) {
          kr[j] = ok ? ld_host(kbase + off) : zero4();
          vr[j] = ok ? ld_host(vbase + off) : zero4();
        } else {
          kr[j] = ok ? ld_hbm(kbase + off) : zero4();
          vr[j] = ok ? ld_hbm(vbase + off) : zero4();
        }
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        wt.k[swz(2 * j + half, c16)] = kr[j];
        wt.v[swz(2 * j + half, c16)] = vr[j];
      }
      __syncwarp();

      // scores: S[token][head] for 16 tokens x 8 heads
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint4 wa = wt.k[swz(g, 4 * s + t)];
        const uint4 wb = wt.k[swz(g + 8, 4 * s + t)];
        mma16816(acc, wa.x, wb.x, wa.y, wb.y, qf[s].x, qf[s].y);
        mma16816(acc, wa.z, wb.z, wa.w, wb.w, qf[s].z, qf[s].w);
      }
      const bool va = t0 + g < t_end, vb = t0 + g + 8 < t_end;
      const float s0 = va ? acc[0] * a.scale_log2 : NEG_INF;
      const float s1 = va ? acc[1] * a.scale_log2 : NEG_INF;
      const float s2 = vb ? acc[2] * a.scale_log2 : NEG_INF;
      const float s3 = vb ? acc[3] * a.scale_log2 : NEG_INF;
      float mx0 = fmaxf(s0, s2), mx1 = fmaxf(s1, s3);
#pragma unroll
      for (int off = 4; off < 32; off <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
      }
      const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
      const float u0 = n0 == NEG_INF ? 0.0f : n0;
      const float u1 = n1 == NEG_INF ? 0.0f : n1;
      const float al0 = fast_exp2(m0 - u0), al1 = fast_exp2(m1 - u1);
      m0 = n0;
      m1 = n1;
      wt.p[g][2 * t] = fast_exp2(s0 - u0);
      wt.p[g][2 * t + 1] = fast_exp2(s1 - u1);
      wt.p[g + 8][2 * t] = fast_exp2(s2 - u0);
      wt.p[g + 8][2 * t + 1] = fast_exp2(s3 - u1);
      if (g == 0) {
        wt.alpha[2 * t] = al0;
        wt.alpha[2 * t + 1] = al1;
      }
      __syncwarp();

      // P . V on the CUDA cores
#pragma unroll
      for (int hh = 0; hh < HPH; ++hh) {
        const float al = wt.alpha[C::TOKEN_SPLIT ? 0 : half * HPH + hh];
        l[hh] *= al;
#pragma unroll
        for (int e = 0; e < 8; ++e) o[hh][e] *= al;
      }
      constexpr int NTOK = C::TOKEN_SPLIT ? TILE_T / 2 : TILE_T;
      const int tk0 = C::TOKEN_SPLIT ? half * NTOK : 0;
#pragma unroll
      for (int i = 0; i < NTOK; ++i) {
        const int tok = tk0 + i;
        const uint4 v = wt.v[swz(tok, c16)];
        const float vf[8] = {lo_f32(v.x), hi_f32(v.x), lo_f32(v.y), hi_f32(v.y),
                             lo_f32(v.z), hi_f32(v.z), lo_f32(v.w), hi_f32(v.w)};
#pragma unroll
        for (int hh = 0; hh < HPH; ++hh) {
          const float p = wt.p[tok][C::TOKEN_SPLIT ? 0 : half * HPH + hh];
          l[hh] += p;
#pragma unroll
          for (int e = 0; e < 8; ++e) o[hh][e] = fmaf(p, vf[e], o[hh][e]);
        }
      }
      __syncwarp();  // the next tile overwrites the warp's tiles
    }
  }

  // ---- merge the warps (warp order), then the chunks (chunk order) ----
  __syncthreads();  // the tiles become the combine area
  CombineArea& ca = sm.c;
  if (g == 0) {
    ca.m[warp][2 * t] = m0;
    ca.m[warp][2 * t + 1] = m1;
  }
  if (C::TOKEN_SPLIT) {
#pragma unroll
    for (int e = 0; e < 8; ++e) o[0][e] += __shfl_xor_sync(0xffffffffu, o[0][e], 16);
    l[0] += __shfl_xor_sync(0xffffffffu, l[0], 16);
    if (half == 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e) ca.o[warp][0][c16 * 8 + e] = o[0][e];
      if (c16 == 0) ca.l[warp][0] = l[0];
    }
  } else {
#pragma unroll
    for (int hh = 0; hh < HPH; ++hh) {
      const int head = half * HPH + hh;
#pragma unroll
      for (int e = 0; e < 8; ++e) ca.o[warp][head][c16 * 8 + e] = o[hh][e];
      if (c16 == 0) ca.l[warp][head] = l[hh];
    }
  }
  __syncthreads();

  const int d = threadIdx.x;  // ATT_THREADS == HEAD_DIM
  const u64 n_o = static_cast<u64>(a.B) * a.H_kv * a.nch_stride * a.G * HEAD_DIM;
  float* ws_o = a.ws;
  float* ws_ml = a.ws + n_o;
#pragma unroll
  for (int h = 0; h < GT; ++h) {
    if (h >= a.G) break;
    float mw = ca.m[0][h];
#pragma unroll
    for (int w = 1; w < ATT_WARPS; ++w) mw = fmaxf(mw, ca.m[w][h]);
    const float u = mw == NEG_INF ? 0.0f : mw;
    float lsum = 0.0f, osum = 0.0f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) {
      const float f = fast_exp2(ca.m[w][h] - u);
      lsum += ca.l[w][h] * f;
      osum += ca.o[w][h][d] * f;
    }
    if (nch == 1) {
      a.out[(static_cast<u64>(pair) * a.G + h) * HEAD_DIM + d] =
          from_f32(lsum > 0.0f ? osum / lsum : 0.0f);
    } else {
      const u64 slot = (static_cast<u64>(pair) * a.nch_stride + c) * a.G + h;
      ws_o[slot * HEAD_DIM + d] = osum;
      if (d == 0) {
        ws_ml[2 * slot] = mw;
        ws_ml[2 * slot + 1] = lsum;
      }
    }
  }
  if (nch > 1 && arrive_last(a.counters + pair, nch, s_last)) {
    for (int h = 0; h < a.G; ++h) {
      const u64 base = static_cast<u64>(pair) * a.nch_stride * a.G + h;
      float mw = NEG_INF;
      for (int cc = 0; cc < nch; ++cc) mw = fmaxf(mw, ld_partial(ws_ml + 2 * (base + cc * a.G)));
      const float u = mw == NEG_INF ? 0.0f : mw;
      float lsum = 0.0f, osum = 0.0f;
      for (int cc = 0; cc < nch; ++cc) {
        const u64 slot = base + static_cast<u64>(cc) * a.G;
        const float f = fast_exp2(ld_partial(ws_ml + 2 * slot) - u);
        lsum += ld_partial(ws_ml + 2 * slot + 1) * f;
        osum += ld_partial(ws_o + slot * HEAD_DIM + d) * f;
      }
      a.out[(static_cast<u64>(pair) * a.G + h) * HEAD_DIM + d] =
          from_f32(lsum > 0.0f ? osum / lsum : 0.0f);
    }
  }
  __syncthreads();  // the combine area becomes the next unit's tiles
}

template <int GT>
__device__ __forceinline__ void split_attention(const Args& a) {
  __shared__ Smem sm;
  __shared__ int s_last;
  if (static_cast<int>(blockIdx.x) < a.host_ctas) {
    const int first = a.b_hbm * a.H_kv;
    const int units = (a.B - a.b_hbm) * a.H_kv * a.nch_h;
#pragma unroll 1
    for (int unit = blockIdx.x; unit < units; unit += a.host_ctas) {
      const int pr = unit / a.nch_h;
      process_unit<GT, true>(a, sm, first + pr, unit - pr * a.nch_h, a.nch_h, a.chunk_h,
                             a.host_warps, &s_last);
    }
  } else {
    const int cta = static_cast<int>(blockIdx.x) - a.host_ctas;
    const int nctas = static_cast<int>(gridDim.x) - a.host_ctas;
    const int units = a.b_hbm * a.H_kv * a.nch_g;
#pragma unroll 1
    for (int unit = cta; unit < units; unit += nctas) {
      const int pr = unit / a.nch_g;
      process_unit<GT, false>(a, sm, pr, unit - pr * a.nch_g, a.nch_g, a.chunk_g, ATT_WARPS,
                              &s_last);
    }
  }
}

}  // namespace sattn

// Parameters (the order attention.py packs):
//   q, k_hbm, v_hbm, k_host, v_host, lengths (0: every sequence has L tokens), out, ws (0 when
//   no chunk split), counters (u32 per pair, zero before the first launch; left zero),
//   B, H_kv, G, L, b_hbm, host_ctas, host_warps (1..HOST_WARPS_MAX), nch_g, chunk_g, nch_h,
//   chunk_h (tokens per chunk, multiples of TILE_T), nch_stride (>= nch_g, nch_h), scale_log2
//   (softmax scale x log2 e).
#define SPLIT_ATTENTION_KERNEL(GT)                                                                 \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS, ATT_MIN_CTAS) split_attention_g##GT( \
      const u16* __restrict__ q, const u16* __restrict__ k_hbm, const u16* __restrict__ v_hbm,   \
      const u16* __restrict__ k_host, const u16* __restrict__ v_host,                           \
      const int* __restrict__ lengths, u16* __restrict__ out, float* __restrict__ ws,           \
      u32* __restrict__ counters, int B, int H_kv, int G, int L, int b_hbm, int host_ctas,       \
      int host_warps, int nch_g, int chunk_g, int nch_h, int chunk_h, int nch_stride,           \
      float scale_log2) {                                                                        \
    const sattn::Args a{q,     k_hbm,     v_hbm,      k_host, v_host,  lengths, out,          \
                        ws,    counters,  B,          H_kv,   G,       L,       b_hbm,        \
                        host_ctas, host_warps, nch_g, chunk_g, nch_h,  chunk_h, nch_stride,   \
                        scale_log2};                                                             \
    sattn::split_attention<GT>(a);                                                               \
  }

SPLIT_ATTENTION_KERNEL(1)
SPLIT_ATTENTION_KERNEL(2)
SPLIT_ATTENTION_KERNEL(4)
SPLIT_ATTENTION_KERNEL(8)
