"""Measured variant choice: fastest candidate kept, recorded on disk, reused without timing."""

from smemkit.reduction import BUILTIN
from smemkit.reduction.autotune import enabled, shape_key, tuned_variant
from smemkit.reduction.codegen import Variant
from smemkit.runtime import cache

SPEC = BUILTIN["softmax_bwd"]
CANDIDATES = [Variant("staged"), Variant("reread"), Variant("cluster", 4)]


def test_fastest_is_chosen_recorded_and_reused(isolated_cache):
    timed = []

    def time_ms(v):
        timed.append(v)
        return {"staged": 2.0, "reread": 3.0, "cluster": 1.0}[v.kind]

    first = tuned_variant(SPEC, 4000, 65536, "NVIDIA H200", CANDIDATES, time_ms)
    assert first == Variant("cluster", 4) and len(timed) == 3
    record = cache.read_record("autotune/NVIDIA_H200")
    (entry,) = record.values()
    assert entry["ms"] == {"staged": 2.0, "reread": 3.0, "cluster_p4": 1.0}
    # same row class (4000 and 3000 both round to 4096): no timing at all
    again = tuned_variant(SPEC, 3000, 65536, "NVIDIA H200", CANDIDATES, lambda v: 1 / 0)
    assert again == first and len(timed) == 3
    cleared = cache.clear()
    assert (cleared.entries, cleared.records) == (0, 1)
    assert cache.read_record("autotune/NVIDIA_H200") == {}


def test_shape_classes_and_spec_fingerprint():
    assert shape_key(SPEC, 4000, 8192) == shape_key(SPEC, 2049, 8192)
    assert shape_key(SPEC, 4000, 8192) != shape_key(SPEC, 4000, 8193)
    assert shape_key(SPEC, 4000, 8192) != shape_key(BUILTIN["layernorm_bwd"], 4000, 8192)


def test_enabled_by_flag_or_environment(monkeypatch):
    monkeypatch.delenv("SMEMKIT_AUTOTUNE", raising=False)
    assert not enabled(None) and enabled(True)
    monkeypatch.setenv("SMEMKIT_AUTOTUNE", "1")
    assert enabled(None) and not enabled(False)


def test_autotune_candidates_are_legal_including_prefetch():
    from smemkit.reduction.api import legal_variants

    limit = 232448  # H100/H200 opt-in shared memory per block
    spec = BUILTIN["softmax_bwd"]
    plain = legal_variants(spec, 32768, limit, 16)
    both = legal_variants(spec, 32768, limit, 16, prefetch=True)
    assert all(not v.prefetch for v in plain)
    assert {v for v in both if not v.prefetch} == set(plain)
    labels = {v.label for v in both}
    assert "cluster_p2_pf" not in labels  # two 32768/2-column buffers do not fit
    assert "cluster_p8_pf" in labels


def test_every_candidate_survives_the_record_round_trip(isolated_cache):
    """The record rebuilds exactly the kernel that won (fields such as per_row and vregs kept)."""
    from smemkit.reduction.api import legal_variants

    for N in (4096, 8192, 32768):
        for v in legal_variants(SPEC, N, 232448, 16, prefetch=True):
            picked = tuned_variant(SPEC, 4096, N, f"GPU {v.label}", [v], lambda _: 1.0)
            again = tuned_variant(SPEC, 4096, N, f"GPU {v.label}", [v], lambda _: 1 / 0)
            assert picked == again == v, v.label


def test_an_old_record_without_every_field_is_tuned_again(isolated_cache):
    key = shape_key(SPEC, 4096, 8192)
    cache.update_record("autotune/GPU", key, {"best": {"kind": "regs", "P": 1, "threads": 512,
                                                        "prefetch": False}, "ms": {}})
    timed = []
    got = tuned_variant(SPEC, 4096, 8192, "GPU", CANDIDATES, lambda v: timed.append(v) or 1.0)
    assert got == CANDIDATES[0] and len(timed) == 3


def test_a_recorded_winner_that_can_no_longer_run_is_tuned_again(isolated_cache):
    with_triton = [*CANDIDATES, Variant("triton")]
    first = tuned_variant(SPEC, 4096, 4096, "NVIDIA H200", with_triton,
                          lambda v: 0.5 if v.kind == "triton" else 2.0)
    assert first == Variant("triton")
    # Triton uninstalled: the record names a variant that is no longer a candidate
    again = tuned_variant(SPEC, 4096, 4096, "NVIDIA H200", CANDIDATES,
                          lambda v: {"staged": 2.0, "reread": 3.0, "cluster": 4.0}[v.kind])
    assert again == Variant("staged")
