"""benchmarks/dram_bytes.py: the per-element arithmetic over parsed Nsight Compute records."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import dram_bytes  # noqa: E402

from smemkit.hw.ncu import LaunchRecord, MetricValue  # noqa: E402


def test_bytes_per_element_from_records():
    records = [LaunchRecord("1", "rr_quant_int8_reread(float const*)", metrics={
        "dram__bytes_read.sum": MetricValue(4096 * 65536 * 8.0),
        "dram__bytes_write.sum": MetricValue(4096 * 65536 * 1.0)})]
    rows = {(r["workload"], r["variant"]): r for r in dram_bytes.bytes_per_element(records, 8)}
    assert rows[("quant_int8", "reread")]["dram_bytes_per_element"] == 9.0
    assert rows[("quant_int8", "reread")]["reread_kernel_model"] == 9
    assert rows[("quant_int8", "cluster")]["dram_bytes_per_element"] is None
    assert len(rows) == 12


def test_breakdown_is_kept_per_launch():
    records = [LaunchRecord("1", "rr_quant_int8_reread(float const*)", metrics={
        "dram__bytes_read.sum": MetricValue(8.0), "dram__bytes_write.sum": MetricValue(1.0),
        "smsp__issue_active.avg.pct_of_peak_sustained_active": MetricValue(61.5, "%"),
        "smsp__inst_executed.sum": MetricValue(4096 * 65536 * 0.5)})]
    row = next(r for r in dram_bytes.bytes_per_element(records, 8)
               if (r["workload"], r["variant"]) == ("quant_int8", "reread"))
    assert row["breakdown"]["smsp__issue_active.avg.pct_of_peak_sustained_active"] == 61.5
    assert row["breakdown"]["warp_instructions_per_element"] == 0.5
