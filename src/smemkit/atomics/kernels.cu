// Shared-memory atomic microbenchmarks (service time S(n, e, c, op, dtype)) and the histogram
// case-study kernels behind `smemkit atomics` (SPEC §3, issue 6).
//
// Compile-time choices (defaults let the file build with no defines at all):
//   ATOM_OP     0 add (runtime operand)   1 inc (atomicAdd(p, 1): the ATOMS.POPC.INC path)
//               2 max   3 and   4 or   5 exch   6 cas (one atomicCAS, success or not)
//               7 cas_add (a software CAS retry loop that adds: the c dimension by hand)
//               8 mix (add, with the first `cas_per8` of every 8 instructions a CAS)
//   ATOM_DTYPE  0 int32  1 uint32  2 float32  3 int64  4 uint64  5 float64
//   ATOM_RET    1: every result is consumed (returning atomics); 0: results are dropped, so
//               ptxas may emit the non-returning form (destination RZ).
//   ATOM_ONLY   1: leave the histogram kernels out (the sweep builds one module per variant).
// The address pattern is a template parameter: each pattern is its own extern "C" kernel
// (atom_same, atom_distinct_banks, atom_one_bank, atom_mix<K>, atom_conflict<K>), so the
// addresses a lane touches are compile-time expressions, as in real code.
//
// Method: one warp instruction per loop iteration per warp; lane 0 of each warp reads clock64
// before and after its loop; the host takes, per SM (%smid), warps x iterations / (last end -
// first start) as the SM's throughput X(n) in warp instructions per cycle with n warps issuing,
// and S(n) = 1 / X(n). `think` dependent integer ops before each atomic (with the address tied
// to their result through `mask` = 0) give the think time Z of the closed queueing model;
// do_atomic = 0 runs the same loop without the atomic to measure Z itself.
#include <smemkit/ptx.cuh>

#ifndef ATOM_OP
#define ATOM_OP 0
#endif
#ifndef ATOM_DTYPE
#define ATOM_DTYPE 0
#endif
#ifndef ATOM_RET
#define ATOM_RET 0
#endif
#ifndef ATOM_ONLY
#define ATOM_ONLY 0
#endif

#define ATOM_BLOCK_MAX 1024  // at most 32 warps per CTA; 2 CTAs give 64 warps per SM
#define ATOM_UNROLL 8

#if ATOM_DTYPE == 0
typedef int atom_t;
typedef unsigned int atom_bits_t;
#elif ATOM_DTYPE == 1
typedef unsigned int atom_t;
typedef unsigned int atom_bits_t;
#elif ATOM_DTYPE == 2
typedef float atom_t;
typedef unsigned int atom_bits_t;
#elif ATOM_DTYPE == 3
typedef long long atom_t;
typedef unsigned long long atom_bits_t;
#elif ATOM_DTYPE == 4
typedef unsigned long long atom_t;
typedef unsigned long long atom_bits_t;
#elif ATOM_DTYPE == 5
typedef double atom_t;
typedef unsigned long long atom_bits_t;
#else
#error "ATOM_DTYPE must be 0..5"
#endif

