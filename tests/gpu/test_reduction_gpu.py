"""Every variant of every built-in workload against the float64 reference, on the GPU.

Fresh random inputs per case, outputs poisoned before each run, awkward widths, M = 1, rows of
zeros, inf and NaN, and bitwise repeatability. Variants that cannot run at a width must raise
UnsupportedDeviceError (never return a wrong answer); a row too wide for ``regs`` raises
InvalidArgumentError (the caller's width, not the device, is at fault).
"""

import pytest
import torch
from handwritten_reference import make_inputs

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.codegen import VARIANTS as VARIANT_KINDS
from smemkit.reduction.reference import nonfinite_mismatches, relative_error

pytestmark = pytest.mark.gpu

VARIANTS = [("staged", None), ("reread", None), ("reread_t512", None),
            ("cluster", 2), ("cluster", 4), ("cluster", 8),
            ("cluster", 16), ("staged_pf", None), ("cluster_pf", 2), ("cluster_pf", 8),
            # L2-capped persistent re-read (1024 and 512 threads), the same with one CTA per row,
            # row in registers
            ("reread_l2", None), ("reread_l2_t512", None), ("reread_l2_rows", None),
            ("reread_l2_t512_rows", None), ("regs", None), ("regs_t512", None),
            ("regs_t256", None),  # T_B's kernel at four 4K points of the H200 table
            # smemkit's hand-written Triton kernel at its fixed dispatch config
            ("triton", None)]
WIDTHS = [4096, 8192, 16384, 32768, 65536, 1, 31, 1000, 4097, 65535, 98304]
SEEDS = iter(range(10**6))


def poisoned_outputs(name, M, N):
    out = {}
    for o in BUILTIN[name].outputs:
        if o.dtype == "int8":
            out[o.name] = torch.full((M, N), -128, dtype=torch.int8, device="cuda")
        else:
            out[o.name] = torch.full((M, N), float("nan"), device="cuda")
    for n, _ in BUILTIN[name].row_outputs:
        out[n] = torch.full((M,), float("nan"), device="cuda")
    return out


def check(name, got, want):
    for key, ref in want.items():
        g = got[key]
        if g.dtype == torch.int8:
            assert int((g.to(torch.float64).cpu() - ref.cpu()).abs().max()) <= 1, f"{key} codes"
            continue
        tol = 1e-6 if key == "scale" else 1e-5
        assert nonfinite_mismatches(g, ref) == 0, f"{key}: non-finite elements differ"
        finite = torch.isfinite(ref)
        if not bool(ref[finite].any()):  # e.g. N = 1: the finite outputs are exactly 0
            worst = float(g[finite].abs().max()) if bool(finite.any()) else 0.0
            assert worst <= 1e-4, f"{key}: {worst} where the reference is 0"
            continue
        err = relative_error(g, ref)
        assert err <= tol, f"{key}: relative error {err:.3g} > {tol}"


def run_case(name, M, N, variant, P, tensors=None, scalars=None):
    if tensors is None:
        gen = torch.Generator().manual_seed(next(SEEDS))
        tensors, scalars = make_inputs(name, M, N, device="cuda", generator=gen)
    out = poisoned_outputs(name, M, N)
    got = run(BUILTIN[name], tensors, scalars, variant=variant, cluster_size=P, out=out)
    torch.cuda.synchronize()
    return tensors, scalars, got


@pytest.mark.parametrize("variant,P", VARIANTS, ids=lambda v: str(v))
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_variant_every_width(name, variant, P):
    ran = 0
    for N in WIDTHS:
        M = 3 if N > 1 else 5
        try:
            tensors, scalars, got = run_case(name, M, N, variant, P)
        except UnsupportedDeviceError as exc:
            assert "cannot run" in str(exc)
            continue
        except InvalidArgumentError as exc:
            assert variant.startswith("regs") and "use variant='reread_l2'" in str(exc), exc
            continue
        check(name, got, reference(BUILTIN[name], tensors, scalars))
        ran += 1
    # regs_t256 holds at most 4096 columns: 4096, 1, 31, 1000
    assert ran >= (4 if variant == "regs_t256" else 5), "a variant should run on most widths"


