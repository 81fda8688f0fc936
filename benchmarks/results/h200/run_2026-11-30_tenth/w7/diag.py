"""Why w6 found no ptxas resources for the reread_t512 kernels: compile each one in a fresh cache
directory and print what NVRTC's log holds."""
import os, tempfile
from smemkit.reduction import BUILTIN
from smemkit.reduction.codegen import Variant, generate
from smemkit.reduction.kernels import kernel_name
from smemkit.runtime.compiler import DEFAULT_ARCH, compile_module

for round_ in range(2):
    os.environ["SMEMKIT_CACHE_DIR"] = tempfile.mkdtemp()
    for name in sorted(BUILTIN):
        v = Variant("reread", threads=512)
        n = kernel_name(BUILTIN[name], v)
        m = compile_module(generate(BUILTIN[name], v), n, arch=DEFAULT_ARCH)
        print(round_, n, "cached" if m.from_cache else "fresh", len(m.log), sorted(m.resources), flush=True)
        if n not in m.resources:
            print(repr(m.log[:1500]), flush=True)