namespace atomk {

using namespace smemkit;

enum Pattern { SAME = 0, DISTINCT_BANKS = 1, ONE_BANK = 2, MIX = 3, CONFLICT = 4 };

// Elements (of atom_t) between two addresses in the same bank: 128 bytes.
constexpr u32 kBankRow = 128u / sizeof(atom_t);

// Element index lane `lane` touches, relative to its warp's base.
//   SAME            every lane the same element (one address per instruction)
//   DISTINCT_BANKS  lane l -> element l (32 addresses; conflict-free for 32-bit types)
//   ONE_BANK        lane l -> element l * kBankRow (32 addresses, all in one bank)
//   MIX<K>          lane l -> element l % K (K addresses in K banks, 32/K lanes on each)
//   CONFLICT<K>     lane l -> (l / K) + kBankRow * (l % K) (32 addresses, K per bank)
template <int P, int K>
__device__ __forceinline__ u32 lane_element(u32 lane) {
  if (P == SAME) return 0u;
  if (P == DISTINCT_BANKS) return lane;
  if (P == ONE_BANK) return lane * kBankRow;
  if (P == MIX) return lane % K;
  return lane / K + kBankRow * (lane % K);
}

__device__ __forceinline__ atom_bits_t to_bits(atom_t v) {
#if ATOM_DTYPE == 2
  return __float_as_uint(v);
#elif ATOM_DTYPE == 5
  return static_cast<atom_bits_t>(__double_as_longlong(v));
#else
  return static_cast<atom_bits_t>(v);
#endif
}

__device__ __forceinline__ atom_t from_bits(atom_bits_t b) {
#if ATOM_DTYPE == 2
  return __uint_as_float(b);
#elif ATOM_DTYPE == 5
  return __longlong_as_double(static_cast<long long>(b));
#else
  return static_cast<atom_t>(b);
#endif
}

// atomicCAS exists for 32- and 64-bit unsigned words; every type goes through its bits.
__device__ __forceinline__ atom_bits_t cas_bits(atom_t* p, atom_bits_t cmp, atom_bits_t val) {
  return atomicCAS(reinterpret_cast<atom_bits_t*>(p), cmp, val);
}

// Plain add through the CUDA overloads (int64 adds through its two's-complement bits).
__device__ __forceinline__ atom_t add_op(atom_t* p, atom_t v) {
#if ATOM_DTYPE == 3
  return static_cast<atom_t>(atomicAdd(reinterpret_cast<unsigned long long*>(p),
                                       static_cast<unsigned long long>(v)));
#else
  return atomicAdd(p, v);
#endif
}

// Software CAS loop: what the compiler does itself for operations the unit lacks.
__device__ __forceinline__ atom_t cas_add(atom_t* p, atom_t v) {
  atom_bits_t old = to_bits(*reinterpret_cast<volatile atom_t*>(p));
  atom_bits_t assumed;
  do {
    assumed = old;
    old = cas_bits(p, assumed, to_bits(from_bits(assumed) + v));
  } while (old != assumed);
  return from_bits(old);
}

// One atomic of the compiled operation. `it` (the iteration) varies max/and/or/exch/cas operands
// so each instruction really writes; `slot` is the position in the unrolled group (for mix).
__device__ __forceinline__ atom_t do_op(atom_t* p, atom_t v, u32 it, u32 slot, u32 cas_per8) {
#if ATOM_OP == 0
  return add_op(p, v);
#elif ATOM_OP == 1
#if ATOM_DTYPE == 3
  return static_cast<atom_t>(atomicAdd(reinterpret_cast<unsigned long long*>(p), 1ull));
#else
  return atomicAdd(p, static_cast<atom_t>(1));
#endif
#elif ATOM_OP == 2
  return atomicMax(p, static_cast<atom_t>(v + static_cast<atom_t>(it)));
#elif ATOM_OP == 3
  return atomicAnd(p, static_cast<atom_t>(~(static_cast<atom_t>(1) << (it & 31u))));
#elif ATOM_OP == 4
  return atomicOr(p, static_cast<atom_t>(static_cast<atom_t>(1) << (it & 31u)));
#elif ATOM_OP == 5
  return atomicExch(p, static_cast<atom_t>(v + static_cast<atom_t>(it)));
#elif ATOM_OP == 6
  return from_bits(cas_bits(p, to_bits(static_cast<atom_t>(it)), to_bits(static_cast<atom_t>(it + 1u))));
#elif ATOM_OP == 7
  return cas_add(p, v);
#elif ATOM_OP == 8
  if (slot < cas_per8)
    return from_bits(cas_bits(p, to_bits(static_cast<atom_t>(it)), to_bits(static_cast<atom_t>(it + 1u))));
  return add_op(p, v);
#else
#error "ATOM_OP must be 0..8"
#endif
}

// Start gate: CTAs of one SM are dispatched thousands of cycles apart, so without it the first
// CTA runs alone for a while and the SM measures a mix of loads. Each CTA adds its warps to
// gate[smid] and waits until the count reaches warps_per_sm (or ~2e6 cycles pass, so a CTA that
// could never meet the others is not stuck; the host then sees the warps did not run together).
__device__ __forceinline__ void start_gate(u32* gate, u32 warps_per_sm) {
  if (threadIdx.x == 0) {
    u32* mine = gate + smid();
    atomicAdd(mine, blockDim.x >> 5);
    const u64 give_up = clock64() + 2000000ull;
    while (*reinterpret_cast<volatile u32*>(mine) < warps_per_sm && clock64() < give_up) {
    }
  }
  __syncthreads();
}

// timing[2 * global_warp + {0, 1}] = clock64 at loop start / end (lane 0);
// smids[cta] = the SM the CTA ran on; gate[sm] = warps arrived (zeroed by the host);
// sink[global_thread] keeps results and the region alive.
template <int P, int K>
__device__ __forceinline__ void atom_bench(u64* timing, u32* smids, u32* gate, double* sink,
                                           int iters, int warp_stride, u32 val_bits, u32 mask,
                                           int think, int do_atomic, int cas_per8,
                                           u32 warps_per_sm) {
  extern __shared__ __align__(16) unsigned char atom_smem_raw[];
  atom_t* region = reinterpret_cast<atom_t*>(atom_smem_raw);
  const u32 lane = threadIdx.x & 31u;
  const u32 warp = threadIdx.x >> 5;
  const u32 warps = blockDim.x >> 5;
  const u32 elems = static_cast<u32>(warp_stride) * (warps - 1u) + 32u * kBankRow;
  for (u32 i = threadIdx.x; i < elems; i += blockDim.x) region[i] = static_cast<atom_t>(0);
  if (threadIdx.x == 0) smids[blockIdx.x] = smid();
  start_gate(gate, warps_per_sm);

  atom_t* base = region + warp * static_cast<u32>(warp_stride) + lane_element<P, K>(lane);
  const atom_t v = static_cast<atom_t>(val_bits);
  u32 x = threadIdx.x;
  atom_t acc = static_cast<atom_t>(0);
  const u64 t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; it += ATOM_UNROLL) {
#pragma unroll
    for (u32 j = 0; j < ATOM_UNROLL; ++j) {
#pragma unroll 1
      for (int t = 0; t < think; ++t) x = x * 3u + 1u;
      if (do_atomic) {
        const atom_t r = do_op(base + (x & mask), v, static_cast<u32>(it) + j, j,
                               static_cast<u32>(cas_per8));
#if ATOM_RET
        acc += r;
#else
        (void)r;
#endif
      }
    }
  }
  const u64 t1 = clock64();
  __syncthreads();
  const u32 gwarp = blockIdx.x * warps + warp;
  if (lane == 0) {
    timing[2 * gwarp] = t0;
    timing[2 * gwarp + 1] = t1;
  }
  const u32 gthread = blockIdx.x * blockDim.x + threadIdx.x;
  sink[gthread] = static_cast<double>(acc) + static_cast<double>(x & mask) +
                  (threadIdx.x < 32u ? static_cast<double>(region[threadIdx.x]) : 0.0);
}

}  // namespace atomk

