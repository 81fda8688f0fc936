"""The timing helpers' argument checks (the timings themselves run on the GPU)."""

import math

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.runtime.timing import _keep_busy, time_gpu


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_warm_up_that_would_never_end_is_rejected_before_any_call(bad):
    calls = []
    with pytest.raises(InvalidArgumentError, match="warm_ms"):
        time_gpu(lambda: calls.append(1), warm_ms=bad)
    assert calls == []  # rejected before the warm-up calls, so no GPU work was queued


def test_no_warm_up_runs_nothing():
    calls = []
    _keep_busy(lambda: calls.append(1), None, 0.0)
    _keep_busy(lambda: calls.append(1), None, -1.0)
    assert calls == []


def test_the_persisting_l2_reset_is_on_by_default_and_can_be_left_out(monkeypatch):
    from smemkit.runtime import timing

    resets = []
    monkeypatch.setattr(timing, "_time", lambda *args: resets.append(args[-1]))
    time_gpu(lambda: None)
    time_gpu(lambda: None, reset_persisting_l2=False)
    assert resets == [True, False]
