"""The microbenchmark and histogram kernels of ``kernels.cu``: variants, address patterns, launches.

Everything above :class:`AtomSweep` and :class:`Histogram` is plain Python (what each variant
compiles to, which 32-bit words each lane touches, where each warp's addresses start), so it is
unit-tested without a GPU, as are the CTA placement (:mod:`.placement`) and the reading of per-warp
clocks as per-SM throughput (:mod:`.throughput`). The two classes launch on the GPU through
:mod:`smemkit.runtime.launch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from smemkit.atomics.placement import (  # noqa: F401 (re-exported: K.X in tests and benchmarks)
    SMEM_PER_CTA_MAX,
    SMEM_PER_SM,
    SMEM_RESERVED_PER_CTA,
    WARPS_PER_CTA_MAX,
    WARPS_PER_SM_MAX,
    Layout,
    cta_plan,
    forcing_smem,
)
from smemkit.atomics.throughput import (  # noqa: F401 (re-exported: K.X in tests and benchmarks)
    SmThroughput,
    per_sm_throughput,
    start_spread,
    summarize_sms,
)
from smemkit.errors import InvalidArgumentError
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, package_source
from smemkit.tiling.banks import warp_access

SOURCE = "atomics/kernels.cu"

OPS = ("add", "inc", "max", "and", "or", "exch", "cas", "cas_add", "mix")
OP_CODE = {op: i for i, op in enumerate(OPS)}
DTYPES = ("int32", "uint32", "float32", "int64", "uint64", "float64")
DTYPE_CODE = {dt: i for i, dt in enumerate(DTYPES)}
DTYPE_BYTES = {"int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}

# Which (op, dtype) pairs exist as CUDA atomics (CUDA C++ Programming Guide, "Atomic Functions";
# checked by compiling every pair with NVRTC 13.0 for sm_90a): no float max/and/or, no exch on
# int64/float64. CAS is a bitwise operation, measured on the integer widths only (a float CAS is
# the same instruction on the same bits). cas_add is the software retry loop; mix interleaves
# add and CAS (the c dimension) on int32.
SUPPORTED: dict[str, tuple[str, ...]] = {
    "add": ("int32", "uint32", "float32", "int64", "uint64", "float64"),
    "inc": ("int32", "uint32", "int64", "uint64"),
    "max": ("int32", "uint32", "int64", "uint64"),
    "and": ("int32", "uint32", "int64", "uint64"),
    "or": ("int32", "uint32", "int64", "uint64"),
    "exch": ("int32", "uint32", "float32", "uint64"),
    "cas": ("int32", "uint32", "int64", "uint64"),
    "cas_add": ("int32", "float32", "float64"),
    "mix": ("int32",),
}


@dataclass(frozen=True)
class Pattern:
    """How the 32 lanes of one warp instruction pick addresses (``kernels.cu``, ``lane_element``)."""

    name: str
    kind: str  # same | distinct_banks | one_bank | mix | conflict
    k: int = 1

    @property
    def kernel(self) -> str:
        return f"atom_{self.name}"

    def lane_elements(self, elem_bytes: int) -> list[int]:
        """Element index (in units of the atomic's type) each lane touches."""
        row = 128 // elem_bytes  # elements between two addresses in the same bank
        lanes = range(32)
        if self.kind == "same":
            return [0] * 32
        if self.kind == "distinct_banks":
            return list(lanes)
        if self.kind == "one_bank":
            return [lane * row for lane in lanes]
        if self.kind == "mix":
            return [lane % self.k for lane in lanes]
        return [lane // self.k + row * (lane % self.k) for lane in lanes]

    def distinct_addresses(self) -> int:
        return len(set(self.lane_elements(4)))

    def footprint(self, elem_bytes: int) -> int:
        """Elements one warp's addresses span (max index + 1)."""
        return max(self.lane_elements(elem_bytes)) + 1


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern("same", "same"),
        Pattern("distinct_banks", "distinct_banks"),
        Pattern("one_bank", "one_bank"),
        *(Pattern(f"mix{k}", "mix", k) for k in (2, 4, 8, 16)),
        *(Pattern(f"conflict{k}", "conflict", k) for k in (2, 4, 8, 16)),
    )
}
# The patterns the service table is built from; the mixes and the intermediate conflicts are
# held out for validation (benchmarks/atomics.py).
TABLE_PATTERNS = ("same", "distinct_banks", "one_bank", "mix4", "conflict4")
HELD_OUT_PATTERNS = ("mix2", "mix8", "mix16", "conflict2", "conflict8", "conflict16")


