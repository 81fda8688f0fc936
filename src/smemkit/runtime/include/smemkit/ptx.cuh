// smemkit/ptx.cuh: the inline-PTX primitives smemkit kernels use on sm_90+.
//
// Thread-block clusters, distributed shared memory (DSMEM) and the asynchronous copy engine,
// written directly in PTX so kernels need neither cooperative_groups nor CCCL headers (and
// compile under NVRTC with no toolkit include path). Semantics follow the PTX ISA 8.x manual:
//   barrier.cluster (§9.7.13.4), mapa (§9.7.9.21), st.async (§9.7.9.12),
//   mbarrier (§9.7.13.15), cp.async.bulk (§9.7.9.25).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;

namespace smemkit {

// ---- identity ---------------------------------------------------------------------------
__device__ __forceinline__ u32 smid() {
  u32 id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_nctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_id_x() {
  u32 r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 nclusters_x() {
  u32 r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}

// Nanoseconds of the GPU's global timer (the same clock on every SM: spans across CTAs).
__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- cluster barrier --------------------------------------------------------------------
// arrive(release) ... wait(acquire): a full cluster barrier that also orders shared-memory
// (local and remote) accesses. All threads of every CTA must take part (.aligned: whole warps).
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
// The relaxed arrive orders nothing; pair it with mbarriers or fences of your own.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// ---- addresses --------------------------------------------------------------------------
// 32-bit shared-window address of a generic pointer to this CTA's shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}
// The shared::cluster address of the same offset in CTA `rank`'s shared memory.
__device__ __forceinline__ u32 mapa(u32 local_addr, u32 rank) {
  u32 out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(local_addr), "r"(rank));
  return out;
}

// ---- loads and stores through shared::cluster addresses ---------------------------------
__device__ __forceinline__ u32 ld_cluster_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float ld_cluster_f32(u32 addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_cluster_u32(u32 addr, u32 v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_cluster_f32(u32 addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ u32 ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// ---- mbarrier ---------------------------------------------------------------------------
__device__ __forceinline__ void mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes mbarrier initialisation visible to the other CTAs of the cluster (before they use it).
__device__ __forceinline__ void fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arrive once on a local mbarrier (release at CTA scope).
__device__ __forceinline__ void mbarrier_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive once on a local mbarrier and announce `bytes` of transactions still to land on it.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
               "r"(bytes)
               : "memory");
}
// Arrive once on an mbarrier of any CTA of the cluster (`remote_bar`: a shared::cluster address
// from mapa). Release at CTA scope, as a pipeline's consumer frees a stage that a peer's multicast
// refills (this thread's reads of its own shared memory are done before the arrival): the
// .release.cluster form compiles to MEMBAR.ALL.GPU per arrival (direct_gemm on the H200, with the
// host rows in HBM: 2.2 us per stage at 16 CTAs with the cluster-scope forms, 1.5 us with these;
// commit 84d716e).
__device__ __forceinline__ void mbarrier_arrive_remote(u32 remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_bar) : "memory");
}
__device__ __forceinline__ void mbarrier_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Spin until the phase with parity `phase` of a local mbarrier has completed (acquire, cluster
// scope: data delivered by peers' st.async is visible afterwards).
__device__ __forceinline__ void mbarrier_wait_parity(u32 bar, u32 phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(phase)
      : "memory");
}

// The same wait with CTA-scope acquire: enough for data landed by tensor copies (also a peer's
// multicast) and cp.async, whose completion the barrier itself tracks; the cluster-scope acquire
// above also invalidates the L1 (CCTL.IVALL) on every completed wait.
__device__ __forceinline__ void mbarrier_wait_parity_cta(u32 bar, u32 phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(phase)
      : "memory");
}

// ---- one-way DSMEM push ------------------------------------------------------------------
// Store 4/8/16 bytes into a peer CTA's shared memory; completion is counted as transaction
// bytes on the peer's mbarrier (`remote_bar`, a shared::cluster address in the same CTA as
// `remote_addr`). The receiver waits on its own mbarrier; no cluster barrier is needed.
__device__ __forceinline__ void st_async_f32(u32 remote_addr, float v, u32 remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   remote_addr),
               "r"(__float_as_uint(v)), "r"(remote_bar)
               : "memory");
}
__device__ __forceinline__ void st_async_v2f32(u32 remote_addr, float a, float b, u32 remote_bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(
          remote_addr),
      "r"(__float_as_uint(a)), "r"(__float_as_uint(b)), "r"(remote_bar)
      : "memory");
}
__device__ __forceinline__ void st_async_v4f32(u32 remote_addr, float4 v, u32 remote_bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
      "[%5];" ::"r"(remote_addr),
      "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
      "r"(__float_as_uint(v.w)), "r"(remote_bar)
      : "memory");
}

// ---- bulk copy global -> shared (the copy engine) -----------------------------------------
// `bytes` must be a multiple of 16 and both addresses 16-byte aligned; completion is counted
// on the local mbarrier `bar` as transaction bytes.
__device__ __forceinline__ void cp_async_bulk_g2s(u32 dst_smem, const void* src, u32 bytes,
                                                  u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst_smem),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// Tensor copy (TMA) of one 2-D box of the tensor described by the tensor map at `tmap` (a
// generic address of a 64-byte-aligned CUtensorMap in global memory) at element coordinates
// (col, row) into this CTA's shared memory at `dst_smem` (1024-byte aligned under 128-byte
// swizzle); completion counted on the local mbarrier `bar`.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_g2s(u32 dst_smem, const void* tmap, int col,
                                                            int row, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];" ::"r"(dst_smem),
      "l"(tmap), "r"(col), "r"(row), "r"(bar)
      : "memory");
}
// The same box delivered to the same shared-memory offset (and completed on the mbarrier at the
// same offset) in every CTA of the cluster named in `cta_mask`: read once, landed in each.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_g2s_multicast(u32 dst_smem, const void* tmap,
                                                                      int col, int row, u32 bar,
                                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst_smem),
      "l"(tmap), "r"(col), "r"(row), "r"(bar), "h"(cta_mask)
      : "memory");
}

// A tensor map written to global memory by this thread (generic stores) and then used by its
// tensor copies: release the generic writes to the tensor-map proxy, then acquire the 128 bytes.
__device__ __forceinline__ void tensormap_publish(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
}

// Bulk prefetch of `bytes` (a multiple of 16, 16-byte aligned) of global memory into the L2: the
// data arrive while the thread goes on, so a later ordinary load of them hits the L2.
__device__ __forceinline__ void prefetch_bulk_l2(const void* src, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy accesses.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- 16-byte global loads with a stated cache policy (inline PTX, so ptxas keeps the form) ---
// ld_v4<0>: streaming, evict-first (`.cs`): data read once, e.g. host rows over PCIe.
// ld_v4<1>: read-only, no L1 allocation (`.nc.L1::no_allocate`): large read-once device arrays.
// ld_v4<2>: plain `ld.global`.
// ld_v4<3>: read-only, L1-cached (`.nc`): small data every warp of a CTA re-reads.
template <int POLICY>
__device__ __forceinline__ uint4 ld_v4(const void* p) {
  uint4 v;
  if (POLICY == 0) {
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if (POLICY == 1) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if (POLICY == 2) {
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else {
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  }
  return v;
}
constexpr int kLdStream = 0, kLdNoAllocate = 1, kLdPlain = 2, kLdCached = 3;

}  // namespace smemkit