def check_special_rows(name, N, variant, P):
    """M = 1, then rows of zeros, NaN, +inf and -inf against float64, and a bitwise repeat."""
    try:
        run_case(name, 1, N, variant, P)
    except UnsupportedDeviceError:
        pytest.skip("variant illegal at this width")
    tensors, scalars = make_inputs(name, 4, N, device="cuda",
                                   generator=torch.Generator().manual_seed(next(SEEDS)))
    first = BUILTIN[name].inputs[0]
    for n in BUILTIN[name].inputs:
        tensors[n][0] = 0.0
    tensors[first][1, 17] = float("nan")
    tensors[first][2, N - 1] = float("inf")
    tensors[first][3, 5] = float("-inf")
    _, _, got = run_case(name, 4, N, variant, P, tensors, scalars)
    check(name, got, reference(BUILTIN[name], tensors, scalars))
    _, _, again = run_case(name, 4, N, variant, P, tensors, scalars)
    for key in got:
        a, b = got[key], again[key]
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), f"{key} not bitwise repeatable"


@pytest.mark.parametrize("variant,P", VARIANTS, ids=lambda v: str(v))
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_single_row_and_special_rows(name, variant, P):
    check_special_rows(name, 4093 if variant == "regs_t256" else 4099, variant, P)  # odd widths


@pytest.mark.parametrize("N", [4100, 6000, 8196])
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_reread_t512_whole_vector_path(name, N):
    """reread_t512's path for rows of whole 16-byte vectors (paired or unrolled, kernels.kernel_source)
    at vector counts that are not a multiple of 2 x 512 threads, so some threads' last trip has
    no second vector: special rows against float64 and bitwise repeats."""
    check_special_rows(name, N, "reread_t512", None)


@pytest.mark.parametrize("variant,P", [("staged_pf", None), ("cluster_pf", 2), ("cluster_pf", 8),
                                       ("cluster", 4)], ids=lambda v: str(v))
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_persistent_grid_loops_over_more_rows_than_it_holds(name, variant, P):
    """Rows beyond the resident grid (persistent kernels: the prefetch variants, and any staged
    kernel of a spec with columns): M = 2 x grid + 3 makes every CTA go round at least twice."""
    from smemkit.reduction.api import resolve_variant
    from smemkit.reduction.kernels import grid_clusters, legality, require_kernel_support

    if variant == "cluster" and not BUILTIN[name].columns:
        pytest.skip("one cluster per row without column parameters: not persistent")
    device = torch.cuda.current_device()
    smem = require_kernel_support(device).smem_per_block_optin
    ran = 0
    for N in (4097, 65535):
        chosen = resolve_variant(BUILTIN[name], 1, N, torch.device("cuda"), variant, P)
        if legality(BUILTIN[name], chosen, N, smem, 16) is not None:
            continue
        grid = grid_clusters(BUILTIN[name], chosen, 1 << 20, N, device)
        ran += 1
        tensors, scalars, got = run_case(name, 2 * grid + 3, N, variant, P)
        check(name, got, reference(BUILTIN[name], tensors, scalars))
    assert ran, "legal at one of the widths at least"


def test_default_dispatch_runs_and_is_correct():
    for name in sorted(BUILTIN):
        tensors, scalars = make_inputs(name, 8, 65536, device="cuda",
                                       generator=torch.Generator().manual_seed(next(SEEDS)))
        got = run(BUILTIN[name], tensors, scalars)
        check(name, got, reference(BUILTIN[name], tensors, scalars))


def test_bad_inputs_are_named():
    from smemkit.errors import InvalidArgumentError
    from smemkit.reduction import layernorm_bwd

    x = torch.randn(4, 256, device="cuda")
    dy = torch.randn(4, 256, device="cuda")
    gamma = torch.randn(256, device="cuda")
    with pytest.raises(InvalidArgumentError, match="dy has dtype float16"):
        layernorm_bwd(x, dy.half(), gamma)
    with pytest.raises(InvalidArgumentError, match=r"gamma must have shape \(256,\)"):
        layernorm_bwd(x, dy, gamma[:128])
    with pytest.raises(InvalidArgumentError, match="x must be contiguous"):
        layernorm_bwd(x.t().contiguous().t(), dy, gamma)
    with pytest.raises(InvalidArgumentError, match="cluster_size 3"):
        layernorm_bwd(x, dy, gamma, variant="cluster", cluster_size=3)