def nominal_wavefronts(pattern: Pattern, dtype: str) -> int:
    """Data-pipe passes one warp instruction needs by the bank rule (SPEC §4).

    Bank = (byte address / 4) mod 32; lanes on the same 32-bit word share a pass; a pass serves
    one word per bank, so the count is the largest number of distinct words in one bank. A 64-bit
    element covers two adjacent words. Whether the atomic unit really needs this many passes
    (and what a same-address atomic costs, which the bank rule calls one pass) is what the H200
    sweep measures; this is the a-priori figure the table records beside the measured one.
    The rule is smemkit.tiling's for a store (64-bit accesses in two half-warp phases; the
    load-only pair merge is not assumed for a read-modify-write).
    """
    size = DTYPE_BYTES[dtype]
    addresses = [elem * size for elem in pattern.lane_elements(size)]
    return warp_access(addresses, size * 8, "store").wavefronts


@dataclass(frozen=True)
class Variant:
    """One compiled microbenchmark module: operation, element type, returning or not."""

    op: str
    dtype: str
    returning: bool

    def __post_init__(self) -> None:
        if self.op not in SUPPORTED:
            raise InvalidArgumentError(f"unknown atomic op {self.op!r}; allowed: {', '.join(OPS)}")
        if self.dtype not in SUPPORTED[self.op]:
            raise InvalidArgumentError(
                f"atomic {self.op} does not exist for {self.dtype}; it does for "
                f"{', '.join(SUPPORTED[self.op])}"
            )

    @property
    def name(self) -> str:
        return f"{self.op}.{self.dtype}.{'ret' if self.returning else 'noret'}"

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    def defines(self) -> dict[str, int]:
        return {"ATOM_OP": OP_CODE[self.op], "ATOM_DTYPE": DTYPE_CODE[self.dtype],
                "ATOM_RET": int(self.returning), "ATOM_ONLY": 1}

    def compile(self, arch: str = DEFAULT_ARCH) -> CompiledModule:
        return compile_module(source(), f"atomics/{self.name}", arch=arch, defines=self.defines())

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``add.int32.noret`` -> Variant('add', 'int32', False)."""
        parts = text.split(".")
        if len(parts) != 3 or parts[2] not in ("ret", "noret"):
            raise InvalidArgumentError(f"{text!r}: expected OP.DTYPE.ret|noret, e.g. add.int32.noret")
        return cls(parts[0], parts[1], parts[2] == "ret")


def all_variants() -> list[Variant]:
    return [Variant(op, dt, ret) for op in OPS for dt in SUPPORTED[op] for ret in (False, True)]


@cache
def source() -> str:
    return package_source(SOURCE)


def compile_histograms(arch: str = DEFAULT_ARCH) -> CompiledModule:
    """The module with the histogram kernels (no defines: the file's defaults)."""
    return compile_module(source(), "atomics/histograms", arch=arch)


# ---- where each warp's addresses start ------------------------------------------------------


def layout(pattern: Pattern, dtype: str, ctas_per_sm: int, warps_per_cta: int, scope: str) -> Layout:
    """Warp placement for ``scope`` = 'private' (each warp its own addresses) or 'shared'.

    Private regions start on a bank boundary (so every warp sees the same bank picture) when they
    fit; otherwise (one_bank with 4 CTAs per SM) each warp is shifted by one element, which keeps
    each warp's own pattern but moves it to another bank ('bank_shifted').
    """
    size = DTYPE_BYTES[dtype]
    row = 128 // size
    tail = 32 * row  # kernels.cu zeroes stride * (warps - 1) + 32 * row elements
    if scope == "shared":
        stride, kind = 0, "shared"
    elif scope == "private":
        stride = -(-pattern.footprint(size) // row) * row
        kind = "private"
        need = (stride * (warps_per_cta - 1) + tail) * size
        if ctas_per_sm * (need + SMEM_RESERVED_PER_CTA) > SMEM_PER_SM:
            stride, kind = 1, "bank_shifted"
    else:
        raise InvalidArgumentError(f"scope must be 'private' or 'shared', got {scope!r}")
    need = (stride * (warps_per_cta - 1) + tail) * size
    if ctas_per_sm == 1:
        return Layout(stride, forcing_smem(1, need), kind)
    return Layout(stride, -(-need // 128) * 128, kind)  # the warp limit places two CTAs


# ---- launches (GPU) -------------------------------------------------------------------------

ATOM_PARAMS = ("ptr", "ptr", "ptr", "ptr", "i32", "i32", "u32", "u32", "i32", "i32", "i32", "u32")
HIST_PARAMS = ("ptr", "i64", "ptr", "i32", "u32", "i32")  # keys, n, out, nbins, one, passes
# The case-study pair (one token apart), two other baselines (per-warp private copies, warp
# aggregation), and the model-guided variants:
# hist_lane (bins spread so every atomic is one wavefront), hist_lane_pf (the same, with the next
# keys loaded while the current ones are counted) and hist_lane_fix (hist_lane_pf, plus one add of
# the count when a thread's keys share a bin).
HIST_KERNELS = ("hist_inc", "hist_add", "hist_private", "hist_aggregate", "hist_lane", "hist_lane_pf",
                "hist_lane_fix")
LANE_KERNELS = ("hist_lane", "hist_lane_pf", "hist_lane_fix")  # 32 lane-indexed copies of the bins
HIST_KEY_BYTES = (4, 1)  # 32-bit keys (hist_*) and 8-bit keys (hist_*_u8)
HIST_LANE_MAX_BINS = 1024  # LANE_KERNELS keep 32 copies: nbins * 128 B of shared memory per CTA


def hist_entry(kernel: str, key_bytes: int) -> str:
    """The kernel function for ``kernel`` (a HIST_KERNELS name) on keys of ``key_bytes`` bytes."""
    if kernel not in HIST_KERNELS:
        raise InvalidArgumentError(f"unknown histogram kernel {kernel!r}; allowed: {', '.join(HIST_KERNELS)}")
    if key_bytes not in HIST_KEY_BYTES:
        raise InvalidArgumentError(f"histogram keys must be 4 or 1 bytes wide, got {key_bytes}")
    return kernel if key_bytes == 4 else f"{kernel}_u8"


HIST_ENTRIES = tuple(hist_entry(k, b) for b in HIST_KEY_BYTES for k in HIST_KERNELS)


@dataclass
class _Launch:
    """One planned sweep launch: kernel, placement and device buffers."""

    kern: object
    ctas: int
    wpc: int
    lay: Layout
    grid: int
    timing: object
    smids: object
    gate: object
    sink: object

    def start(self, iters: int, val: int, think: int, do_atomic: bool, cas_per8: int, n_warps: int) -> None:
        self.gate.zero_()  # the start gate counts arrivals per SM from zero
        self.kern.launch(self.grid, self.wpc * 32, self.timing, self.smids, self.gate, self.sink, iters,
                         self.lay.warp_stride, val, 0, think, int(do_atomic), cas_per8, n_warps,
                         smem=self.lay.smem_bytes)


class AtomSweep:
    """Launches one variant's pattern kernels on every SM of the current GPU and reads S(n)."""

    def __init__(self, variant: Variant, sm_count: int) -> None:
        from smemkit.runtime.launch import KernelModule

        self.variant = variant
        self.sm_count = sm_count
        self.gate_slots = 1024  # indexed by %smid, which may exceed the SM count
        self.module = KernelModule(source(), f"atomics/{variant.name}", variant.defines())
        self._kernels: dict[str, object] = {}
        self._carveout_set: set[str] = set()
        self._fits: set[tuple[str, int, int]] = set()

    def kernel(self, pattern: Pattern):
        if pattern.name not in self._kernels:
            self._kernels[pattern.name] = self.module.function(pattern.kernel, ATOM_PARAMS)
        return self._kernels[pattern.name]

    def _prefer_max_smem(self, pattern: Pattern) -> None:
        """Ask for the largest shared-memory carveout, so the planned CTAs fit one SM together."""
        from cuda.bindings import driver

        from smemkit.runtime.device import require_gpu

        dev = require_gpu()
        handle = self.module._load(pattern.kernel, dev)
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        (err,) = driver.cuKernelSetAttribute(attr, 100, handle.handle, driver.CUdevice(dev))
        if int(err) != 0:
            raise InvalidArgumentError(f"could not set the shared-memory carveout of {pattern.kernel}: {err}")

    def run(self, pattern: Pattern, n_warps: int, *, iters: int = 1 << 16, scope: str = "private",
            think: int = 0, do_atomic: bool = True, cas_per8: int = 0, val: int = 1,
            target_cycles: float | None = 4e6) -> dict:
        """Per-SM throughput with ``n_warps`` warps per SM issuing this atomic.

        With ``target_cycles``, a 64-iteration probe first estimates the rate and the measured
        launch runs min(iters, enough iterations for about target_cycles per SM), so contended
        CAS loops do not run for seconds; ``iters`` is then the most it runs.
        """
        if iters % 8:
            raise InvalidArgumentError(f"iters must be a multiple of 8 (the unroll), got {iters}")
        if target_cycles:
            probe = self._launch(pattern, n_warps, 64, scope, think, do_atomic, cas_per8, val,
                                 max_spread=1.0)  # a rate estimate: any start is fine
            rate = probe["per_cycle_median"]  # warp instructions per SM cycle
            want = int(target_cycles * rate / n_warps) // 8 * 8
            iters = max(64, min(iters, want))
        return self._launch(pattern, n_warps, iters, scope, think, do_atomic, cas_per8, val)

    def _setup(self, pattern: Pattern, n_warps: int, scope: str) -> _Launch:
        """Plan, buffers and kernel for ``n_warps`` warps per SM; checks that the CTAs fit."""
        import torch

        ctas, wpc = cta_plan(n_warps)
        lay = layout(pattern, self.variant.dtype, ctas, wpc, scope)
        grid = self.sm_count * ctas
        kern = self.kernel(pattern)
        if pattern.name not in self._carveout_set:
            self._prefer_max_smem(pattern)
            self._carveout_set.add(pattern.name)
        placement = (pattern.name, wpc, lay.smem_bytes)
        if placement not in self._fits:  # one driver query per placement, not per launch
            fit = kern.max_active_ctas(wpc * 32, lay.smem_bytes) // self.sm_count
            if fit < ctas:
                raise InvalidArgumentError(
                    f"{pattern.kernel}: {ctas} CTAs of {wpc * 32} threads and {lay.smem_bytes} B per SM "
                    f"were planned but only {fit} fit at once")
            self._fits.add(placement)
        return _Launch(kern, ctas, wpc, lay, grid,
                       timing=torch.zeros(grid * wpc * 2, dtype=torch.int64, device="cuda"),
                       smids=torch.full((grid,), -1, dtype=torch.int32, device="cuda"),
                       gate=torch.zeros(self.gate_slots, dtype=torch.int32, device="cuda"),
                       sink=torch.empty(grid * wpc * 32, dtype=torch.float64, device="cuda"))

    def _launch(self, pattern: Pattern, n_warps: int, iters: int, scope: str, think: int,
                do_atomic: bool, cas_per8: int, val: int, max_spread: float = 0.05) -> dict:
        import torch

        p = self._setup(pattern, n_warps, scope)
        p.start(iters, val, think, do_atomic, cas_per8, n_warps)
        torch.cuda.synchronize()
        rows = per_sm_throughput(p.timing.cpu().numpy(), p.smids.cpu().numpy(), p.wpc, iters)
        summary = summarize_sms(rows, n_warps, max_spread)
        return {"ctas_per_sm": p.ctas, "warps_per_cta": p.wpc, "layout": p.lay.kind,
                "warp_stride": p.lay.warp_stride, "smem_bytes": p.lay.smem_bytes, "iters": iters,
                **summary}

    def launcher(self, pattern: Pattern, n_warps: int, *, iters: int = 2048, scope: str = "private"):
        """A no-argument callable launching the same configuration (for CUDA-event timing)."""
        p = self._setup(pattern, n_warps, scope)
        return lambda: p.start(iters, 1, 0, True, 0, n_warps)


class Histogram:
    """The histogram kernels on the current GPU (32-bit and 8-bit keys)."""

    def __init__(self) -> None:
        from smemkit.runtime.launch import KernelModule

        self.module = KernelModule(source(), "atomics/histograms")
        self.kernels = {name: self.module.function(name, HIST_PARAMS) for name in HIST_ENTRIES}

    @staticmethod
    def smem_bytes(name: str, nbins: int, block: int) -> int:
        base = name.removesuffix("_u8")
        copies = block // 32 if base == "hist_private" else 32 if base in LANE_KERNELS else 1
        return copies * nbins * 4

    def launcher(self, name: str, keys, out, nbins: int, *, block: int = 512, ctas_per_sm: int = 2,
                 sm_count: int = 132, passes: int = 1):
        """A no-argument launch of ``name`` (a HIST_KERNELS name) over ``keys``; the key width
        (int32/uint32 or uint8) picks the kernel function. ``passes`` > 1 counts the keys that
        many times in one launch (out = passes x the histogram)."""
        if nbins & (nbins - 1) or not 1 <= nbins <= 4096:
            raise InvalidArgumentError(f"nbins must be a power of two in 1..4096, got {nbins}")
        if passes < 1:
            raise InvalidArgumentError(f"passes must be >= 1, got {passes}")
        base = name.removesuffix("_u8")
        if base in LANE_KERNELS and nbins > HIST_LANE_MAX_BINS:
            raise InvalidArgumentError(f"{base} keeps 32 copies of the bins: nbins <= "
                                       f"{HIST_LANE_MAX_BINS}, got {nbins}")
        if keys.data_ptr() % 16:
            raise InvalidArgumentError("histogram keys must start on a 16-byte boundary (read as uint4)")
        kern = self.kernels[hist_entry(base, keys.element_size())]
        grid = sm_count * ctas_per_sm
        smem = self.smem_bytes(base, nbins, block)

        def launch() -> None:
            kern.launch(grid, block, keys, keys.numel(), out, nbins, 1, passes, smem=smem)

        return launch
