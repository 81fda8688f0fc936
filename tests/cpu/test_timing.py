"""Which timing mode time_both_modes reports (the choice is pure Python; the GPU test times)."""

from smemkit.runtime.timing import ModeTiming, Timing


def _t(ms: float) -> Timing:
    return Timing.of([ms] * 20)


def test_the_faster_median_wins_and_says_which():
    slow_graph = ModeTiming(graph=_t(0.55), launch=_t(0.50))
    assert slow_graph.best.median_ms == 0.50 and slow_graph.mode == "launch"
    fast_graph = ModeTiming(graph=_t(0.03), launch=_t(0.05))
    assert fast_graph.best.median_ms == 0.03 and fast_graph.mode == "graph"


def test_a_tie_keeps_the_graph_and_no_graph_means_launches():
    assert ModeTiming(graph=_t(0.5), launch=_t(0.5)).mode == "graph"
    uncapturable = ModeTiming(graph=None, launch=_t(0.7))
    assert uncapturable.best.median_ms == 0.7 and uncapturable.mode == "launch"
