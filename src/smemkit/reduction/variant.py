"""A reduction-reuse kernel variant and what its kernel looks like from outside (pure Python).

:class:`Variant` names one of the kinds :mod:`.codegen` generates (cluster, staged, reread,
reread_l2, regs; triton is hand-written), its cluster size, threads and options; the functions
below give its kernel's name and launch parameters, its static and dynamic shared memory, and the
row slice each CTA of a cluster owns (:func:`slice_columns`, the one statement of that rule: the
generated source's ``_cap`` is derived from it, and a CPU test checks ``make_slice`` in
``smemkit/reduce_reuse.cuh`` against it). The cost model and the launcher import this module;
only :mod:`.codegen` writes source text.
"""

from __future__ import annotations

from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.reduction.spec import ReductionSpec

VARIANTS = ("cluster", "staged", "reread", "reread_l2", "regs", "triton")
# "triton": not generated here; smemkit's hand-written Triton kernel of a built-in workload
# (reduction.triton_kernels), a non-cluster candidate that dispatch and autotuning may pick.
# The looped re-read kernel's __launch_bounds__ minimum CTAs per SM: three (at most 42 registers),
# else two (64) where the local NVRTC spills at three; kernels.LOOPED_REREAD_BUILDS lists the builds
# kernel_source tries, one of them at four CTAs per SM (32 registers).
LOOPED_REREAD_BLOCKS = 3
LOOPED_REREAD_FALLBACK_BLOCKS = 2
# Threads per CTA when a Variant leaves them at 0 (``default_threads``).
DEFAULT_THREADS = {"reread_l2": 1024, "regs": 1024}
REGS_VECTORS = (1, 2, 4)  # vectors per thread and held input a ``regs`` kernel may be built for


def default_threads(kind: str) -> int:
    """Threads per CTA of a variant kind built with threads = 0."""
    return DEFAULT_THREADS.get(kind, 256)


