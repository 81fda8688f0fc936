"""Native vs CAS-loop classification, on SASS snippets written from the instruction names that
cuobjdump prints for sm_90a (ATOMS.ADD, ATOMS.POPC.INC.32, ATOMS.CAS, ATOMS.CAST.SPIN[.64]) and,
where cuobjdump is installed, on the real disassembly of our own variants."""

import pytest

from smemkit.atomics import sass
from smemkit.atomics.kernels import Variant
from smemkit.errors import ToolNotFoundError
from smemkit.runtime.paths import find_tool


def listing(name: str, body: str) -> str:
    lines = [f"\t\tFunction : {name}", '\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"']
    for raw in body.strip().splitlines():
        raw = raw.strip()
        if raw.endswith(":"):
            lines.append(raw)
            continue
        addr, text = raw.split(" ", 1)
        lines.append(f"        /*{addr}*/                   {text} ;      /* 0x000000000000000 */")
        lines.append("                                                        /* 0x000fe20000000800 */")
    return "\n".join(lines) + "\n"


NATIVE_ADD = listing("k_add", """
0100 ATOMS.ADD RZ, [R4], R9
0110 ISETP.NE.AND P1, PT, R7, RZ, PT
0120 ATOMS.ADD RZ, [R4], R9
0130 @P1 BRA 0x100
""")

POPC_INC = listing("k_inc", """
0150 ATOMS.POPC.INC.32 RZ, [R4+UR4]
0160 ATOMS.POPC.INC.32 RZ, [R4+UR4]
0170 ISETP.NE.AND P1, PT, R3, RZ, PT
0180 @P1 BRA 0x150
""")

# float atomicAdd on shared memory: load, add, compare-and-store, retry while it failed
FLOAT_ADD_SPIN = listing("k_fadd", """
0160 LDS R4, [R7+UR4]
0170 FADD R5, R4, UR5
0180 ATOMS.CAST.SPIN R5, [R6], R4, R5
0190 ISETP.EQ.U32.AND P0, PT, R5, 0x1, PT
01a0 @!P0 BRA 0x160
01b0 BSYNC B0
""")

SPIN_PRED_DEST = listing("k_spin_pred", """
0200 LDS R2, [R3]
0210 IADD3 R4, R2, 0x1, RZ
0220 ATOMS.CAST.SPIN P0, [R3], R2, R4
0230 @!P0 BRA `(.L_x_0)
""").replace("        /*0200*/", ".L_x_0:\n        /*0200*/")

# a hand-written CAS loop: ATOMS.CAS whose result decides a short backward branch
CAS_RETRY = listing("k_casadd", """
0390 IMAD.IADD R9, R8, 0x1, R5
03a0 YIELD
03b0 ATOMS.CAS R9, [R6], R8, R9
03c0 ISETP.NE.AND P1, PT, R9, R8, PT
03d0 IMAD.MOV.U32 R8, RZ, RZ, R9
03e0 @P1 BRA 0x390
""")

# one CAS per iteration of a long outer loop (the branch does not depend on the CAS): native
CAS_ONCE = listing("k_cas", """
0300 ATOMS.CAS RZ, [R6], R4, R5
0310 VIADD R4, R4, 0x1
0320 ISETP.NE.AND P0, PT, R7, RZ, PT
0330 @P0 BRA 0x100
""")

NO_ATOMICS = listing("k_plain", """
0000 LDC R1, c[0x0][0x28]
0010 EXIT
""")


def test_parse_reads_addresses_predicates_and_operands():
    k = sass.parse_sass(FLOAT_ADD_SPIN)["k_fadd"]
    spin = k.instructions[2]
    assert (spin.addr, spin.opcode, spin.dest) == (0x180, "ATOMS.CAST.SPIN", "R5")
    assert spin.operands == ("R5", "[R6]", "R4", "R5")
    bra = k.instructions[4]
    assert bra.pred == "@!P0" and sass.branch_target(bra, k.labels) == 0x160


def test_label_targets():
    k = sass.parse_sass(SPIN_PRED_DEST)["k_spin_pred"]
    assert k.labels == {".L_x_0": 0x200}
    assert sass.branch_target(k.instructions[-1], k.labels) == 0x200


@pytest.mark.parametrize(("text", "name", "kind", "opcodes"), [
    (NATIVE_ADD, "k_add", "native", ("ATOMS.ADD",)),
    (POPC_INC, "k_inc", "native", ("ATOMS.POPC.INC.32",)),
    (FLOAT_ADD_SPIN, "k_fadd", "cas_loop", ("ATOMS.CAST.SPIN",)),
    (SPIN_PRED_DEST, "k_spin_pred", "cas_loop", ("ATOMS.CAST.SPIN",)),
    (CAS_RETRY, "k_casadd", "cas_loop", ("ATOMS.CAS",)),
    (CAS_ONCE, "k_cas", "native", ("ATOMS.CAS",)),
    (NO_ATOMICS, "k_plain", "none", ()),
])
def test_classify_snippets(text, name, kind, opcodes):
    v = sass.classify_listing(text)[name]
    assert (v.kind, v.opcodes) == (kind, opcodes)


