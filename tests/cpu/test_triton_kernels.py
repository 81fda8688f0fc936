"""smemkit's hand-written Triton kernels (smemkit.reduction.triton_kernels) against the float64 reference,
run on the CPU through Triton's interpreter with one small config (BLOCK 1024, so rows of up to 1000
take the one-chunk path and N = 4099 the looped path)."""

from __future__ import annotations

import os

import pytest
import torch

if torch.cuda.is_available():
    # TRITON_INTERPRET is process-wide: set here it would turn every later Triton kernel in this
    # pytest run (torch.compile's included) into interpreted CPU code. On a GPU machine the real
    # kernels are checked instead, by benchmarks/reduction.py (rel_err of every Triton record).
    pytest.skip("CPU-interpreter test; a CUDA GPU is present", allow_module_level=True)

os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton
os.environ.setdefault("SMEMKIT_TRITON_CONFIGS", "1024:4")

pytest.importorskip("triton")

from handwritten_reference import HANDWRITTEN, make_inputs  # noqa: E402


def _numpy24_interpreter_shim() -> None:
    """Triton <= 3.6's interpreter turns a runtime loop bound into an index with
    ``int(ndarray of shape (1,))``, which NumPy >= 2.4 refuses (triton-lang/triton#9171, fixed
    upstream by #9172).  Re-register ``__index__`` on a 1-element array the way the fix does.
    Affects only the CPU interpreter used by this test."""
    from triton.runtime import interpreter

    orig = getattr(interpreter, "_patch_lang_tensor", None)
    if orig is None or getattr(orig, "_smemkit_shim", False):
        return

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patched._smemkit_shim = True
    interpreter._patch_lang_tensor = patched


_numpy24_interpreter_shim()

import smemkit.reduction.triton_kernels as tb  # noqa: E402

NAMES = ["layernorm_bwd", "wvar_bwd", "pearson_bwd", "softmax_bwd", "lars", "quant_int8"]
WIDTHS = [1, 7, 100, 1000, 4099]
M = 3


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-300))


def _run(name, tensors, scalars, config=None):
    outs = tb.TRITON[name](tensors, scalars, config=config)
    ref = HANDWRITTEN[name](tensors, scalars)
    return outs, ref


def test_interface_and_configs():
    assert set(tb.TRITON) == set(NAMES)
    assert len(tb.DEFAULT_CONFIGS) > 3
    assert tb.CONFIG_PAIRS == [(1024, 4)]
    assert tb.USE_RINT is False  # the interpreter cannot call libdevice


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # N = 1 pearson divides 0 by 0, like torch
@pytest.mark.parametrize("N", WIDTHS)
@pytest.mark.parametrize("name", NAMES)
def test_matches_float64_reference(name, N):
    gen = torch.Generator().manual_seed(1000 * N + NAMES.index(name))
    tensors, scalars = make_inputs(name, M, N, generator=gen)
    outs, ref = _run(name, tensors, scalars)
    assert set(outs) == set(ref)
    if name == "quant_int8":
        q, s = outs["q"], outs["scale"]
        assert q.dtype == torch.int8 and q.shape == (M, N)
        assert s.dtype == torch.float32 and s.shape == (M,)
        assert (q.long() - ref["q"].long()).abs().max() <= 1
        assert _rel(s, ref["scale"]) <= 1e-6
        return
    for key, r in ref.items():
        o = outs[key]
        assert o.dtype == torch.float32 and o.shape == (M, N)
        if N == 1 and name in ("layernorm_bwd", "wvar_bwd", "pearson_bwd", "softmax_bwd"):
            # degenerate rows: the reference is 0 (or NaN for pearson); compare elementwise
            torch.testing.assert_close(o.double(), r, atol=1e-6, rtol=0, equal_nan=True)
            continue
        assert _rel(o, r) <= 1e-5, (name, key, N, _rel(o, r))


@pytest.mark.parametrize("N", [100, 128, 1000])
@pytest.mark.parametrize("name", NAMES)
def test_looped_path_with_small_block(name, N):
    """A fixed config of BLOCK 128 (no autotuning): rows of 100+ take the looped path."""
    gen = torch.Generator().manual_seed(7 * N + NAMES.index(name))
    tensors, scalars = make_inputs(name, 2, N, generator=gen)
    outs, ref = _run(name, tensors, scalars, config=(128, 4))
    if name == "quant_int8":
        assert (outs["q"].long() - ref["q"].long()).abs().max() <= 1
        assert _rel(outs["scale"], ref["scale"]) <= 1e-6
        return
    for key, r in ref.items():
        assert _rel(outs[key], r) <= 1e-5, (name, key, N)


