"""smemkit.nn's drop-ins take torch's signatures: the same parameter names, order, kinds and
defaults as their torch counterparts, so swapping the import is the whole change; what the
last-dimension kernels cannot do is a clear error naming the argument."""

import inspect

import pytest
import torch

import smemkit.nn as snn
from smemkit.errors import InvalidArgumentError

PAIRS = [
    ("LayerNorm.__init__", snn.LayerNorm.__init__, torch.nn.LayerNorm.__init__),
    ("LayerNorm.forward", snn.LayerNorm.forward, torch.nn.LayerNorm.forward),
    ("Softmax.__init__", snn.Softmax.__init__, torch.nn.Softmax.__init__),
    ("Softmax.forward", snn.Softmax.forward, torch.nn.Softmax.forward),
    ("softmax", snn.softmax, torch.nn.functional.softmax),
    ("layer_norm", snn.layer_norm, torch.nn.functional.layer_norm),
]


def shape_of(function) -> list[tuple[str, object, object]]:
    """(name, kind, default) per parameter: what a caller relies on (annotations aside)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(("name", "ours", "theirs"), PAIRS, ids=[p[0] for p in PAIRS])
def test_signature_matches_torch(name, ours, theirs):
    assert shape_of(ours) == shape_of(theirs), name


def test_every_public_callable_of_smemkit_nn_is_compared():
    public = {n for n, v in vars(snn).items()
              if not n.startswith("_") and callable(v) and getattr(v, "__module__", "") == "smemkit.nn"}
    compared = {p[0].split(".")[0] for p in PAIRS}
    assert public == compared


def test_softmax_takes_torch_calls_and_matches_torch():
    x = torch.randn(3, 5, 7)
    torch.testing.assert_close(snn.Softmax(dim=-1)(x), torch.nn.Softmax(dim=-1)(x))
    torch.testing.assert_close(snn.Softmax(dim=2)(x), torch.softmax(x, dim=2))
    torch.testing.assert_close(snn.Softmax()(x[0]), torch.softmax(x[0], dim=1))  # torch's implicit dim
    torch.testing.assert_close(snn.softmax(x, dim=-1, dtype=torch.float64),
                               torch.nn.functional.softmax(x, dim=-1, dtype=torch.float64))
    assert repr(snn.Softmax(dim=-1)) == repr(torch.nn.Softmax(dim=-1))


@pytest.mark.parametrize(("make", "call", "match"), [
    (lambda: snn.Softmax(dim=-2), None, "dim=-2"),
    (lambda: snn.Softmax(dim="last"), None, "dim='last'"),
    (lambda: snn.Softmax(dim=0), lambda m: m(torch.randn(2, 3)), "dim=0 on a 2-d input"),
    (lambda: snn.Softmax(), lambda m: m(torch.randn(2, 3, 4)), "implicit choice: dim 0"),
    (lambda: snn.LayerNorm([4, 8]), None, "normalized_shape=\\[4, 8\\]"),
    (lambda: snn.LayerNorm(8, eps=float("nan")), None, "eps=nan"),
    (lambda: snn.LayerNorm(8), lambda m: m(torch.randn(2, 7)), "normalized_shape\\[0\\] = 8"),
    (lambda: None, lambda _: snn.softmax(torch.randn(2, 3), dim=0), "dim=0"),
    (lambda: None, lambda _: snn.layer_norm(torch.randn(2, 3), (2, 3)), "normalized_shape"),
])
def test_what_the_kernels_cannot_do_is_named(make, call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        module = make()
        call(module)


def test_layernorm_accepts_torch_shapes_and_matches_torch():
    x = torch.randn(4, 6, 16)
    for shape in (16, [16], (16,), torch.Size([16])):
        ours, ref = snn.LayerNorm(shape), torch.nn.LayerNorm(shape)
        assert ours.normalized_shape == ref.normalized_shape
        torch.testing.assert_close(ours(x), ref(x))
    assert repr(snn.LayerNorm(16, eps=1e-6)) == repr(torch.nn.LayerNorm(16, eps=1e-6))
    torch.testing.assert_close(snn.layer_norm(x, [16]), torch.nn.functional.layer_norm(x, [16]))
    w, b = torch.randn(16), torch.randn(16)
    torch.testing.assert_close(snn.layer_norm(x, (16,), w, b, 1e-3),
                               torch.nn.functional.layer_norm(x, (16,), w, b, 1e-3))
