"""Compile the four lars-4K kernels locally (no GPU) and dump their SASS + a stats table.

    source /tmp/venv/bin/activate
    cd /work/main && PYTHONPATH=src python .branches/s16/sass/compare.py

Writes, next to this file:
  inductor_r2048.{sass,ptx}  Inductor's kernel, XBLOCK=1 R0_BLOCK=2048 num_warps=16
  inductor_r4096.{sass,ptx}  Inductor's kernel, XBLOCK=1 R0_BLOCK=4096 num_warps=16 (other autotune config)
  triton_smemkit.{sass,ptx}  smemkit.reduction.triton_kernels._lars_kernel, BLOCK=2048, ONE=False, num_warps=16
  regs_t256.{cu,sass}        smemkit CUDA regs_v4_t256 (kernels.kernel_source, NVRTC sm_90a)
  reread_t512.{cu,sass}      smemkit CUDA reread_t512 (kernels.kernel_source, NVRTC sm_90a)
  stats.json / stats.txt     per-kernel counts: whole-binary (sass_stats) and along the main path
                             of one row at N = 4096 (trace, branch decisions in DECISIONS)
  extra_reread_t512_u2b3.sass  c13's reread_t512 with `#pragma unroll 2`, bound 3 (SASS only)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BIN = "/tmp/venv/lib/python3.11/site-packages/triton/backends/nvidia/bin"
os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("SMEMKIT_CACHE_DIR", "/tmp/s16-sass-cache")
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


def compile_triton(fn, signature, constexprs, attrs, options):
    k = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                       target=TARGET, options=options)
    return k.asm["cubin"], k.asm["ptx"], k.metadata


def res_usage(cubin: bytes) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.cubin"
        p.write_bytes(cubin)
        out = subprocess.run([f"{BIN}/cuobjdump", "-res-usage", str(p)], capture_output=True,
                             text=True, check=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", out)
    return dict(regs=int(m[1]), stack=int(m[2]), smem_static=int(m[3]), local=int(m[4]))


def occupancy(regs: int, threads: int, smem: int) -> dict:
    """H100/H200 (sm_90): 64K regs/SM, 2048 threads/SM, 32 CTAs/SM, 228 KB smem/SM; registers
    allocated per warp in units of 256 (8 per thread). ``smem``: cuobjdump's SHARED (which already
    includes the 1 KB the driver reserves per CTA on sm_90) plus the dynamic bytes."""
    warps = threads // 32
    regs_warp = ((max(regs, 1) * 32 + 255) // 256) * 256
    by_regs = (65536 // (regs_warp * warps))
    by_threads = 2048 // threads
    by_smem = 233472 // smem if smem else 32
    return dict(by_regs=by_regs, by_threads=by_threads, by_smem=by_smem,
                ctas_per_sm=min(by_regs, by_threads, by_smem, 32))


INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def sass_instructions(sass: str) -> list[tuple[int, str]]:
    return [(int(a, 16), t.strip()) for a, t in INSN.findall(sass)]


def sass_stats(sass: str) -> dict:
    ins = sass_instructions(sass)
    ops = Counter()
    for _, t in ins:
        t = re.sub(r"^@!?U?P\w+\s+", "", t)  # predicate guard
        op = t.split()[0]
        if op.startswith(("LDG", "STG", "LDS", "STS", "BAR", "SHFL", "LD.", "ST.", "LDL", "STL")):
            ops[op] += 1
        else:
            ops["_other"] += 1
    total = sum(1 for _, t in ins if not t.startswith("NOP"))
    return dict(total_non_nop=total, memory_and_sync={k: v for k, v in sorted(ops.items()) if k != "_other"})



# ---------------------------------------------------------------- main-path trace (N = 4096)
# Branch decisions of one row at M = N = 4096 (every 16-byte vector whole, sqrt/div fast paths,
# a thread with lane != 0 and threadIdx.x >= 2), per branch address: True = taken; a list is
# consumed visit by visit (loops). Unconditional BRA is always taken; CALLs are never reached.
DECISIONS = {
    "inductor_r2048": {0x06e0: True, 0x07d0: True},
    "inductor_r4096": {0x0790: True, 0x0870: True},
    "triton_smemkit": {0x0100: False, 0x01a0: True, 0x0a00: False, 0x0e20: True, 0x1460: False,
                       0x14a0: True, 0x15b0: True, 0x1c20: [True, False]},
    "regs_t256": {0x0040: False, **{a: False for a in (
                      0x0390, 0x0450, 0x0780, 0x0840, 0x0b80, 0x0c40, 0x0f90, 0x1050, 0x1390, 0x1450,
                      0x1780, 0x1840, 0x1ba0, 0x1c60, 0x1f90, 0x2050, 0x2390, 0x2450, 0x27b0, 0x2870,
                      0x2bd0, 0x2c90, 0x2fe0, 0x30a0)},
                  0x3400: False, 0x3470: True, 0x36a0: False, 0x36e0: True, 0x38f0: False,
                  0x3930: True, 0x3b40: False, 0x3b70: True, 0x3ed0: True, 0x3fc0: True,
                  0x4390: True, 0x4460: True, 0x4530: False, 0x45d0: True, 0x4660: False,
                  0x4780: True, 0x4ba0: False, 0x4bf0: True, 0x4fc0: False, 0x5010: True,
                  0x53e0: False, 0x5440: True, 0x5860: False},
    "reread_t512": {0x0040: False, 0x0320: False, 0x05c0: True, 0x0830: True, 0x0a70: True,
                    0x0d10: [True, False], 0x0e90: True, 0x0f70: True, 0x1590: True, 0x1660: True,
                    0x1730: False, 0x17e0: True, 0x18a0: False, 0x1a20: True, 0x1c80: True,
                    0x1ef0: True, 0x21b0: True, 0x2650: False, 0x26f0: [True, False],
                    0x2760: False},
}

REG = re.compile(r"\bR(\d+)(\.64)?\b")


def _regs(text: str, width: int = 1) -> set[int]:
    out = set()
    for m in REG.finditer(text):
        n = int(m[1])
        w = 2 if m[2] else width
        out.update(range(n, n + w))
    return out


def trace(sass: str, decisions: dict) -> dict:
    """Walk the main path; count instructions, and for every load the number of loads still
    outstanding when its data is first used (a read of, or write to, its destination registers)."""
    ins = dict(sass_instructions(sass))
    visits = Counter()
    pc, path = 0, []
    while True:
        t = ins[pc]
        path.append((pc, t))
        m = re.match(r"(@!?U?P\w+\s+)?(\S+)\s*(.*)", t)
        pred, op, rest = m[1], m[2], m[3]
        if op == "EXIT" and not pred:
            break
        if op in ("BRA", "EXIT") and pred:
            d = decisions[pc]
            d = d[min(visits[pc], len(d) - 1)] if isinstance(d, list) else d
            visits[pc] += 1
            if d:
                if op == "EXIT":
                    break
                pc = int(re.search(r"0x([0-9a-f]+)\s*$", rest)[1], 16)
                continue
        elif op == "BRA":
            pc = int(re.search(r"0x([0-9a-f]+)\s*$", rest)[1], 16)
            continue
        elif op.startswith("CALL"):
            raise RuntimeError(f"trace reached a CALL at {pc:#x}")
        nxt = [a for a in ins if a > pc]
        pc = min(nxt)
    # statistics along the path
    ops = Counter()
    pending: dict[int, int] = {}   # register -> load id
    first_use: list[tuple[int, int, str]] = []  # (address of use, loads outstanding, load kind)
    kinds = {}
    nload = 0
    for pc, t in path:
        m = re.match(r"(@!?U?P\w+\s+)?(\S+)\s*(.*)", t)
        op, rest = m[2], m[3]
        if op.startswith("NOP"):
            continue
        ops[op] += 1
        operands = [o.strip() for o in rest.split(",")]
        is_store = op.startswith(("STG", "STS", "ST."))
        dst = set() if is_store or not operands else _regs(operands[0], 4 if ".128" in op else 2 if ".64" in op else 1)
        src = _regs(rest) if is_store else _regs(",".join(operands[1:]))
        touched = (src | dst) & set(pending)
        if touched:
            ids = {pending[r] for r in touched}
            outstanding = len(set(pending.values()))
            for i in ids:
                first_use.append((pc, outstanding, kinds[i]))
                for r in [r for r, v in pending.items() if v == i]:
                    del pending[r]
        if op.startswith("LDG"):
            nload += 1
            kinds[nload] = op
            for r in dst:
                pending[r] = nload
    waits = []
    last = None
    for pc, n, k in first_use:  # collapse: one entry per wait point
        if last is None or pc != last:
            waits.append(n)
        last = pc
    # loads in flight at each exposed latency: the first wait of each group (a wait with more
    # loads outstanding than the previous one starts a new group)
    groups = [n for i, n in enumerate(waits) if i == 0 or n > waits[i - 1]]
    cat = Counter()
    for op, n in ops.items():
        base = op.split(".")[0]
        if base in ("LDG", "STG", "BAR", "SHFL", "LDS", "STS"):
            cat[op] += n
        elif base in ("BRA", "BSSY", "BSYNC", "EXIT", "CALL", "RET", "WARPSYNC"):
            cat["branch/reconverge"] += n
        elif base.startswith("F") or base in ("MUFU", "HFMA2"):
            cat["float"] += n
        else:
            cat["int/addr/pred/move"] += n
    return dict(path_instructions=sum(ops.values()), by_category=dict(sorted(cat.items())),
                loads_outstanding_at_each_wait=waits, loads_in_flight_per_exposed_latency=groups)


def dump(cubin: bytes) -> str:
    from smemkit.runtime.compiler import dump_sass
    return dump_sass(cubin)


def main() -> None:
    results = {}

    # ---- Inductor (both configs its heuristic lists) ----
    import inductor_lars_4k as ind
    fn = getattr(ind, ind.KERNEL_NAME)
    for xb, rb, nw in ind.CONFIGS:
        cubin, ptx, md = compile_triton(fn, ind.SIGNATURE, {"XBLOCK": xb, "R0_BLOCK": rb}, ind.ATTRS,
                                        {"num_warps": nw, **ind.OPTIONS})
        name = f"inductor_r{rb}"
        results[name] = dict(threads=32 * nw, cubin=cubin, ptx=ptx, smem_dyn=md.shared)

    # ---- smemkit's Triton lars kernel (the JIT specializes N = 4096 and the 16-byte-aligned
    # torch pointers to tt.divisibility 16; the fp32 scalars are not specialized) ----
    from smemkit.reduction.triton_kernels import _lars_kernel
    sig = {"W": "*fp32", "G": "*fp32", "V": "*fp32", "WO": "*fp32", "VO": "*fp32", "N": "i32",
           "lr": "fp32", "momentum": "fp32", "weight_decay": "fp32", "eta": "fp32",
           "BLOCK": "constexpr", "ONE": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}
    cubin, ptx, md = compile_triton(_lars_kernel, sig, {"BLOCK": 2048, "ONE": False}, attrs,
                                    {"num_warps": 16})
    results["triton_smemkit"] = dict(threads=512, cubin=cubin, ptx=ptx, smem_dyn=md.shared)

    # ---- smemkit CUDA kernels: exactly what compiled_kernel() builds ----
    from smemkit.reduction.api import variant_from_label
    from smemkit.reduction.codegen import kernel_name
    from smemkit.reduction.kernels import kernel_source
    from smemkit.reduction.workloads import BUILTIN
    from smemkit.runtime.compiler import compile_module, nvrtc_version_text
    spec = BUILTIN["lars"]
    for label in ("regs_t256", "reread_t512"):
        v = variant_from_label(label, 4096)
        src = kernel_source(spec, v)
        kname = kernel_name(spec, v)
        mod = compile_module(src, kname, arch="sm_90a")
        (HERE / f"{label}.cu").write_text(src)
        r = mod.resources[kname]
        results[label] = dict(threads=v.threads, cubin=mod.cubin, ptx=None, smem_dyn=0,
                              ptxas=dict(registers=r.registers, spill_store=r.spill_store_bytes,
                                         spill_load=r.spill_load_bytes, smem=r.static_smem_bytes),
                              variant=v.label, nvrtc=nvrtc_version_text())

    # extra: the fifteenth session's c13 variant (reread_t512 with `#pragma unroll 2`, bounded for
    # 3 CTAs per SM), to check whether unrolling put more loads in flight (SASS only, no trace)
    from smemkit.reduction.codegen import Variant, generate
    v = Variant("reread", threads=512)
    src = generate(spec, v, min_blocks=3).replace("#pragma unroll 1\n", "#pragma unroll 2\n")
    mod = compile_module(src, kernel_name(spec, v) + "_u2", arch="sm_90a")
    (HERE / "extra_reread_t512_u2b3.sass").write_text(dump(mod.cubin))
    extra_regs = mod.resources[kernel_name(spec, v)].registers

    table = {}
    for name, r in results.items():
        sass = dump(r["cubin"])
        (HERE / f"{name}.sass").write_text(sass)
        if r["ptx"]:
            (HERE / f"{name}.ptx").write_text(r["ptx"])
        ru = res_usage(r["cubin"])
        smem = ru["smem_static"] + (r["smem_dyn"] or 0)
        row = dict(threads=r["threads"], **ru, smem_dynamic=r["smem_dyn"],
                   occupancy=occupancy(ru["regs"], r["threads"], smem), **sass_stats(sass),
                   main_path=trace(sass, DECISIONS[name]))
        for k in ("ptxas", "variant", "nvrtc"):
            if k in r:
                row[k] = r[k]
        table[name] = row
    (HERE / "stats.json").write_text(json.dumps(table, indent=1))
    lines = [f"triton {triton.__version__}; extra reread_t512 unroll 2 @3: {extra_regs} registers"]
    for name, row in table.items():
        lines.append(f"{name:15s} {json.dumps(row)}")
    (HERE / "stats.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
