"""smemkit: memory-bound GPU work on Hopper through shared, distributed-shared and host memory.

Each part pairs CUDA kernels with a cost model that predicts, before running, whether the
transformation pays on a given GPU:

- ``smemkit.reduction``: CREDIT reduction-reuse kernels over thread-block clusters (DSMEM).
- ``smemkit.offload``: DAK direct host-to-shared-memory offloading (planned).
- ``smemkit.atomics``: shared-memory atomic unit utilization (planned).
- ``smemkit.tiling``: bank conflicts, padding/swizzle and occupancy (planned).

The shared layers are ``smemkit.runtime`` (compile, cache, launch) and ``smemkit.hw``
(device profiles and the probe that measures them).
"""

__version__ = "0.1.0"
