// Worked example of issue 7 item 4 (benchmarks/tiling_worked_example.py, docs/tiling.md):
// a cp.async double-buffered fp32 GEMM tile loop, C = A * B (row-major, CUDA cores only: no tensor
// cores, no TMA), whose A tile is the `cp_async_double_buffer` built-in of smemkit.tiling.
//
// CTA tile BM x BN = 64 x 32, BK = 32, block (32, 4) = 128 threads, two shared-memory stages:
//   As[2][64][32 + PAD] (optionally XOR-swizzled), filled along K by 16-byte
//       cp.async.cg.shared.global: thread tid writes row tid/8 + 16i, columns 4(tid%8)..+3, i < 4;
//   Bs[2][32][32], filled the same way (i < 2), placed after As (128-byte aligned).
// Thread-per-row compute: thread (lane, warp) owns row m = lane + 32(warp%2) of the tile and the
// TN = 16 columns n = 16(warp/2) .. +15. Per k-tile it reads
//   a4 = float4 As[s][m][4kk]            for kk < 8      (8 LDS.128: the conflicting read)
//   b4 = float4 Bs[s][4kk+j][n + 4q]     for kk<8, j<4, q<4 (128 LDS.128, one address per warp)
// and does 32 x 16 FMAs. Nothing else touches shared memory. The reads are inline-PTX
// ld.volatile.shared.v4.f32, so each is exactly one LDS.128 in the SASS (see smk_twe_lds128).
//
// Unpadded, the 8 lanes of a quarter-warp read 8 different rows at one 16-byte column: row stride
// 128 bytes puts them on the same 4 banks, an 8-way conflict. The layout of As is chosen at
// compile time (the script passes what smemkit.tiling.advise recommends):
//   SMK_AS_PAD                              floats added to each As row (advisor: 4);
//   SMK_AS_SWZ_B, SMK_AS_SWZ_M, SMK_AS_SWZ_S  CuTe Swizzle<B,M,S> on the As element offset
//                                           (advisor: Swizzle(3,2,3)); B = 0 means none.
// Defaults: unpadded, no swizzle. SMK_KERNEL names the extern "C" entry point, so that the three
// variants profile under distinct names. Launch: grid (N/32, M/64), block (32, 4), dynamic shared
// memory SMK_TWE_SMEM_BYTES; M % 64 == 0, N % 32 == 0, K % 32 == 0, 16-byte aligned A and B.
//
// The offset functions are plain C++ as well: a host compiler that includes this file (without
// __CUDACC__) gets them and nothing else, which the tests use to compare them with the analyzer.

#ifndef SMK_AS_PAD
#define SMK_AS_PAD 0
#endif
#ifndef SMK_AS_SWZ_B
#define SMK_AS_SWZ_B 0
#endif
#ifndef SMK_AS_SWZ_M
#define SMK_AS_SWZ_M 0
#endif
#ifndef SMK_AS_SWZ_S
#define SMK_AS_SWZ_S 0
#endif
#ifndef SMK_KERNEL
#define SMK_KERNEL smk_twe_sgemm
#endif

#define SMK_TWE_BM 64
#define SMK_TWE_BN 32
#define SMK_TWE_BK 32
#define SMK_TWE_TN 16
#define SMK_TWE_THREADS 128

#if defined(__CUDACC__)
#define SMK_TWE_HD __host__ __device__ __forceinline__
#else
#define SMK_TWE_HD inline
#endif

// Floats per As row, floats in As (both stages), first float of Bs (128-byte aligned), total bytes.
#define SMK_TWE_AS_LD (SMK_TWE_BK + SMK_AS_PAD)
#define SMK_TWE_AS_FLOATS (2 * SMK_TWE_BM * SMK_TWE_AS_LD)
#define SMK_TWE_BS_BASE ((SMK_TWE_AS_FLOATS + 31) / 32 * 32)
#define SMK_TWE_BS_FLOATS (2 * SMK_TWE_BK * SMK_TWE_BN)
#define SMK_TWE_SMEM_BYTES (4 * (SMK_TWE_BS_BASE + SMK_TWE_BS_FLOATS))

static_assert(SMK_AS_PAD >= 0 && SMK_AS_PAD % 4 == 0, "As rows must stay 16-byte aligned (cp.async, float4)");
static_assert(SMK_AS_SWZ_B == 0 || (SMK_AS_SWZ_M >= 2 && SMK_AS_SWZ_S >= SMK_AS_SWZ_B),
              "the swizzle must keep 4-float chunks whole (M >= 2) and be CuTe-valid (S >= B)");
static_assert(SMK_TWE_THREADS == 2 * SMK_TWE_BM && SMK_TWE_BN == 2 * SMK_TWE_TN,
              "thread-per-row mapping: two warps per 32 rows, two column groups");