def test_quant_round_half_even_and_clamp():
    # max|x| = 127 gives scale 1, so codes are round_half_even(x) exactly
    row = [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 126.5, -127.0, 3.5, -3.5]
    x = torch.tensor([row, [v * 0.25 for v in row]], dtype=torch.float32)
    outs = tb.TRITON["quant_int8"]({"x": x}, {})
    ref = HANDWRITTEN["quant_int8"]({"x": x}, {})
    assert torch.equal(outs["q"].long(), ref["q"].long())
    assert outs["q"][0].tolist() == [127, 0, 2, 2, 0, -2, -2, 0, 126, -127, 4, -4]
    torch.testing.assert_close(outs["scale"].double(), ref["scale"], rtol=1e-6, atol=0)


def test_nan_rows_propagate():
    nan = float("nan")
    x = torch.tensor([[1.0, nan, -3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [nan, 1.0, 2.0, 3.0]])
    q = tb.TRITON["quant_int8"]({"x": x}, {})
    assert torch.isnan(q["scale"][0]) and torch.isnan(q["scale"][2])
    assert q["scale"][1].item() == pytest.approx(1e-12)
    assert q["q"].abs().sum().item() == 0  # NaN rows and the all-zero row give zero codes

    z = torch.tensor([[0.0, 5.0, nan, 1.0], [0.0, 1.0, 2.0, 3.0]])
    dy = torch.ones_like(z)
    dz = tb.TRITON["softmax_bwd"]({"z": z, "dy": dy}, {})["dz"]
    assert torch.isnan(dz[0]).all()
    assert torch.isfinite(dz[1]).all()


def test_nan_late_in_long_row_propagates():
    # the NaN sits in the second chunk, after the running max has already been set
    N = 3000
    x = torch.randn(2, N)
    x[0, 2500] = float("nan")
    q = tb.TRITON["quant_int8"]({"x": x}, {})
    assert torch.isnan(q["scale"][0]) and torch.isfinite(q["scale"][1])
    assert q["q"][0].abs().sum().item() == 0
    z = torch.randn(2, N)
    z[1, 2999] = float("nan")
    dz = tb.TRITON["softmax_bwd"]({"z": z, "dy": torch.randn(2, N)}, {})["dz"]
    assert torch.isfinite(dz[0]).all() and torch.isnan(dz[1]).all()


def test_lars_zero_norm_rows_use_unit_trust():
    w = torch.zeros(2, 5)
    w[1] = 1.0
    g = torch.ones(2, 5) * 0.01
    g[1] = 0.0
    v = torch.full((2, 5), 0.5)
    scalars = {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4, "eta": 1e-3}
    outs, ref = _run("lars", {"w": w, "g": g, "v": v}, scalars)
    for key in ("w_new", "v_new"):
        torch.testing.assert_close(outs[key].double(), ref[key], rtol=1e-6, atol=1e-7)


def test_rejects_bad_inputs():
    with pytest.raises(ValueError, match=r"dy must be float32 of shape \(2, 3\)"):
        tb.TRITON["softmax_bwd"]({"z": torch.zeros(2, 3), "dy": torch.zeros(2, 4)}, {})
    with pytest.raises(ValueError, match="x must be float32"):
        tb.TRITON["quant_int8"]({"x": torch.zeros(2, 3, dtype=torch.float64)}, {})


def test_bad_outputs_and_configs_are_named():
    tensors = {"z": torch.zeros(2, 3), "dy": torch.zeros(2, 3)}
    with pytest.raises(ValueError, match=r"out\['dz'\] must be float32 of shape \(2, 3\)"):
        tb.TRITON["softmax_bwd"](tensors, {}, out={"dz": torch.zeros(3, 2)})
    with pytest.raises(ValueError, match=r"out\['dz'\] must be contiguous"):
        tb.TRITON["softmax_bwd"](tensors, {}, out={"dz": torch.zeros(3, 2).t()})
    with pytest.raises(ValueError, match="config"):
        tb.TRITON["softmax_bwd"](tensors, {}, config=(100, 4))


def test_outputs_given_are_written_in_place():
    tensors, scalars = make_inputs("pearson_bwd", 2, 300, generator=torch.Generator().manual_seed(3))
    out = {"dx": torch.full((2, 300), float("nan")), "dy": torch.full((2, 300), float("nan"))}
    got = tb.TRITON["pearson_bwd"](tensors, scalars, out=out, config=(128, 4))
    assert got["dx"] is out["dx"] and got["dy"] is out["dy"]
    ref = HANDWRITTEN["pearson_bwd"](tensors, scalars)
    assert _rel(out["dx"], ref["dx"]) <= 1e-5 and _rel(out["dy"], ref["dy"]) <= 1e-5


def test_dispatch_config_per_workload_and_width():
    assert tb.dispatch_config("lars", 4096) == (2048, 16)  # from the measured table
    assert tb.dispatch_config("softmax_bwd", 4096) == (4096, 8)
    for name in NAMES:
        for N in (1, 1000, 4096, 8192, 65536):
            block, warps = tb.dispatch_config(name, N)
            assert block & (block - 1) == 0 and warps in (4, 8, 16)
            assert (block, warps) in tb.DEFAULT_CONFIGS  # one the benchmark's autotuner also tries
