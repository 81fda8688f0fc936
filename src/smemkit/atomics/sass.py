"""Which shared-memory atomics are native and which are CAS retry loops, read from SASS.

``smemkit.runtime.compiler.dump_sass`` writes a cubin to a temporary file and runs
``cuobjdump -sass`` on it (no GPU is
needed: cuobjdump only disassembles; it is found on PATH, under $CUDA_HOME/bin, or in the
``nvidia-cuda-cuobjdump`` wheel, and needs ``nvdisasm`` beside it). ``parse_sass`` reads the
listing into instructions per kernel and ``classify`` finds every ``ATOMS`` instruction and says:

* ``native``: one ``ATOMS.<OP>`` does the operation (``ATOMS.ADD``, ``ATOMS.POPC.INC.32``,
  ``ATOMS.MAX.S32``, ``ATOMS.EXCH``, a single ``ATOMS.CAS`` ...);
* ``cas_loop``: the operation is a compare-and-swap retried until it succeeds: an
  ``ATOMS.CAST.SPIN`` (the form ptxas emits for its own retry loops) or an ``ATOMS.CAS`` whose
  result feeds the predicate of a short backward branch.

Listing format (cuobjdump 13.0, sm_90a): a ``Function : NAME`` line per kernel, then one line
per instruction ``/*0160*/  [@P0 ]OPCODE operands ;  /* 0x...encoding */``, sometimes followed
by a line holding only the second half of the encoding; branch targets are absolute offsets
(``BRA 0x190``) or labels (``BRA `(.L_x_3)``) with ``.L_x_3:`` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from smemkit.runtime.compiler import dump_sass

_INSN_RE = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]{4,})\*/\s+(?P<pred>@!?U?P[0-9T]+\s+)?(?P<text>[^;]*?)\s*;"
)
_FUNC_RE = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)")
_LABEL_RE = re.compile(r"^\s*(?P<label>\.L_x_\d+|\.L_\w+):\s*$")
_TARGET_RE = re.compile(r"`\((?P<label>[^)]+)\)|(?P<hex>0x[0-9a-fA-F]+)")
_REG_RE = re.compile(r"\bU?R\d+\b|\bU?P\d\b")

RETRY_WINDOW = 8  # instructions after the CAS in which the backward branch must come
RETRY_SPAN = 0x180  # how far back (bytes) the branch may jump: a tight loop, not the outer loop


@dataclass(frozen=True)
class Instruction:
    addr: int
    pred: str  # "" or e.g. "@!P0"
    opcode: str  # the dotted mnemonic, e.g. "ATOMS.CAST.SPIN.64"
    operands: tuple[str, ...]

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def dest(self) -> str | None:
        return self.operands[0] if self.operands else None

    def regs_read(self) -> set[str]:
        """Registers in source operands (everything after the first operand)."""
        found: set[str] = set()
        for op in self.operands[1:]:
            found.update(_REG_RE.findall(op))
        return found


@dataclass
class Kernel:
    name: str
    instructions: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)


def _split_operands(rest: str) -> tuple[str, ...]:
    parts, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return tuple(parts)


def parse_sass(text: str) -> dict[str, Kernel]:
    """Kernels of a ``cuobjdump -sass`` listing, in order of appearance."""
    kernels: dict[str, Kernel] = {}
    current: Kernel | None = None
    pending_labels: list[str] = []
    for line in text.splitlines():
        m = _FUNC_RE.match(line)
        if m:
            current = kernels.setdefault(m.group("name"), Kernel(m.group("name")))
            pending_labels = []
            continue
        if current is None:
            continue
        m = _LABEL_RE.match(line)
        if m:
            pending_labels.append(m.group("label"))
            continue
        m = _INSN_RE.match(line)
        if not m:
            continue
        text_ = m.group("text").strip()
        if not text_:
            continue
        opcode, _, rest = text_.partition(" ")
        insn = Instruction(int(m.group("addr"), 16), (m.group("pred") or "").strip(), opcode,
                           _split_operands(rest))
        for label in pending_labels:
            current.labels[label] = insn.addr
        pending_labels = []
        current.instructions.append(insn)
    return kernels


def branch_target(insn: Instruction, labels: dict[str, int]) -> int | None:
    if insn.base not in ("BRA", "JMP"):
        return None
    m = _TARGET_RE.search(" ".join(insn.operands))
    if not m:
        return None
    if m.group("label"):
        return labels.get(m.group("label"))
    return int(m.group("hex"), 16)


@dataclass(frozen=True)
class AtomSite:
    """One ATOMS instruction and what it is part of."""

    addr: int
    opcode: str
    returning: bool
    role: str  # native | cas_loop

    @property
    def op(self) -> str:
        """The operation after ATOMS: ADD, POPC.INC, MAX, CAS, CAST.SPIN ..."""
        rest = self.opcode.split(".", 1)[1] if "." in self.opcode else ""
        keep = [p for p in rest.split(".") if p not in ("32", "64", "128", "S32", "U32", "S64", "U64",
                                                        "F32", "F64", "E", "STRONG", "GPU", "SM")]
        return ".".join(keep)


def _in_retry_loop(kernel: Kernel, i: int) -> bool:
    """Is instruction ``i`` (an ATOMS compare-and-swap) retried by a short backward branch?"""
    cas = kernel.instructions[i]
    spin = ".CAST" in cas.opcode
    tainted = {cas.dest} if cas.dest and cas.dest not in ("RZ", "PT") else set()
    for insn in kernel.instructions[i + 1 : i + 1 + RETRY_WINDOW]:
        target = branch_target(insn, kernel.labels)
        if target is not None:
            if insn.pred and target <= cas.addr and cas.addr - target <= RETRY_SPAN:
                pred_reg = insn.pred.lstrip("@!")
                if spin or pred_reg in tainted:
                    return True
            return False  # any other branch ends the search
        if insn.regs_read() & tainted and insn.dest:
            tainted.add(insn.dest)
            second = insn.operands[1] if len(insn.operands) > 1 else ""
            if insn.base in ("ISETP", "FSETP", "DSETP", "PLOP3") and re.fullmatch(r"U?P\d", second):
                tainted.add(second)  # ISETP.* Pd, Pq, ...: the second operand is a destination too
    return False


def classify(kernel: Kernel) -> list[AtomSite]:
    """Every ATOMS instruction of ``kernel`` with its role."""
    sites = []
    for i, insn in enumerate(kernel.instructions):
        if insn.base != "ATOMS":
            continue
        is_cas = ".CAS" in insn.opcode
        role = "cas_loop" if is_cas and _in_retry_loop(kernel, i) else "native"
        returning = bool(insn.dest) and insn.dest not in ("RZ",) and not insn.dest.startswith("P")
        sites.append(AtomSite(insn.addr, insn.opcode, returning, role))
    return sites


@dataclass(frozen=True)
class KernelVerdict:
    """Summary for one kernel: native, cas_loop, mixed or none (no shared atomics)."""

    kernel: str
    kind: str
    opcodes: tuple[str, ...]
    sites: int

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "kind": self.kind, "opcodes": list(self.opcodes), "sites": self.sites}


def summarize(kernel: Kernel) -> KernelVerdict:
    sites = classify(kernel)
    roles = {s.role for s in sites}
    kind = "none" if not sites else ("mixed" if len(roles) > 1 else roles.pop())
    return KernelVerdict(kernel.name, kind, tuple(sorted({s.opcode for s in sites})), len(sites))


def classify_listing(text: str) -> dict[str, KernelVerdict]:
    return {name: summarize(k) for name, k in parse_sass(text).items()}


# ---- running cuobjdump -------------------------------------------------------------------------


def classify_cubin(cubin: bytes) -> dict[str, KernelVerdict]:
    return classify_listing(dump_sass(cubin))
