// Test kernel: every CTA of a cluster fills its dynamic shared memory (which may exceed 48 KB),
// then reads its right neighbour's copy through DSMEM and writes what it saw.
// out[(cluster * P + rank) * words + i] = value written by CTA (rank + 1) % P of that cluster.
#include <smemkit/ptx.cuh>
using namespace smemkit;

extern "C" __global__ void cluster_exchange(unsigned* out, int words) {
  extern __shared__ __align__(16) unsigned slab[];
  const u32 rank = cluster_ctarank(), P = cluster_nctarank(), cluster = cluster_id_x();
  for (int i = threadIdx.x; i < words; i += blockDim.x) slab[i] = (cluster * P + rank) * 1000003u + i;
  cluster_sync();
  const u32 peer = mapa(smem_u32(slab), (rank + 1) % P);
  unsigned* dst = out + static_cast<size_t>(cluster * P + rank) * words;
  for (int i = threadIdx.x; i < words; i += blockDim.x) dst[i] = ld_cluster_u32(peer + 4u * i);
  cluster_sync();
}
