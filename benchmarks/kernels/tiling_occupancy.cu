// Register-hungry kernel for the occupancy check (benchmarks/tiling_validate.py).
// NREG live floats kept in registers through a chain of FMAs; compiled once per register target
// with -maxrregcount so ptxas reports a spread of register counts. It is never launched: only
// cudaOccupancyMaxActiveBlocksPerMultiprocessor / MaxActiveClusters are asked about it. It takes
// dynamic shared memory only (no static __shared__), so the calculator's smem = the dynamic size.
#ifndef NREG
#define NREG 8
#endif

extern "C" __global__ void smk_tiling_occupancy(float* data, int iters) {
  extern __shared__ float dyn[];
  float r[NREG];
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < NREG; ++i) r[i] = data[t + i * 4096];
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < NREG; ++i) r[i] = fmaf(r[i], r[(i + 1) % NREG], r[(i + 3) % NREG]);
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NREG; ++i) s += r[i];
  if (iters < 0) dyn[threadIdx.x] = s;  // keeps the dynamic array referenced; never taken
  data[t] = s;
}