@dataclass(frozen=True)
class Variant:
    """A kernel variant: ``kind`` in VARIANTS, cluster size P (1 unless cluster), threads."""

    kind: str
    P: int = 1
    threads: int = 0  # 0: the kind's default (DEFAULT_THREADS, else 256)
    control: bool = False  # work-free twin for the cost model's T_ctrl: no loads, no outputs
    prefetch: bool = False  # persistent, two row buffers: stage row r+1 while computing row r
    vregs: int = 0  # regs only: 16-byte vectors per thread held in registers for each input
    per_row: bool = False  # reread_l2 only: one CTA per row, not the persistent grid (kernels.grid_clusters)

    def __post_init__(self) -> None:
        if self.kind not in VARIANTS:
            raise InvalidArgumentError(f"variant kind {self.kind!r}; allowed: {', '.join(VARIANTS)}")
        if self.threads == 0:
            object.__setattr__(self, "threads", default_threads(self.kind))
        if (self.kind == "regs") != (self.vregs != 0) or self.vregs not in (0, *REGS_VECTORS):
            raise InvalidArgumentError(
                f"variant {self.kind!r} with vregs = {self.vregs}: the regs variant takes vregs in "
                f"{', '.join(map(str, REGS_VECTORS))}, the others 0")
        if (self.kind == "cluster") != (self.P > 1) or self.P not in (1, 2, 4, 8, 16):
            raise InvalidArgumentError(
                f"variant {self.kind!r} with P = {self.P}: cluster variants take P in 2, 4, 8, 16, "
                "the others P = 1")
        if self.threads % 32 or not 64 <= self.threads <= 1024:
            raise InvalidArgumentError(f"threads = {self.threads}: a multiple of 32 from 64 to 1024")
        if self.prefetch and not self.staged:
            raise InvalidArgumentError("prefetch applies to the staged and cluster variants only")
        if self.per_row and self.kind != "reread_l2":
            raise InvalidArgumentError("per_row (one CTA per row) applies to the reread_l2 variants only")

    @property
    def staged(self) -> bool:
        return self.kind in ("cluster", "staged")

    @property
    def looped_reread(self) -> bool:
        """The re-read kernel at 512 threads ("reread_t512"), built like torch.compile's looped
        reduction kernels: element loop not unrolled, registers capped (LOOPED_REREAD_BLOCKS), so
        3-4 CTAs of 512 threads share an SM; lars 4K on the H200: 84.2 us against 86.7 for the
        fastest other CUDA kernel (commit a38cea6). A slice of whole vectors takes
        two per trip with all their loads issued first (``generate(whole="paired")``): lars 4K
        0.996x torch.compile's time against 1.011x without (commit 6803617)."""
        return self.kind == "reread" and self.threads == 512

    @property
    def unroll(self) -> int:
        """``#pragma unroll`` of the element loop of the staged, cluster and re-read kernels
        (a hint only: their loop loads, branches and consumes one vector per input at a time)."""
        return 1 if self.looped_reread else 2

    @property
    def batch(self) -> int:
        """16-byte vectors per input each thread loads before it consumes any: reread_l2 loads
        ``batch`` vectors of every input of a pass into registers, then runs the per-vector body
        over them, so its capped grid still keeps enough loads in flight; 0 for the others."""
        return 4 if self.kind == "reread_l2" else 0

    @property
    def min_blocks(self) -> int:
        """__launch_bounds__ minimum CTAs per SM (64 registers per thread at 1024 and 512
        threads; the re-read kernel's 256 threads get 128, its looped 512-thread build 42, unless
        kernels.kernel_source picks another of LOOPED_REREAD_BUILDS)."""
        if self.kind in ("reread_l2", "regs"):
            return max(1, 1024 // self.threads)
        if self.looped_reread:
            return LOOPED_REREAD_BLOCKS
        return 2 if self.kind == "reread" else 1

    @property
    def label(self) -> str:
        if self.kind == "cluster":
            base = f"{self.kind}_p{self.P}"
        elif self.kind == "regs":
            base = f"regs_v{self.vregs}"
        else:
            base = self.kind
        if self.threads != default_threads(self.kind):
            base += f"_t{self.threads}"
        return (base + ("_rows" if self.per_row else "") + ("_pf" if self.prefetch else "")
                + ("_control" if self.control else ""))


def parse_variant_name(name: str) -> tuple[str, int, bool, bool]:
    """The inverse of ``Variant.label`` (of a non-control variant: "_control" is not parsed):
    (kind, threads or 0 for the kind's default, prefetch,
    per_row) of a variant name: what users pass as ``variant=`` ("reread_l2_t512", "staged_pf",
    "regs_t256") and what ``Variant.label`` writes ("reread_l2_t512_rows", "regs_v2_t512": a
    regs label's held vectors follow from N). Only parses; ``api.resolve_variant`` says which
    names are allowed."""
    prefetch = name.endswith("_pf")  # "staged_pf" / "cluster_pf": persistent, two row buffers
    name = name.removesuffix("_pf")
    per_row = name.endswith("_rows")  # "reread_l2_rows", "reread_l2_t512_rows": one CTA per row
    name = name.removesuffix("_rows")
    threads = 0
    base, _, suffix = name.rpartition("_t")  # "reread_l2_t512", "regs_t512": other thread counts
    if base and suffix.isdigit():
        name, threads = base, int(suffix)
    if name.startswith("regs_v"):
        name = "regs"
    return name, threads, prefetch, per_row


# reread_l2: at most this many 16-byte vectors (4 registers each) a thread loads across the inputs
# of one pass before consuming any: four per input for one or two inputs, three for three inputs
# (wvar_bwd, lars: four, 48 registers of buffers, spill 12-32 B at the 64-register bound).
BATCH_VECTORS = 9


def pass_batch(variant: Variant, inputs: int) -> int:
    """Vectors per input each thread of ``variant`` loads before consuming any, in a pass reading
    ``inputs`` inputs from global memory (0: no batching, the variant's plain loop)."""
    if not variant.batch:
        return 0
    return max(1, min(variant.batch, BATCH_VECTORS // max(1, inputs)))


def kernel_name(spec: ReductionSpec, variant: Variant) -> str:
    return f"rr_{spec.name}_{variant.label}"


def parameter_kinds(spec: ReductionSpec) -> tuple[str, ...]:
    """Launch parameter kinds in order: inputs, columns, row inputs, outputs, row outputs,
    scalars, M, N."""
    pointers = (len(spec.inputs) + len(spec.columns) + len(spec.row_inputs) + len(spec.outputs)
                + len(spec.row_outputs))
    return ("ptr",) * pointers + ("f32",) * len(spec.scalars) + ("i32", "i32")


def waits_per_input(spec: ReductionSpec, variant: Variant) -> bool:
    """Whether each staged input's bulk copy completes on its own mbarrier, so that each pass
    waits for its own inputs only: the staged kinds without prefetch, where the first pass reads
    only some staged inputs (``generate`` says where it was measured)."""
    return variant.staged and not variant.prefetch and bool(spec.staged_late)


def barrier_count(spec: ReductionSpec, variant: Variant) -> int:
    """mbarriers a staged kernel declares: row staging, column staging, two per stage (the
    exchange, by row parity), one for the prefetch's second row buffer, and one per staged input
    after the first where passes wait per input. None in the other kinds."""
    if not variant.staged:
        return 0
    count = 2 + 2 * len(spec.stages) + (1 if variant.prefetch else 0)
    return count + (len(spec.staged_inputs) - 1 if waits_per_input(spec, variant) else 0)


def static_smem_bytes(spec: ReductionSpec, variant: Variant) -> int:
    """Shared memory the kernel declares statically (barriers in the staged kinds, exchange
    slots, reduce scratch)."""
    q = [len(s.stats) for s in spec.stages]
    raw = 8 * barrier_count(spec, variant) + 8 * variant.P * sum(q) + 4 * (variant.threads // 32) * max(q)
    return (raw + 127) // 128 * 128 + 128  # ptxas pads each array and rounds the total to 128 B


VECTOR_COLUMNS = 4  # fp32 columns per 16-byte vector: slices are staged and loaded in whole vectors


def slice_columns(N: int, P: int, vector: int = VECTOR_COLUMNS) -> int:
    """Columns of an N-wide row each CTA of a P-CTA cluster owns (the last ones may own fewer, or
    none): ceil(N / P) rounded up to a multiple of ``vector`` columns, so that every CTA but the
    last starts its slice on a whole 16-byte vector."""
    per_cta = -(-N // P)  # ceil(N / P)
    return -(-per_cta // vector) * vector


def slice_columns_c(n: str = "N", p: str = "P", vector: int = VECTOR_COLUMNS) -> str:
    """:func:`slice_columns` as a C integer expression of ``n`` and ``p`` (positive ints), for a
    power-of-two ``vector``: the form the generated kernels compute it in."""
    if vector < 1 or vector & (vector - 1):
        raise InvalidArgumentError(f"vector = {vector}: the C form needs a power of two")
    return f"((({n} + {p} - 1) / {p} + {vector - 1}) & ~{vector - 1})"


def cap_vectors(N: int, P: int) -> int:
    """16-byte vectors of shared memory per staged input per CTA: the slice's vectors, plus one
    for a slice that starts inside a vector (make_slice's flat vectors [v0, v1))."""
    return slice_columns(N, P) // VECTOR_COLUMNS + 1


def cap_vectors_c() -> str:
    """:func:`cap_vectors` as the C expression the generated kernels declare ``_cap`` with."""
    shift = VECTOR_COLUMNS.bit_length() - 1
    return f"({slice_columns_c()} >> {shift}) + 1"


def dynamic_smem_bytes(spec: ReductionSpec, variant: Variant, N: int) -> int:
    if not variant.staged:
        return 0
    buffers = 2 if variant.prefetch else 1
    return (buffers * len(spec.staged_inputs) + len(spec.columns)) * cap_vectors(N, variant.P) * 16