#define ATOM_KERNEL(NAME, P, K)                                                               \
  extern "C" __global__ void __launch_bounds__(ATOM_BLOCK_MAX, 2)                            \
      NAME(u64* timing, u32* smids, u32* gate, double* sink, int iters, int warp_stride,     \
           u32 val_bits, u32 mask, int think, int do_atomic, int cas_per8,                    \
           u32 warps_per_sm) {                                                                \
    atomk::atom_bench<P, K>(timing, smids, gate, sink, iters, warp_stride, val_bits, mask,   \
                            think, do_atomic, cas_per8, warps_per_sm);                       \
  }

ATOM_KERNEL(atom_same, atomk::SAME, 1)
ATOM_KERNEL(atom_distinct_banks, atomk::DISTINCT_BANKS, 1)
ATOM_KERNEL(atom_one_bank, atomk::ONE_BANK, 1)
ATOM_KERNEL(atom_mix2, atomk::MIX, 2)
ATOM_KERNEL(atom_mix4, atomk::MIX, 4)
ATOM_KERNEL(atom_mix8, atomk::MIX, 8)
ATOM_KERNEL(atom_mix16, atomk::MIX, 16)
ATOM_KERNEL(atom_conflict2, atomk::CONFLICT, 2)
ATOM_KERNEL(atom_conflict4, atomk::CONFLICT, 4)
ATOM_KERNEL(atom_conflict8, atomk::CONFLICT, 8)
ATOM_KERNEL(atom_conflict16, atomk::CONFLICT, 16)

