"""CUDA source for every variant of a reduction-reuse spec.

One template, five variants (paper §III-B/C, plus two for measurement):
- ``cluster`` (P > 1): the row is split over a cluster of P CTAs; each stages its slice in shared
  memory with the bulk-copy engine, reduces it, and pushes its partial statistics one-way into
  every peer's shared memory (``st.async`` completing on the peer's mbarrier, one barrier per
  stage, no cluster-wide sync per stage); every CTA combines the P partials in rank order, so
  all CTAs hold bitwise the same statistics and results are deterministic.
- ``staged`` (P = 1): one CTA per row, the whole row staged in shared memory (when it fits).
- ``reread``: one CTA per row, each pass re-reads global memory (no staging).
- ``reread_l2``: the re-read kernel on a persistent grid of 1024-thread CTAs
  whose size the launcher caps so that the rows in flight times the bytes each re-reads stay
  within a budget of the L2 (``kernels.reread_l2_grid``); each thread issues ``batch`` (4)
  independent 16-byte loads per input before consuming any, so fewer CTAs still keep enough
  loads in flight. ``per_row`` (``reread_l2_rows``): the same kernel with one CTA per row, no cap.
- ``regs``: one 1024-thread CTA per row, every input a pass reads loaded into registers before
  the first pass (``vregs`` 16-byte vectors per thread and input, fully unrolled) and held to the
  last: every element read from global memory once, no shared memory.

The staged and cluster variants bulk-prefetch into the L2, when a row starts, the inputs read by
one pass only, when that pass is not the first (lars' v, read by the output pass), so that pass
does not wait on HBM one vector at a time.

The generated text names every value after the spec and marks each stage with a comment.
"""

from __future__ import annotations

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import expr
from smemkit.reduction.spec import ReductionSpec
from smemkit.reduction.variant import (  # noqa: F401 (re-exported: codegen.X for the variant's names)
    BATCH_VECTORS,
    DEFAULT_THREADS,
    LOOPED_REREAD_BLOCKS,
    LOOPED_REREAD_FALLBACK_BLOCKS,
    REGS_VECTORS,
    VARIANTS,
    Variant,
    barrier_count,
    cap_vectors,
    cap_vectors_c,
    default_threads,
    dynamic_smem_bytes,
    kernel_name,
    parameter_kinds,
    parse_variant_name,
    pass_batch,
    static_smem_bytes,
    waits_per_input,
)

OP_STRUCT = {"sum": "OpSum", "max": "OpMax", "min": "OpMin"}
# The looped re-read kernel's path for a slice of whole 16-byte vectors (``generate(whole=...)``):
# "paired", two vectors per trip with all their loads first (lars: 4 and 6 loads in flight per
# thread where the general loop has 2 and 3; torch.compile's lars-4K kernel, in the config inferred
# to have run, has 2|2|6, smemkit's Triton kernel 4|3|3; commit 9b181c2);
# "unrolled", unguarded loads with the loop unrolled twice (pearson_bwd 4K 0.985x torch.compile,
# where "paired" spills at three CTAs per SM; commit 6803617); "none", the general
# loop only.
WHOLE_PATHS = ("paired", "unrolled", "none")


def _rename(spec: ReductionSpec) -> dict[str, str]:
    return {"N": "Nf"}