def test_returning_and_op_names():
    sites = sass.classify(sass.parse_sass(NATIVE_ADD + FLOAT_ADD_SPIN + POPC_INC)["k_inc"])
    assert sites[0].op == "POPC.INC" and not sites[0].returning
    spin = sass.classify(sass.parse_sass(FLOAT_ADD_SPIN)["k_fadd"])[0]
    assert spin.op == "CAST.SPIN" and spin.returning and spin.role == "cas_loop"
    pred = sass.classify(sass.parse_sass(SPIN_PRED_DEST)["k_spin_pred"])[0]
    assert not pred.returning


def test_mixed_kernel():
    text = listing("k_mix", """
0100 ATOMS.ADD RZ, [R4], R9
0160 LDS R4, [R7]
0170 FADD R5, R4, R2
0180 ATOMS.CAST.SPIN R5, [R6], R4, R5
0190 ISETP.EQ.U32.AND P0, PT, R5, 0x1, PT
01a0 @!P0 BRA 0x160
""")
    v = sass.classify_listing(text)["k_mix"]
    assert v.kind == "mixed" and v.sites == 2


def test_dump_sass_without_cuobjdump_is_a_clear_error(monkeypatch):
    from smemkit.runtime import compiler

    monkeypatch.setattr(compiler, "find_tool", lambda name: None)
    with pytest.raises(ToolNotFoundError, match="cuobjdump was not found"):
        compiler.dump_sass(b"\x7fELF")


needs_cuobjdump = pytest.mark.skipif(None in (find_tool("cuobjdump"), find_tool("nvdisasm")),
                                     reason="cuobjdump/nvdisasm not installed (pip install "
                                     "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


@needs_cuobjdump
@pytest.mark.parametrize(("variant", "kind", "opcode"), [
    ("add.int32.noret", "native", "ATOMS.ADD"),
    ("inc.int32.noret", "native", "ATOMS.POPC.INC.32"),
    ("inc.int32.ret", "native", "ATOMS.ADD"),
    ("add.float32.noret", "cas_loop", "ATOMS.CAST.SPIN"),
    ("add.uint64.noret", "cas_loop", "ATOMS.CAST.SPIN.64"),
    ("cas.int32.ret", "native", "ATOMS.CAS"),
    ("cas_add.int32.noret", "cas_loop", "ATOMS.CAS"),
])
def test_real_sass_of_our_variants(variant, kind, opcode):
    """What NVRTC 13 + ptxas emit for sm_90a (checked without a GPU: cuobjdump only disassembles)."""
    verdicts = sass.classify_cubin(Variant.parse(variant).compile("sm_90a").cubin)
    v = verdicts["atom_distinct_banks"]
    assert (v.kind, v.opcodes) == (kind, (opcode,))


@needs_cuobjdump
def test_real_sass_of_the_histogram_kernels():
    """The pair is one token apart in SASS too (POPC.INC vs ADD); the model-guided hist_lane keeps
    the increment form; every histogram atomic is native (no CAS loop), for both key widths."""
    from smemkit.atomics import kernels as K

    verdicts = sass.classify_cubin(K.compile_histograms("sm_90a").cubin)
    want = {"hist_inc": "ATOMS.POPC.INC.32", "hist_add": "ATOMS.ADD", "hist_private": "ATOMS.POPC.INC.32",
            "hist_aggregate": "ATOMS.ADD", "hist_lane": "ATOMS.POPC.INC.32"}
    for kernel, opcode in want.items():
        for key_bytes in K.HIST_KEY_BYTES:
            entry = K.hist_entry(kernel, key_bytes)
            v = verdicts[entry]
            assert (v.kind, v.opcodes) == ("native", (opcode,)), entry
            # 4 (32-bit) or 16 (8-bit) keys per uint4, plus the one-key tail
            assert v.sites == (5 if key_bytes == 4 else 17), entry


@needs_cuobjdump
def test_real_sass_of_the_prefetching_lane_histogram():
    """hist_lane_pf counts a uint4 in the loop and the last one after it (the loop loads the next
    uint4 before counting the current one): twice the atomics sites of hist_lane, same opcode."""
    from smemkit.atomics import kernels as K

    verdicts = sass.classify_cubin(K.compile_histograms("sm_90a").cubin)
    for key_bytes, sites in ((4, 9), (1, 33)):
        v = verdicts[K.hist_entry("hist_lane_pf", key_bytes)]
        assert (v.kind, v.opcodes, v.sites) == ("native", ("ATOMS.POPC.INC.32",), sites)


@needs_cuobjdump
def test_real_sass_of_the_fixed_lane_histogram():
    """hist_lane_fix adds a run's count with one ATOMS.ADD (two sites: loop and last uint4) and
    otherwise increments as hist_lane_pf does."""
    from smemkit.atomics import kernels as K

    verdicts = sass.classify_cubin(K.compile_histograms("sm_90a").cubin)
    for key_bytes, sites in ((4, 11), (1, 35)):
        v = verdicts[K.hist_entry("hist_lane_fix", key_bytes)]
        assert v.kind == "native" and set(v.opcodes) == {"ATOMS.POPC.INC.32", "ATOMS.ADD"}
        assert v.sites == sites