// Element offset of As[s][m][k] (padded row-major, then the swizzle, as smemkit.tiling.SmemLayout).
SMK_TWE_HD int smk_twe_as_offset(int s, int m, int k) {
  int o = (s * SMK_TWE_BM + m) * SMK_TWE_AS_LD + k;
#if SMK_AS_SWZ_B > 0
  o ^= (o & (((1 << SMK_AS_SWZ_B) - 1) << (SMK_AS_SWZ_M + SMK_AS_SWZ_S))) >> SMK_AS_SWZ_S;
#endif
  return o;
}

// Element offset of Bs[s][k][n] from the start of dynamic shared memory.
SMK_TWE_HD int smk_twe_bs_offset(int s, int k, int n) {
  return SMK_TWE_BS_BASE + (s * SMK_TWE_BK + k) * SMK_TWE_BN + n;
}

#if defined(__CUDACC__)

__device__ __forceinline__ void smk_twe_cp_async16(float* dst, const float* src) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(src) : "memory");
}

__device__ __forceinline__ void smk_twe_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void smk_twe_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// One 128-bit shared load that ptxas must issue exactly once: with a plain C++ load it sometimes
// (one NVRTC build in several, same source) re-read a float of Bs with an extra 32-bit LDS instead
// of keeping it in a register, which shifts the counters away from the pattern.
__device__ __forceinline__ float4 smk_twe_lds128(unsigned addr) {
  float4 v;
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// Stage s <- A[m0.., k0..] and B[k0.., n0..], 16 bytes per cp.async, rows filled along K / N.
__device__ __forceinline__ void smk_twe_load_stage(float* smem, const float* __restrict__ A,
                                                   const float* __restrict__ B, int N, int K, int m0,
                                                   int n0, int k0, int s, int tid) {
  const int r = tid >> 3;
  const int c = 4 * (tid & 7);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = r + 16 * i;
    smk_twe_cp_async16(smem + smk_twe_as_offset(s, row, c), A + (long long)(m0 + row) * K + k0 + c);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = r + 16 * i;
    smk_twe_cp_async16(smem + smk_twe_bs_offset(s, row, c), B + (long long)(k0 + row) * N + n0 + c);
  }
}

extern "C" __global__ void __launch_bounds__(SMK_TWE_THREADS)
SMK_KERNEL(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
           int K) {
  extern __shared__ __align__(128) float smem[];
  const int tid = threadIdx.x + 32 * threadIdx.y;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int m0 = blockIdx.y * SMK_TWE_BM;
  const int n0 = blockIdx.x * SMK_TWE_BN;
  if (m0 >= M || n0 >= N) return;
  const int m = lane + 32 * (warp & 1);     // this thread's row of the C tile
  const int nq = SMK_TWE_TN * (warp >> 1);  // its first column
  const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(smem));

  float acc[SMK_TWE_TN];
#pragma unroll
  for (int j = 0; j < SMK_TWE_TN; ++j) acc[j] = 0.f;

  const int tiles = K / SMK_TWE_BK;
  smk_twe_load_stage(smem, A, B, N, K, m0, n0, 0, 0, tid);
  smk_twe_cp_async_commit();
#pragma unroll 1
  for (int t = 0; t < tiles; ++t) {
    const int s = t & 1;
    if (t + 1 < tiles) smk_twe_load_stage(smem, A, B, N, K, m0, n0, (t + 1) * SMK_TWE_BK, s ^ 1, tid);
    smk_twe_cp_async_commit();  // an empty group on the last tile keeps the wait count uniform
    smk_twe_cp_async_wait<1>();  // this thread's copies of tile t have landed
    __syncthreads();             // ... and everyone's
#pragma unroll
    for (int kk = 0; kk < SMK_TWE_BK / 4; ++kk) {
      const float4 a = smk_twe_lds128(sbase + 4u * smk_twe_as_offset(s, m, 4 * kk));
      const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int q = 0; q < SMK_TWE_TN / 4; ++q) {
          const float4 b = smk_twe_lds128(sbase + 4u * smk_twe_bs_offset(s, 4 * kk + j, nq + 4 * q));
          acc[4 * q + 0] = fmaf(av[j], b.x, acc[4 * q + 0]);
          acc[4 * q + 1] = fmaf(av[j], b.y, acc[4 * q + 1]);
          acc[4 * q + 2] = fmaf(av[j], b.z, acc[4 * q + 2]);
          acc[4 * q + 3] = fmaf(av[j], b.w, acc[4 * q + 3]);
        }
      }
    }
    __syncthreads();  // stage s is refilled at iteration t + 1
  }

  float* crow = C + (long long)(m0 + m) * N + n0 + nq;
#pragma unroll
  for (int q = 0; q < SMK_TWE_TN / 4; ++q) {
    *reinterpret_cast<float4*>(crow + 4 * q) =
        make_float4(acc[4 * q + 0], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
  }
}

#endif  // __CUDACC__
