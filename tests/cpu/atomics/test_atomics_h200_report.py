"""`smemkit atomics analyze` on the histogram report saved from the H200 (tests/data) gives the
verdicts the H200 run recorded (benchmarks/results/h200/atomics.json), with no GPU.

The report and the results file come from the same run: after a new H200 run, copy
benchmarks/results/h200/atomics_hist_ncu.csv to tests/data/atomics_hist_ncu.csv. Launches are
found by (regime, input, kernel) from the results file, not by position, so the test holds for
a report of the DRAM regime alone (12 launches, no "regime" key) and for one with the L2 regimes.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
REPORT = ROOT / "tests" / "data" / "atomics_hist_ncu.csv"
RESULTS = ROOT / "benchmarks" / "results" / "h200" / "atomics.json"


def test_saved_h200_report_gives_the_h200_verdicts():
    out = subprocess.run([sys.executable, "-m", "smemkit", "atomics", "analyze", str(REPORT), "--per-launch",
                          "--json"], capture_output=True, text=True, check=True)
    here = {k["kernel"]: k["verdict"] for k in json.loads(out.stdout)["kernels"]}
    launches = json.loads(RESULTS.read_text())["histogram"]["ncu"]["kernels"]
    h200 = {k["analysis"]["kernel"]: k["analysis"]["verdict"] for k in launches}
    assert len(here) == len(h200) >= 12 and here.keys() == h200.keys()
    for kernel, verdict in h200.items():
        assert here[kernel]["bottleneck"] == verdict["bottleneck"], kernel
        assert here[kernel]["atomic_bound"] == verdict["atomic_bound"], kernel

    def launch(regime: str, inp: str, kernel: str) -> str:
        return next(k["analysis"]["kernel"] for k in launches
                    if (k.get("regime", "dram"), k["input"], k["kernel"]) == (regime, inp, kernel))

    # the case study's shift: on one hot bin the add kernel is atomic-bound, the increment one is not
    add, inc = launch("dram", "single", "hist_add"), launch("dram", "single", "hist_inc")
    assert here[add]["atomic_bound"] and not here[inc]["atomic_bound"]
