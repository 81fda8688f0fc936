"""The host-read paths probe on a GPU: bulk copies, TMA tensor copies and TMA multicast deliver
the pinned bytes (XOR of every landed word against the source; under multicast every rank of a
cluster must match its leader), and bad arguments fail before any launch."""

import pytest

from smemkit.errors import InvalidArgumentError

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def probe():
    from smemkit.offload.host_paths import HostPathProbe

    p = HostPathProbe(host_mib=16)
    yield p
    p.free()


@pytest.mark.parametrize("ctas,chunk,stages", [(1, 4096, 1), (3, 16384, 4), (16, 65536, 2), (7, 1040, 3)])
def test_bulk_delivers_the_source_bytes(probe, ctas, chunk, stages):
    p = probe.bulk(ctas, chunk, stages)
    assert p.data_ok and p.link_gbps > 0


@pytest.mark.parametrize("ctas,rows,stages,P",
                         [(1, 64, 2, 1), (5, 256, 4, 1), (4, 128, 3, 2), (8, 256, 2, 4)])
def test_tma_delivers_the_source_bytes(probe, ctas, rows, stages, P):
    p = probe.tma(ctas, rows, stages, P=P)
    assert p.data_ok
    assert p.delivered_gbps == pytest.approx(P * p.link_gbps)


def test_tma_wide_unswizzled_box(probe):
    assert probe.tma(4, 32, 2, tile_cols=256).data_ok


def test_bad_arguments_fail_before_launch(probe):
    with pytest.raises(InvalidArgumentError, match="must be a multiple of the cluster size"):
        probe.tma(3, 128, 2, P=2)
    with pytest.raises(InvalidArgumentError, match="shared memory per CTA"):
        probe.bulk(2, 65536, 8)
    with pytest.raises(InvalidArgumentError, match="ctas"):
        probe.bulk(0, 4096, 2)
    with pytest.raises(InvalidArgumentError, match="nbytes must be an integer"):
        probe.bulk(2, 4096, 2, nbytes=probe.host.nbytes + 4096)  # past the pinned buffer
    with pytest.raises(InvalidArgumentError, match="nbytes must be an integer"):
        probe.tma(2, 64, 2, nbytes=1024)  # less than one band of rows
