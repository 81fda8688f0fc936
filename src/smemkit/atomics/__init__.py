"""``atomics``: is the shared-memory atomic unit the bottleneck? (SPEC §3, seed 004, issue 6)

A per-SM utilization law U = X * S and a load-dependent closed queue (``model``), a service-time
table S(n, e, c, op, dtype) measured by microbenchmarks (``kernels.cu``, ``table``), the SASS check
of which atomics are native and which are CAS loops (``sass``), Nsight Compute parsing
(``ncu``), the per-kernel analysis (``analysis``) and the ``smemkit atomics`` command (``cli``).
See docs/atomics.md for the formulation and what is and is not yet measured.
"""

from smemkit.atomics.model import PerSM, QueuePoint, Verdict, closed_queue, load_curve, utilization, verdict
from smemkit.atomics.table import ServiceCurve, ServiceTable, load_table, placeholder_table

__all__ = [
    "PerSM", "QueuePoint", "ServiceCurve", "ServiceTable", "Verdict", "closed_queue", "load_curve",
    "load_table", "placeholder_table", "utilization", "verdict",
]
