"""`smemkit atomics analyze` on the histogram report saved from the H200 (tests/data) gives the
verdicts the H200 run recorded (benchmarks/results/h200/atomics.json), with no GPU."""

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
    h200 = {k["analysis"]["kernel"]: k["analysis"]["verdict"]
            for k in json.loads(RESULTS.read_text())["histogram"]["ncu"]["kernels"]}
    assert len(here) == 12 and here.keys() == h200.keys()
    for kernel, verdict in h200.items():
        assert here[kernel]["bottleneck"] == verdict["bottleneck"], kernel
        assert here[kernel]["atomic_bound"] == verdict["atomic_bound"], kernel
    # the case study's shift: on one hot bin the add kernel is atomic-bound, the increment one is not
    assert here["hist_add [launch 9]"]["atomic_bound"] and not here["hist_inc [launch 8]"]["atomic_bound"]