#if !ATOM_ONLY
// ---- histogram case study ----------------------------------------------------------------
// bin = key & (nbins - 1) (nbins a power of two <= 4096; <= 1024 for LANE), shared histogram(s)
// per CTA, flushed to global with atomics at the end. Keys are 32-bit (kernels hist_*) or 8-bit
// (hist_*_u8: a quarter of the bytes, so the keys can stream from L2 faster than the atomics
// retire); both read 16 bytes per thread per step (uint4), the tail one key at a time.
// INC and ADD differ in one token: INC adds the literal 1 (non-returning -> ATOMS.POPC.INC, which
// merges a warp's same-address increments: cost = most distinct words in one bank), ADD adds a
// runtime `one` (= 1) (-> ATOMS.ADD, which does not merge: cost = most lanes in one bank; 32 on
// one hot bin). PRIVATE gives each warp its own copy of the bins; AGGREGATE combines a warp's
// equal keys with __match_any_sync and adds the count from one lane per distinct bin.
// LANE is the model-guided variant: the cost of both INC and ADD is wavefronts per instruction,
// and wavefronts come from lanes meeting in a bank, so each lane gets its own copy of every bin
// in its own bank -- word bin * 32 + lane, bank = lane -- and a warp instruction is one wavefront
// whatever the keys (uniform, skewed, one bin). 32 copies per CTA (nbins * 128 B: 32 KB for 256
// bins), shared by the CTA's warps (lane l of every warp updates copy l, hence still atomics),
// summed at the end one bin per warp step (32 consecutive words, conflict-free, __reduce_add_sync).
// PF (hist_lane_pf) treats what the counters show of LANE: with the atomic unit not saturated no
// unit is busy at all (latency-bound: each warp waits for its 16-byte load, then issues its 16
// atomics), so the next uint4 is loaded before the current one is counted, keeping two loads per
// thread in flight. Only the loop's schedule changes; the atomics are LANE's.
namespace histk {

enum Mode { INC = 0, ADD = 1, PRIVATE = 2, AGGREGATE = 3, LANE = 4 };

// Byte distance between two bins: one word, or (LANE) 32 words, so bin b of lane l is word
// b * 32 + l and lane l always lands in bank l.
template <int MODE>
struct BinShift {
  static constexpr int value = MODE == LANE ? 7 : 2;
};

// ((word >> bit) & binmask) << SH as one shift and one mask (mask = binmask << SH): the same two
// instructions per key in every mode, so the kernels differ only in where the bins are.
template <int SH, int BIT>
__device__ __forceinline__ u32 bin_offset(u32 word, u32 mask) {
  return (BIT >= SH ? (word >> (BIT - SH)) : (word << (SH - BIT))) & mask;
}

// One key's atomic; `base` is the CTA's (or warp's) bins, `off` the bin's byte offset (with the
// lane's own bank already OR-ed in for LANE: offsets of bins are multiples of 128 there).
template <int MODE>
__device__ __forceinline__ void bump(unsigned char* base, u32 off, u32 one) {
  u32* p = reinterpret_cast<u32*>(base + off);
  if (MODE == INC || MODE == PRIVATE || MODE == LANE) {
    atomicAdd(p, 1u);
  } else if (MODE == ADD) {
    atomicAdd(p, one);
  } else {
    const u32 peers = __match_any_sync(__activemask(), off);
    if ((threadIdx.x & 31u) == static_cast<u32>(__ffs(peers) - 1)) atomicAdd(p, static_cast<u32>(__popc(peers)));
  }
}

// The bins of one uint4 of keys: 4 keys of 4 bytes, or 16 keys of 1 byte (little-endian order).
template <int MODE, int KB>
__device__ __forceinline__ void bump_vec(unsigned char* base, const uint4 k, u32 mask, u32 lanebits,
                                         u32 one) {
  constexpr int SH = BinShift<MODE>::value;
  if (KB == 4) {
    bump<MODE>(base, bin_offset<SH, 0>(k.x, mask) | lanebits, one);
    bump<MODE>(base, bin_offset<SH, 0>(k.y, mask) | lanebits, one);
    bump<MODE>(base, bin_offset<SH, 0>(k.z, mask) | lanebits, one);
    bump<MODE>(base, bin_offset<SH, 0>(k.w, mask) | lanebits, one);
  } else {
    const u32 words[4] = {k.x, k.y, k.z, k.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      bump<MODE>(base, bin_offset<SH, 0>(words[i], mask) | lanebits, one);
      bump<MODE>(base, bin_offset<SH, 8>(words[i], mask) | lanebits, one);
      bump<MODE>(base, bin_offset<SH, 16>(words[i], mask) | lanebits, one);
      bump<MODE>(base, bin_offset<SH, 24>(words[i], mask) | lanebits, one);
    }
  }
}

// AGG (hist_lane_fix): when all keys of a thread's uint4 share one bin, one atomicAdd of their
// count replaces the 4 or 16 increments. U = X * S and S is already at its floor (one wavefront
// per instruction in the LANE layout), so the only lever left is X, the atomic instructions: on
// one hot bin 16x fewer (8-bit keys); on mixed keys the check costs a few ALU instructions.
template <int MODE, int KB, bool AGG>
__device__ __forceinline__ void count_vec(unsigned char* base, const uint4 k, u32 mask, u32 lanebits,
                                          u32 one) {
  if (AGG) {
    constexpr int SH = BinShift<MODE>::value;
    const u32 binmask = mask >> SH;  // nbins - 1
    // the bin bits of every key in each word (bytes for 8-bit keys), compared with the first key's
    const u32 lanes = KB == 1 ? binmask * 0x01010101u : binmask;
    const u32 rep = KB == 1 ? (k.x & 0xffu) * 0x01010101u : k.x;
    if ((((k.x ^ rep) | (k.y ^ rep) | (k.z ^ rep) | (k.w ^ rep)) & lanes) == 0u) {
      atomicAdd(reinterpret_cast<u32*>(base + (bin_offset<SH, 0>(k.x, mask) | lanebits)), 16u / KB);
      return;
    }
  }
  bump_vec<MODE, KB>(base, k, mask, lanebits, one);
}

template <int KB>
__device__ __forceinline__ u32 load_key(const void* keys, long long i) {
  if (KB == 4) return static_cast<const u32*>(keys)[i];
  return static_cast<const unsigned char*>(keys)[i];
}

// keys: n keys of KB bytes (read as uint4 when aligned, which torch allocations are), counted
// `passes` times into out (1 for a plain histogram; more make one launch long enough that its
// fixed costs -- launch, zeroing, the flush to global -- do not hide the atomics).
template <int MODE, int KB, bool PF, bool AGG>
__device__ __forceinline__ void histogram(const void* __restrict__ keys, long long n, u32* out,
                                          int nbins, u32 one, int passes) {
  extern __shared__ __align__(16) u32 hist_smem[];
  constexpr int SH = BinShift<MODE>::value;
  const u32 lane = threadIdx.x & 31u;
  const u32 warp = threadIdx.x >> 5;
  const u32 warps = blockDim.x >> 5;
  const u32 copies = MODE == PRIVATE ? warps : (MODE == LANE ? 32u : 1u);
  const u32 total = copies * static_cast<u32>(nbins);
  for (u32 i = threadIdx.x; i < total; i += blockDim.x) hist_smem[i] = 0u;
  __syncthreads();
  unsigned char* base = reinterpret_cast<unsigned char*>(
      hist_smem + (MODE == PRIVATE ? warp * static_cast<u32>(nbins) : 0u));
  const u32 lanebits = MODE == LANE ? lane * 4u : 0u;
  // an 8-bit key has 8 bits: wider masks would pick up the next key's bits
  const u32 mask = ((static_cast<u32>(nbins) - 1u) & (KB == 1 ? 0xffu : 0xffffffffu)) << SH;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  constexpr int kKeysPerVec = 16 / KB;
  const long long nv = n / kKeysPerVec;
  const uint4* keys4 = static_cast<const uint4*>(keys);
  for (int pass = 0; pass < passes; ++pass) {
    // each pass a CTA takes its neighbour's slice of the previous pass, so repeated passes read
    // the keys from L2, not from the CTA's own L1
    const long long first = static_cast<long long>((blockIdx.x + static_cast<u32>(pass)) % gridDim.x) *
                            blockDim.x + threadIdx.x;
    if (PF) {
      if (first < nv) {
        uint4 cur = keys4[first];
        for (long long i = first + stride; i < nv; i += stride) {
          const uint4 next = keys4[i];  // in flight while `cur` is counted
          count_vec<MODE, KB, AGG>(base, cur, mask, lanebits, one);
          cur = next;
        }
        count_vec<MODE, KB, AGG>(base, cur, mask, lanebits, one);
      }
    } else {
      for (long long i = first; i < nv; i += stride) count_vec<MODE, KB, AGG>(base, keys4[i], mask, lanebits, one);
    }
    for (long long i = kKeysPerVec * nv + first; i < n; i += stride)
      bump<MODE>(base, bin_offset<SH, 0>(load_key<KB>(keys, i), mask) | lanebits, one);
  }
  __syncthreads();
  if (MODE == LANE) {
    for (u32 b = warp; b < static_cast<u32>(nbins); b += warps) {  // warp-uniform bound
      const u32 c = __reduce_add_sync(0xffffffffu, hist_smem[b * 32u + lane]);
      if (lane == 0u && c) atomicAdd(out + b, c);
    }
    return;
  }
  for (u32 b = threadIdx.x; b < static_cast<u32>(nbins); b += blockDim.x) {
    u32 c = 0;
    for (u32 w = 0; w < copies; ++w) c += hist_smem[w * static_cast<u32>(nbins) + b];
    if (c) atomicAdd(out + b, c);
  }
}

}  // namespace histk

