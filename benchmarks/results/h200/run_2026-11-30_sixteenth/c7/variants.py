"""Sixteenth session: reread_t512 variants for lars / pearson_bwd with the whole-vector fast path
(c16's) and its element loops unrolled so the loads of several vectors are in flight (the SASS
comparison in ../sass/FINDINGS.md: Inductor's lars kernel waits 3 times per row with 2|2|6 loads
out, reread_t512 4 times with 2|2|3|3)."""
import re

from smemkit.reduction.codegen import Variant, generate

LOOP = "#pragma unroll 1\n  for (int _i = threadIdx.x; _i < _s.nvec; _i += THREADS) {\n"


def fast_path(src: str, unroll: int) -> str:
    out, pos, n = [], 0, 0
    while True:
        i = src.find(LOOP, pos)
        if i < 0:
            break
        j = src.index("\n  }\n", i) + len("\n  }\n")
        loop = src[i:j]
        fast = re.sub(r"load_vector<(true|false)>\((p_\w+), _v, _s, (_l2_keep)\)", r"load_full_vector<\1>(\2, _v, \3)", loop)
        fast = fast.replace("owns_index(_i, _s)", "true")
        fast = fast.replace("#pragma unroll 1", f"#pragma unroll {unroll}")
        out.append(src[pos:i])
        out.append("  if (_s.nfull == _s.nvec) {  // experiment: whole vectors only\n" + fast
                   + "  } else {\n" + loop + "  }\n")
        pos, n = j, n + 1
    out.append(src[pos:])
    assert n >= 2, n
    return "".join(out)


def source(spec, unroll: int, blocks: int) -> str:
    return fast_path(generate(spec, Variant("reread", threads=512), min_blocks=blocks), unroll)


LOAD = re.compile(r"^(\s*)const float4 (\w+) = (load_full_vector<\w+>\(p_\w+, )_v(, _l2_keep\));$")


def paired(src: str) -> str:
    """Each fast loop (from fast_path with unroll 1) takes two vectors per trip: the loads of both
    are issued first (the second duplicates the first when there is no second), then the body
    runs for each (the second under `if (_two)`), so 2 x (inputs) 16-byte loads are in flight."""
    out, pos, n = [], 0, 0
    marker = "  if (_s.nfull == _s.nvec) {  // experiment: whole vectors only\n"
    while True:
        i = src.find(marker, pos)
        if i < 0:
            break
        a = i + len(marker)
        head = src.index("{\n", src.index("for (int _i", a)) + 2
        end = src.index("\n  }\n  } else {\n", head)
        body = src[head:end].split("\n")
        assert body[0].strip() == "const long long _v = _s.v0 + _i;", body[0]
        loads, names = [], []
        for line in body[1:]:
            m = LOAD.match(line)
            if m:
                names.append(m.group(2))
                for j in (0, 1):
                    loads.append(f"    const float4 {m.group(2)}_{j} = {m.group(3)}_v{j}{m.group(4)};")
        rest = [ln for ln in body[1:] if not LOAD.match(ln)]

        def copy(j):
            binds = " ".join(f"const float4 {nm} = {nm}_{j};" for nm in names)
            return (f"    {{\n    const long long _v = _v{j}; {binds}\n" + "\n".join(rest) + "\n    }")
        loop = ("#pragma unroll 1\n  for (int _i = threadIdx.x; _i < _s.nvec; _i += 2 * THREADS) {\n"
                "    const bool _two = _i + THREADS < _s.nvec;\n"
                "    const long long _v0 = _s.v0 + _i;\n"
                "    const long long _v1 = _two ? _v0 + THREADS : _v0;\n"
                + "\n".join(loads) + "\n" + copy(0) + "\n    if (_two)\n" + copy(1) + "\n  }\n")
        out.append(src[pos:i]); out.append(marker + loop)
        pos, n = src.index("\n  }\n  } else {\n", head) + len("\n  }\n"), n + 1
    out.append(src[pos:])
    assert n >= 2, n
    return "".join(out)


def paired_source(spec, blocks: int) -> str:
    return paired(source(spec, 1, blocks))