@pytest.mark.parametrize("variant,P", [("staged", None), ("cluster", 2), ("cluster", 8),
                                       ("staged_pf", None), ("cluster_pf", 4), ("reread_l2", None),
                                       ("reread_l2_t512", None)], ids=lambda v: str(v))
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_persistent_grid_loops_over_many_rows(name, variant, P):
    """More rows than resident clusters: every CTA handles several rows (exchange parities)."""
    for N in (4099, 8192):
        tensors, scalars, got = run_case(name, 3001, N, variant, P)
        check(name, got, reference(BUILTIN[name], tensors, scalars))
        _, _, again = run_case(name, 3001, N, variant, P, tensors, scalars)
        for key in got:
            assert torch.equal(got[key].view(torch.uint8), again[key].view(torch.uint8)), key


def test_autotune_picks_records_and_stays_correct(isolated_cache):
    from smemkit.runtime import cache

    name = "softmax_bwd"
    tensors, scalars = make_inputs(name, 512, 32768, device="cuda",
                                   generator=torch.Generator().manual_seed(next(SEEDS)))
    got = run(BUILTIN[name], tensors, scalars, autotune=True)
    check(name, got, reference(BUILTIN[name], tensors, scalars))
    gpu = "".join(c if c.isalnum() else "_" for c in torch.cuda.get_device_name())
    (entry,) = cache.read_record(f"autotune/{gpu}").values()
    assert min(entry["ms"].values()) > 0 and entry["best"]["kind"] in VARIANT_KINDS
    assert "triton" in entry["ms"]  # a candidate of autotuning


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_reread_l2_is_bitwise_the_same_on_any_grid(name, monkeypatch):
    """reread_l2's grid is capped by the L2 budget (or one CTA per row: reread_l2_rows): a row's
    result must not depend on how many CTAs loop over the rows (each row is reduced by one CTA in a
    fixed order)."""
    for N, M in ((65535, 150), (4097, 37)):
        tensors, scalars, got = run_case(name, M, N, "reread_l2", None)
        check(name, got, reference(BUILTIN[name], tensors, scalars))
        monkeypatch.setenv("SMEMKIT_REREAD_L2_FRACTION", "0.001")  # one or a few CTAs
        _, _, few = run_case(name, M, N, "reread_l2", None, tensors, scalars)
        monkeypatch.setenv("SMEMKIT_REREAD_L2_FRACTION", "16")  # every resident CTA
        _, _, many = run_case(name, M, N, "reread_l2", None, tensors, scalars)
        monkeypatch.delenv("SMEMKIT_REREAD_L2_FRACTION")
        _, _, per_row = run_case(name, M, N, "reread_l2_rows", None, tensors, scalars)  # grid = M
        for key in got:
            assert torch.equal(got[key].view(torch.uint8), few[key].view(torch.uint8)), key
            assert torch.equal(got[key].view(torch.uint8), many[key].view(torch.uint8)), key
            assert torch.equal(got[key].view(torch.uint8), per_row[key].view(torch.uint8)), key


@pytest.mark.parametrize("variant", ["triton", "reread_t512"])
def test_on_a_side_stream_and_in_a_cuda_graph(variant):
    """The Triton kernel (and the looped re-read kernel) run on the caller's current stream and
    replay from a CUDA graph captured after a first call, bitwise as launched."""
    name = "pearson_bwd"
    tensors, scalars = make_inputs(name, 64, 4096, device="cuda",
                                   generator=torch.Generator().manual_seed(next(SEEDS)))
    want = run(BUILTIN[name], tensors, scalars, variant=variant)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # the poison lands ~25 ms late: a kernel launched on another stream would run first and
        # be overwritten with NaN
        torch.cuda._sleep(50_000_000)
        out = poisoned_outputs(name, 64, 4096)
        got = run(BUILTIN[name], tensors, scalars, variant=variant, out=out)
    side.synchronize()
    out = poisoned_outputs(name, 64, 4096)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(BUILTIN[name], tensors, scalars, variant=variant, out=out)
    graph.replay()
    torch.cuda.synchronize()
    for key in want:
        assert torch.equal(got[key].view(torch.uint8), want[key].view(torch.uint8)), key
        assert torch.equal(out[key].view(torch.uint8), want[key].view(torch.uint8)), key
    check(name, want, reference(BUILTIN[name], tensors, scalars))