#define HIST_KERNEL(NAME, MODE, KB, PF, AGG)                                                       \
  extern "C" __global__ void __launch_bounds__(1024) NAME(const void* __restrict__ keys,           \
                                                          long long n, u32* out, int nbins,        \
                                                          u32 one, int passes) {                   \
    histk::histogram<MODE, KB, PF, AGG>(keys, n, out, nbins, one, passes);                         \
  }

HIST_KERNEL(hist_inc, histk::INC, 4, false, false)
HIST_KERNEL(hist_add, histk::ADD, 4, false, false)
HIST_KERNEL(hist_private, histk::PRIVATE, 4, false, false)
HIST_KERNEL(hist_aggregate, histk::AGGREGATE, 4, false, false)
HIST_KERNEL(hist_lane, histk::LANE, 4, false, false)
HIST_KERNEL(hist_inc_u8, histk::INC, 1, false, false)
HIST_KERNEL(hist_add_u8, histk::ADD, 1, false, false)
HIST_KERNEL(hist_private_u8, histk::PRIVATE, 1, false, false)
HIST_KERNEL(hist_aggregate_u8, histk::AGGREGATE, 1, false, false)
HIST_KERNEL(hist_lane_u8, histk::LANE, 1, false, false)
HIST_KERNEL(hist_lane_pf, histk::LANE, 4, true, false)
HIST_KERNEL(hist_lane_pf_u8, histk::LANE, 1, true, false)
HIST_KERNEL(hist_lane_fix, histk::LANE, 4, true, true)
HIST_KERNEL(hist_lane_fix_u8, histk::LANE, 1, true, true)
#endif