def generate(spec: ReductionSpec, variant: Variant, min_blocks: int | None = None,
             whole: str = "paired") -> str:
    """The complete CUDA source of one variant (``min_blocks`` overrides the variant's
    __launch_bounds__ minimum CTAs per SM; ``whole`` is the looped re-read kernel's path for a
    slice of whole vectors, one of WHOLE_PATHS: ``kernels.kernel_source`` picks the build)."""
    if whole not in WHOLE_PATHS:
        raise InvalidArgumentError(f"whole={whole!r}; allowed: {', '.join(WHOLE_PATHS)}")
    if spec.kernel_support is not None:
        raise InvalidArgumentError(f"workload spec '{spec.name}' has no kernel: it is {spec.kernel_support}")
    if variant.kind == "triton":
        raise InvalidArgumentError("the triton variant is hand-written Triton (reduction.triton_kernels), "
                                   "not generated CUDA")
    P, T = variant.P, variant.threads
    staged = spec.staged_inputs if variant.staged else []
    # regs: every input some pass reads loaded into registers up front, lars' v with w and g (on the
    # H200, holding v measured 3.6 % faster than L2-prefetching it for the output pass for
    # regs_v4_t256 at 4K and 0.6 % for regs_v4_t512 at 8K, 0.7 % slower for regs_v2_t512 at 4K;
    # commit b13c30d)
    held = list(spec.read_inputs) if variant.kind == "regs" else []
    # The last pass that reads each input: reread_l2 streams an input on its last read (the
    # original re-read kernel keeps its behaviour: streaming loads in the output pass only).
    final_pass = {n: max(i for i, p in enumerate(spec.pass_inputs) if n in p) for n in spec.read_inputs}
    # inputs read from global memory once, by a pass after the first (lars' v): the staged
    # kernels prefetch them into the L2 with their staging, so that pass finds them there (the
    # re-read kernels leave the L2 to the inputs they read again: prefetching there measured
    # 4-12 % slower at 16K-32K; commit 91c4355)
    prefetched = [n for n, last in final_pass.items() if last > 0 and n not in spec.staged_inputs
                  ] if variant.staged else []
    exact_last_use = variant.kind == "reread_l2"
    pass_counter = [0]
    staged_cols = list(spec.columns) if variant.staged else []
    rename = _rename(spec)
    lets = dict(spec.lets)
    q = [len(s.stats) for s in spec.stages]
    slot_offsets = [P * sum(q[:i]) for i in range(len(q))]
    out: list[str] = []
    w = out.append

    w(f"// Generated by smemkit.reduction.codegen: workload '{spec.name}', variant {variant.label}.")
    if spec.description:
        w(f"// {spec.description}")
    for i, stage in enumerate(spec.stages, start=1):
        stats = "; ".join(f"{s.name} = {s.op}({s.expr})" for s in stage.stats)
        w(f"// stage {i}: {stats}" + (f"; then {', '.join(n for n, _ in stage.derive)}"
                                      if stage.derive else ""))
    w("// outputs: " + "; ".join(f"{o.name} = {o.expr}" for o in spec.outputs))
    w("#include <smemkit/reduce_reuse.cuh>")
    w("using namespace smemkit;")
    w(f"#define P {P}\n#define THREADS {T}\n#define NWARPS (THREADS / 32)\n#define QMAX {max(q)}")
    if held:
        w(f"#define VREGS {variant.vregs}  // vectors per thread held in registers for each of "
          f"{', '.join(held)}")
    params = [f"const float* __restrict__ p_{n}" for n in spec.inputs]
    params += [f"const float* __restrict__ p_{n}" for n in spec.columns]
    params += [f"const float* __restrict__ p_{n}" for n in spec.row_inputs]
    params += [("signed char*" if o.dtype == "int8" else "float*") + f" __restrict__ p_{o.name}"
               for o in spec.outputs]
    params += [f"float* __restrict__ p_{n}" for n, _ in spec.row_outputs]
    params += [f"const float {n}" for n in spec.scalar_names] + ["const int M", "const int N"]
    w(f'extern "C" __global__ void __launch_bounds__(THREADS, {min_blocks or variant.min_blocks}) '
      f'{kernel_name(spec, variant)}(')
    w("    " + ",\n    ".join(params) + ") {")
    nq = sum(q)
    ns = len(staged)
    second_buffer_bar = 2 + 2 * len(q)  # the first barrier after the fixed ones (barrier_count)
    # One staging barrier per staged input when the first pass reads only some of them, so that
    # each pass waits for its own inputs: layernorm_bwd's stage 1 (x) and its exchange run while dy
    # still arrives. Measured on the H200 at the best P (commit dc4f682): layernorm_bwd 3.76 TB/s at
    # 64K against 3.56 with one barrier, wvar_bwd 4.33 against 4.15, softmax_bwd 4.24 against 4.18;
    # the staged kernels +13-17 % at 16K. Where the first pass reads every staged input, one barrier.
    split_wait = waits_per_input(spec, variant)
    n_bars = barrier_count(spec, variant)
    # staged input i > 0 waits on barrier second_buffer_bar + i - 1 (no prefetch buffer here)
    row_bar = {n: second_buffer_bar + i - 1 if i and split_wait else 0 for i, n in enumerate(staged)}
    waited: set[str] = set()  # staged inputs the row's passes so far have waited for
    w("  extern __shared__ __align__(128) float4 stage_buf[];")
    if variant.staged:  # bulk copies and exchanges complete on mbarriers; the other kinds use none
        w(f"  __shared__ __align__(8) u64 bars[{n_bars}];  // [0] row staging, [1] column staging, "
          "[2 + 2l + parity] exchange of stage l" + (f", [{second_buffer_bar}] second row buffer"
                                                      if variant.prefetch else "")
          + "".join(f", [{row_bar[n]}] staging of {n}" for n in staged if row_bar[n]))
    w(f"  __shared__ float slots[{2 * P * nq}];  // [row parity][stage][rank][q] partials")
    w("  __shared__ float red[NWARPS * QMAX];")
    w("  const int _rank = P > 1 ? static_cast<int>(cluster_ctarank()) : 0;")
    w("  const float Nf = static_cast<float>(N);")
    w("  const int _lane = threadIdx.x & 31, _warp = threadIdx.x >> 5;")
    if any(n not in staged and n not in held for n in spec.read_inputs):  # some pass loads from global
        w("  const u64 _l2_keep = l2_keep_policy();  // data read from global by several passes")
    row_buffers = 2 if variant.prefetch else 1
    if staged or staged_cols:
        w(f"  const int _cap = {cap_vectors_c()};")
        for i, n in enumerate(staged_cols):
            w(f"  float4* const s_{n} = stage_buf + {row_buffers * ns + i} * _cap;  // column slice")
    if variant.staged:
        w("  if (threadIdx.x == 0) {")
        w(f"    for (int _b = 0; _b < {n_bars}; ++_b) mbarrier_init(smem_u32(&bars[_b]), 1);")
        w("    fence_mbarrier_init_cluster();")
        w("    fence_proxy_async_shared();")
        w("  }")
        w("  __syncthreads();")
    if P > 1:
        w("  cluster_arrive_relaxed();  // peers may push into our slots once everyone has arrived")
    if staged_cols and not variant.control:
        w(f"  // the column slice of {', '.join(staged_cols)} is the same for every row: stage it once")
        w("  {")
        w("    const Slice _s0 = make_slice(0, N, _rank, P);")
        w("    const int _ncv = (_s0.hi - _s0.lo) >> 2;")
        w("    if (threadIdx.x == 0) {")
        w(f"      mbarrier_arrive_expect_tx(smem_u32(&bars[1]), {len(staged_cols)}u * _ncv * 16u);")
        w("      if (_ncv > 0) {")
        for n in staged_cols:
            w(f"        cp_async_bulk_g2s(smem_u32(s_{n}), p_{n} + _s0.lo, _ncv * 16u, smem_u32(&bars[1]));")
        w("      }")
        w("    }")
        w("    for (int _c = _s0.lo + 4 * _ncv + threadIdx.x; _c < _s0.hi; _c += THREADS) {")
        for n in staged_cols:
            w(f"      reinterpret_cast<float*>(s_{n})[_c - _s0.lo] = p_{n}[_c];")
        w("    }")
        w("    __syncthreads();")
        w("    mbarrier_wait_parity(smem_u32(&bars[1]), 0);")
        w("  }")
    def stage_row(row: str, buf: str, indent: str = "  ") -> None:
        """Bulk-copy (and partial-end load) row ``row``'s slice of the staged inputs into
        row buffer ``buf``, completing on that buffer's barrier."""
        w(f"{indent}{{")
        w(f"{indent}  const Slice _sn = make_slice({row}, N, _rank, P);")
        w(f"{indent}  float4* const _dst = stage_buf + ({buf}) * {ns} * _cap;")
        if not split_wait:
            bar = f"bars[({buf}) ? {second_buffer_bar} : 0]" if variant.prefetch else "bars[0]"
            w(f"{indent}  const u32 _bar = smem_u32(&{bar});")
        w(f"{indent}  if (threadIdx.x == 0) {{")
        w(f"{indent}    fence_proxy_async_shared();")
        if split_wait:  # the inputs the first pass reads first, the late ones after them
            for i, n in sorted(enumerate(staged), key=lambda item: item[1] in spec.staged_late):
                bar_n = f"smem_u32(&bars[{row_bar[n]}])"
                w(f"{indent}    mbarrier_arrive_expect_tx({bar_n}, _sn.nfull * 16u);  // {n}")
                w(f"{indent}    stage_full_vectors(_dst + {i} * _cap, p_{n}, _sn, {bar_n});")
        else:
            w(f"{indent}    mbarrier_arrive_expect_tx(_bar, {ns}u * _sn.nfull * 16u);")
            for i, n in enumerate(staged):
                w(f"{indent}    stage_full_vectors(_dst + {i} * _cap, p_{n}, _sn, _bar);")
        for n in prefetched:
            w(f"{indent}    prefetch_full_vectors_l2(p_{n}, _sn);  // read once, from the L2")
        w(f"{indent}  }}")
        for i, n in enumerate(staged):
            w(f"{indent}  stage_partial_vectors(_dst + {i} * _cap, p_{n}, _sn);")
        w(f"{indent}}}")

    stages_rows = staged and not variant.control
    if stages_rows and variant.prefetch:
        w("  // prefetch: the first row is staged now; each iteration stages the next row into the")
        w("  // other buffer while it computes its own")
        w("  if (blockIdx.x / P < M) {")
        stage_row("blockIdx.x / P", "0", "    ")
        w("  }")
    w("  // persistent: cluster c handles rows c, c + clusters, ... (one row per cluster when the")
    w("  // grid has M clusters)")
    w("  for (int _it = 0, _row = blockIdx.x / P; _row < M; ++_it, _row += gridDim.x / P) {")
    w("  const Slice _s = make_slice(_row, N, _rank, P);")
    w("  float* const _slots = slots + (_it & 1) * " + str(P * nq) + ";")
    buf = "(_it & 1)" if variant.prefetch else "0"
    for i, n in enumerate(staged):
        w(f"  float4* const s_{n} = stage_buf + ({buf} * {ns} + {i}) * _cap;")
    if prefetched and not staged and not variant.control:
        w(f"  // {', '.join(prefetched)}: read once, by a later pass; prefetched into the L2 now")
        for n in prefetched:
            w(f"  prefetch_full_vectors_l2(p_{n}, _s);  // thread 0 issues it")
    for n in spec.row_inputs:  # (a control kernel has null pointers: it reads nothing)
        w(f"  const float {n} = " + ("0.0f;" if variant.control else f"p_{n}[_row];"))
    if held and not variant.control:
        w(f"  // hold the row of {', '.join(held)} in registers: read from global memory once")
        for n in held:
            w(f"  float4 r_{n}[VREGS];")
        w("#pragma unroll")
        w("  for (int _j = 0; _j < VREGS; ++_j) {")
        w("    const int _i = threadIdx.x + _j * THREADS;")
        for n in held:
            w(f"    r_{n}[_j] = _i < _s.nvec ? load_vector_once(p_{n}, _s.v0 + _i, _s) "
              ": make_float4(0.0f, 0.0f, 0.0f, 0.0f);")
        w("  }")
    if stages_rows:
        w("  __syncthreads();  // every thread is done with the previous row's staged data")
        if variant.prefetch:
            w("  if (_row + gridDim.x / P < M) {  // the next row, into the buffer just freed")
            stage_row("_row + gridDim.x / P", "(_it & 1) ^ 1", "    ")
            w("  }")
            w(f"  mbarrier_wait_parity(smem_u32(&bars[(_it & 1) ? {second_buffer_bar} : 0]), "
              "(_it >> 1) & 1);")
        else:
            w(f"  // stage the row slice of {', '.join(staged)} in shared memory (bulk copy + partial ends)")
            stage_row("_row", "0")
            w("  __syncthreads();")
            if not split_wait:  # else each pass waits for its own inputs
                w("  mbarrier_wait_parity(smem_u32(&bars[0]), _it & 1);")

    row_names = {*spec.row_inputs, *spec.scalar_names, "N"}
    hoisted: dict[str, str] = {}
    rcp_counter = [0]

    def hoist(text: str) -> str:
        """Per-row divisions become multiplies by reciprocals declared before the loop."""
        before = set(hoisted)
        rewritten = expr.hoist_row_divisions(text, row_names, rcp_counter, hoisted)
        for name in [n for n in hoisted if n not in before]:  # insertion order: reproducible source
            w(f"  const float {name} = 1.0f / {expr.to_cuda(hoisted[name], rename)};")
        return rewritten

    def element_loop(texts: list[str], body, header: list[str] | None = None,
                     footer: list[str] | None = None, last_pass: bool = False) -> None:
        """Loop over the slice's vectors; ``body(masked)`` gives the per-element lines.

        Vectors the slice owns entirely take an unmasked path (with 16-byte column loads when
        the row start is 16-byte aligned); partial vectors take a masked one.
        """
        this_pass = pass_counter[0]
        pass_counter[0] += 1
        if variant.control:  # the control kernel keeps launch, barriers and exchanges only
            return
        used = spec.inputs_used(texts)
        if split_wait:
            for n in used:
                if n in staged and n not in waited:
                    waited.add(n)
                    w(f"  mbarrier_wait_parity(smem_u32(&bars[{row_bar[n]}]), _it & 1);  // {n} staged")
        let_names = []
        for t in texts:
            let_names += [n for n in spec.let_closure(t) if n not in let_names]
        let_code = [(n, expr.to_cuda(hoist(lets[n]), rename)) for n in let_names]
        cols = [n for n in spec.columns
                if any(n in expr.names(t) for t in texts) or any(n in expr.names(lets[x])
                                                                   for x in let_names)]
        batch = pass_batch(variant, len(used))
        fast = "_full && (_s.row_start & 3) == 0" if cols else "_full"
        def last_read(n: str) -> str:
            """"true" where this pass reads input ``n`` for the last time (its loads then drop the
            L2 keep hint), else "false"."""
            return "true" if (final_pass[n] == this_pass if exact_last_use else last_pass) else "false"

        def load_src(n: str) -> str:
            return (f"s_{n}[_i]" if n in staged else f"r_{n}[_j]" if n in held else f"_b_{n}[_j]" if batch
                    else f"load_vector<{last_read(n)}>(p_{n}, _v, _s, _l2_keep)")

        def vector_body(src_of, v_expr: str = "_s.v0 + _i", full: str = "owns_index(_i, _s)",
                        pad: str = "") -> None:
            """One vector's lines: its inputs (``src_of(name)``), then the full or masked body."""
            def wp(line: str) -> None:
                w(line if line.startswith("#") else pad + line)
            wp(f"    const long long _v = {v_expr};")
            for n in used:
                wp(f"    const float4 {n}4 = {src_of(n)};")
                wp(f"    const float {n}_a[4] = {{{n}4.x, {n}4.y, {n}4.z, {n}4.w}};")
            wp(f"    const bool _full = {full};")
            for line in header or []:
                wp("    " + line)
            for masked in (False, True):
                wp(f"    {'} else {' if masked else 'if (' + fast + ') {'}")
                if not masked and cols:
                    wp("      const int _col0 = static_cast<int>(4 * _v - _s.row_start);")
                    for n in cols:
                        src = (f"s_{n}[(_col0 - _s.lo) >> 2]" if n in staged_cols else
                               f"__ldg(reinterpret_cast<const float4*>(p_{n} + _col0))")
                        wp(f"      const float4 {n}4 = {src};")
                        wp(f"      const float {n}_a[4] = {{{n}4.x, {n}4.y, {n}4.z, {n}4.w}};")
                wp("#pragma unroll")
                wp("      for (int _k = 0; _k < 4; ++_k) {")
                if masked:
                    wp("        const int _col = static_cast<int>(4 * _v + _k - _s.row_start);")
                    wp("        const bool _valid = _col >= _s.lo && _col < _s.hi;")
                for n in used:
                    wp(f"        const float {n} = {n}_a[_k];")
                for n in cols:
                    src = (f"reinterpret_cast<const float*>(s_{n})[_col - _s.lo]" if n in staged_cols
                           else f"__ldg(p_{n} + _col)")
                    value = f"_valid ? {src} : 0.0f;" if masked else f"{n}_a[_k];"
                    wp(f"        const float {n} = {value}")
                for name, code in let_code:
                    wp(f"        const float {name} = {code};")
                for line in body(masked):
                    wp("        " + line)
                wp("      }")
            wp("    }")
            for line in footer or []:
                wp("    " + line)

        def whole_vector_loop() -> None:
            """The looped re-read kernel's path for a slice of whole 16-byte vectors (WHOLE_PATHS),
            opening the ``else`` the general loop goes under. "paired": two vectors per trip, the
            loads of both issued before either is used (4 loads in flight per thread in lars'
            statistics pass, 6 in its output pass, where the general loop waits for 2 and 3;
            commits 6803617, 9b181c2). "unrolled": unguarded
            loads, the loop unrolled twice."""
            if whole == "paired":
                w("  if (_s.nfull == _s.nvec) {  // whole vectors: two per trip, both vectors' loads first")
                w("#pragma unroll 1")
                w("  for (int _i = threadIdx.x; _i < _s.nvec; _i += 2 * THREADS) {")
                w("    const bool _two = _i + THREADS < _s.nvec;")
                w("    const long long _v0 = _s.v0 + _i;")
                w("    const long long _v1 = _two ? _v0 + THREADS : _v0;  // else the first again, unused")
                for n in used:
                    for j in (0, 1):
                        load = f"load_full_vector<{last_read(n)}>(p_{n}, _v{j}, _l2_keep)"
                        w(f"    const float4 {n}4_{j} = {load};")
                for j in (0, 1):
                    w("    {" if j == 0 else "    if (_two) {")
                    vector_body(lambda n, j=j: f"{n}4_{j}", f"_v{j}", "true", "  ")
                    w("    }")
            else:
                w("  if (_s.nfull == _s.nvec) {  // whole vectors: unguarded loads, the loop unrolled twice")
                w("#pragma unroll 2")
                w("  for (int _i = threadIdx.x; _i < _s.nvec; _i += THREADS) {")
                vector_body(lambda n: f"load_full_vector<{last_read(n)}>(p_{n}, _v, _l2_keep)", full="true")
            w("  }")
            w("  } else {")

        if held:  # the per-thread vectors, fully unrolled so the held arrays stay in registers
            w("#pragma unroll")
            w("  for (int _j = 0; _j < VREGS; ++_j) {")
            w("    const int _i = threadIdx.x + _j * THREADS;")
            w("    if (_i >= _s.nvec) break;")
        elif batch:
            # every load of the batch is issued before any is used: ``batch`` vectors per input
            # into registers (compile-time indices only), then the per-vector body over them.
            # Column parameters (read by every row, L2 hits) are still loaded in the body: buffering
            # them too spills layernorm_bwd at 64 registers.
            w("#pragma unroll 1")
            w(f"  for (int _i0 = threadIdx.x; _i0 < _s.nvec; _i0 += {batch} * THREADS) {{")
            w(f"    // issue {batch} loads per input before using any")
            for n in used:
                w(f"    float4 _b_{n}[{batch}];")
            w(f"    if (owns_vectors(_s.v0 + _i0, {batch}, THREADS, _s)) {{  // all owned whole: plain loads")
            w("#pragma unroll")
            w(f"      for (int _j = 0; _j < {batch}; ++_j) {{")
            w("        const long long _v = _s.v0 + _i0 + _j * THREADS;")
            for n in used:
                final = "true" if final_pass[n] == this_pass else "false"
                w(f"        _b_{n}[_j] = load_full_vector<{final}>(p_{n}, _v, _l2_keep);")
            w("      }")
            w("    } else {  // a slice end: partial vectors masked, vectors past the slice zero")
            w("#pragma unroll")
            w(f"      for (int _j = 0; _j < {batch}; ++_j) {{")
            w("        const int _i = _i0 + _j * THREADS;")
            w("        const long long _v = _s.v0 + _i;")
            w("        const bool _in = _i < _s.nvec;")
            w("        const float4 _zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);")
            for n in used:
                final = "true" if final_pass[n] == this_pass else "false"
                w(f"        _b_{n}[_j] = _in ? load_vector<{final}>(p_{n}, _v, _s, _l2_keep) : _zero;")
            w("      }")
            w("    }")
            inner_start = len(out)  # the per-vector loop, indented one level more at the end
            w("#pragma unroll")
            w(f"  for (int _j = 0; _j < {batch}; ++_j) {{  // consume the batch")
            w("    const int _i = _i0 + _j * THREADS;")
            w("    if (_i >= _s.nvec) break;")
        else:
            if variant.looped_reread and whole != "none":
                whole_vector_loop()
            w(f"#pragma unroll {variant.unroll}")
            w("  for (int _i = threadIdx.x; _i < _s.nvec; _i += THREADS) {")

        vector_body(load_src)
        w("  }")
        if variant.looped_reread and whole != "none":
            w("  }  // whole vectors / general slice")
        if batch:
            out[inner_start:] = [line if line.startswith("#") else "  " + line for line in out[inner_start:]]
            w("  }")

    for li, stage in enumerate(spec.stages):
        off = slot_offsets[li]
        w(f"  // ---- stage {li + 1}: " + ", ".join(f"{s.name} = {s.op}" for s in stage.stats)
          + " ----")
        for j, st in enumerate(stage.stats):
            w(f"  float acc{li}_{j} = {OP_STRUCT[st.op]}::identity();")
        stat_code = [expr.to_cuda(hoist(st.expr), rename) for st in stage.stats]

        def stat_body(masked: bool, stage=stage, li=li, stat_code=stat_code) -> list[str]:
            lines = []
            for j, st in enumerate(stage.stats):
                update = f"{OP_STRUCT[st.op]}::apply(acc{li}_{j}, {stat_code[j]})"
                lines.append(f"acc{li}_{j} = " + (f"_valid ? {update} : acc{li}_{j};" if masked
                                                   else f"{update};"))
            return lines

        element_loop([st.expr for st in stage.stats], stat_body)
        for j, st in enumerate(stage.stats):
            w(f"  acc{li}_{j} = warp_reduce<{OP_STRUCT[st.op]}>(acc{li}_{j});")
        w("  if (_lane == 0) {")
        for j in range(len(stage.stats)):
            w(f"    red[_warp * QMAX + {j}] = acc{li}_{j};")
        w("  }")
        w("  __syncthreads();")
        if P > 1 and li == 0:
            w("  if (_it == 0) cluster_wait();  // every peer's barriers are initialised from here on")
        bar = f"bars[{2 + 2 * li} + (_it & 1)]"
        w(f"  if (threadIdx.x < {len(stage.stats)}) {{")
        w("    const int _j = threadIdx.x;")
        w("    float _part;")
        for j, st in enumerate(stage.stats):
            cond = "if" if j == 0 else "} else if"
            w(f"    {cond} (_j == {j}) {{")
            w(f"      _part = {OP_STRUCT[st.op]}::identity();")
            w(f"      for (int _w = 0; _w < NWARPS; ++_w) _part = {OP_STRUCT[st.op]}::apply(_part, "
              f"red[_w * QMAX + {j}]);")
        w("    }")
        w(f"    float* const _mine = &_slots[{off} + _rank * {len(stage.stats)} + _j];")
        w("    *_mine = _part;")
        if P > 1:
            w("    for (int _d = 1; _d < P; ++_d) {  // one-way push into every peer's slot")
            w("      const u32 _peer = (_rank + _d) % P;")
            w(f"      st_async_f32(mapa(smem_u32(_mine), _peer), _part, mapa(smem_u32(&{bar}), _peer));")
            w("    }")
        w("  }")
        if P > 1:
            w(f"  if (threadIdx.x == 0) mbarrier_arrive_expect_tx(smem_u32(&{bar}), "
              f"(P - 1) * {len(stage.stats)}u * 4u);")
        w("  __syncthreads();")
        if P > 1:
            w(f"  mbarrier_wait_parity(smem_u32(&{bar}), (_it >> 1) & 1);")
        for j, st in enumerate(stage.stats):
            w(f"  float {st.name} = {OP_STRUCT[st.op]}::identity();")
            w(f"  for (int _c = 0; _c < P; ++_c) {st.name} = {OP_STRUCT[st.op]}::apply({st.name}, "
              f"_slots[{off} + _c * {len(stage.stats)} + {j}]);")
        for name, text in stage.derive:
            w(f"  const float {name} = {expr.to_cuda(text, rename)};")
        row_names.update(st.name for st in stage.stats)
        row_names.update(name for name, _ in stage.derive)

    reuse = "shared memory" if staged else "registers" if held else "global memory"
    w(f"  // ---- outputs: every element reused from {reuse} ----")
    out_code = [expr.to_cuda(hoist(o.expr), rename) for o in spec.outputs]

    def output_body(masked: bool) -> list[str]:
        lines = []
        for o, code in zip(spec.outputs, out_code, strict=True):
            lines.append(f"const float {o.name} = {code};")
            value = (f"static_cast<signed char>(static_cast<int>({o.name}))" if o.dtype == "int8"
                     else o.name)
            lines.append(f"{o.name}_o[_k] = {value};")
            if masked:
                lines.append(f"if (_valid && !_full) p_{o.name}[4 * _v + _k] = {o.name}_o[_k];")
        return lines

    header: list[str] = []
    footer: list[str] = []
    for o in spec.outputs:
        header.append(("signed char" if o.dtype == "int8" else "float") + f" {o.name}_o[4];")
        if o.dtype == "int8":
            footer.append(f"if (_full) reinterpret_cast<char4*>(p_{o.name})[_v] = make_char4("
                          f"{o.name}_o[0], {o.name}_o[1], {o.name}_o[2], {o.name}_o[3]);")
        else:  # streamed (evict first), except from regs kernels, whose plain stores measured
            # -0.2 to +2.7 % at lars / pearson_bwd 4K-8K (commit b13c30d): the
            # loads' change is the gain there, the stores' is within run-to-run noise
            vector = f"make_float4({o.name}_o[0], {o.name}_o[1], {o.name}_o[2], {o.name}_o[3])"
            footer.append(f"if (_full) reinterpret_cast<float4*>(p_{o.name})[_v] = {vector};"
                          if variant.kind == "regs" else
                          f"if (_full) __stcs(reinterpret_cast<float4*>(p_{o.name}) + _v, {vector});")
    element_loop([o.expr for o in spec.outputs], output_body, header, footer, last_pass=True)
    if spec.row_outputs and not variant.control:
        w("  if (_rank == 0 && threadIdx.x == 0) {")
        for name, text in spec.row_outputs:
            w(f"    p_{name}[_row] = {expr.to_cuda(text, rename)};")
        w("  }")
    w("  }  // rows")
    w("}")
    return "\n".join(out) + "\n"
