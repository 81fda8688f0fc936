"""Rich tables and JSON-ready dicts for tiling reports, advice and occupancy (used by the CLI)."""

from __future__ import annotations

from collections import Counter

from rich.markup import escape
from rich.table import Table

from smemkit.tiling.advisor import Advice, Candidate
from smemkit.tiling.banks import WarpAccess
from smemkit.tiling.occupancy import Occupancy
from smemkit.tiling.pattern import AccessReport, Instruction, PatternReport


def _loop_text(inst: Instruction) -> str:
    return ", ".join(f"{k}={v}" for k, v in inst.loop.items()) or "-"


def _ranges(values: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    out, start, prev = [], None, None
    for v in sorted(values):
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            out.append(f"{start}-{prev}" if prev > start else str(start))
            start = prev = v
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(out)


def summary_table(report: PatternReport) -> Table:
    table = Table(title=escape(f"{report.pattern.name}: block {'x'.join(map(str, report.pattern.block))}, "
                        f"{report.pattern.warps} warp(s)"))
    for col in ("access", "array layout", "op", "bits", "instr", "wavefronts", "ideal", "degree",
                "worst", "broadcasts"):
        table.add_column(col, justify="left" if col in ("access", "array layout", "op") else "right")
    for a in report.accesses:
        table.add_row(escape(a.access.title), escape(a.layout.describe()), a.access.op, str(a.access.width),
                      str(len(a.instructions)), str(a.wavefronts), str(a.ideal), f"{a.degree:.2f}",
                      f"{a.worst.result.degree:.0f}x", str(a.broadcasts))
    return table


def instruction_table(access: AccessReport, every: bool = False) -> Table:
    """Per-instruction wavefronts; by default instructions with equal results are grouped."""
    table = Table(title=escape(f"per-instruction wavefronts: {access.access.title}"))
    if every:
        for col in ("warp", "loop", "wavefronts", "ideal", "broadcasts"):
            table.add_column(col, justify="right")
        for inst in access.instructions:
            r = inst.result
            table.add_row(str(inst.warp), _loop_text(inst), str(r.wavefronts), str(r.ideal),
                          str(r.broadcasts))
        return table
    for col in ("wavefronts", "ideal", "instructions", "warps", "first loop values"):
        table.add_column(col, justify="right")
    groups: dict[tuple[int, int], list[Instruction]] = {}
    for inst in access.instructions:
        groups.setdefault((inst.result.wavefronts, inst.result.ideal), []).append(inst)
    for (wf, ideal), insts in sorted(groups.items(), reverse=True):
        table.add_row(str(wf), str(ideal), str(len(insts)), _ranges(list({i.warp for i in insts})),
                      _loop_text(insts[0]))
    return table


def bank_table(result: WarpAccess, title: str) -> Table:
    """Which lanes hit which 4-byte word of each bank, phase by phase."""
    table = Table(title=escape(title))
    table.add_column("phase", justify="right")
    table.add_column("bank", justify="right")
    table.add_column("words", justify="right")
    table.add_column("word address / 4 (lanes)")
    for n, phase in enumerate(result.phases):
        if not phase.lanes:
            continue
        label = escape(f"{n} [lanes {_ranges(list(phase.lanes))}]")
        for bank, words in phase.banks.items():
            cells = " ".join(f"{w}({_ranges(list(lanes))})" for w, lanes in words.items())
            style = "red" if len(words) > 1 else None
            table.add_row(label, str(bank), str(len(words)), escape(cells), style=style)
            label = ""
    return table


def _fix_text(c: Candidate | None) -> str:
    return "-" if c is None else f"{c.summary} (+{c.added_bytes} B)"


def advice_table(advice: list[Advice]) -> Table:
    table = Table(title="advice (smallest padding / swizzle that makes every access conflict-free)")
    for col in ("array", "wavefronts now / ideal", "padding", "swizzle", "blocks/SM now", "after best",
                "occupancy now -> after"):
        table.add_column(col)
    for a in advice:
        now = a.occupancy_before
        if a.conflict_free:
            table.add_row(escape(a.array), f"{a.wavefronts} / {a.ideal}", "conflict-free", "-",
                          str(now.blocks_per_sm), "-", f"{now.occupancy:.0%}")
            continue
        best = a.best
        after = best.occupancy_after if best else None
        swz = _fix_text(a.swizzles[0]) if a.swizzles else _fix_text(a.combined)
        table.add_row(escape(a.array), f"{a.wavefronts} / {a.ideal}", _fix_text(a.padding), swz,
                      str(now.blocks_per_sm), str(after.blocks_per_sm) if after else "none found",
                      f"{now.occupancy:.0%} -> {after.occupancy:.0%}" if after else "-")
    return table


def occupancy_table(occ: Occupancy) -> Table:
    table = Table(title=f"occupancy on {occ.arch}: {occ.threads} threads, {occ.regs} regs, {occ.smem} B smem")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in occ.limits.items():
        mark = " (limit)" if name in occ.limiting else ""
        shown = "unlimited" if value is None else str(value)
        label = {"warps": "warp slots", "blocks": "block cap"}.get(name, name.replace("_", " "))
        table.add_row(f"blocks by {label}", shown + mark)
    table.add_row("blocks per SM", str(occ.blocks_per_sm))
    table.add_row("active warps / max", f"{occ.active_warps} / {occ.max_warps}")
    table.add_row("occupancy", f"{occ.occupancy:.1%}")
    table.add_row("registers per block (allocated)", str(occ.regs_per_block))
    table.add_row("smem per block (charged, incl. 1 KB reserved)", str(occ.smem_per_block))
    table.add_row("smem per SM (carveout used)", str(occ.smem_per_sm))
    if occ.cluster is not None:
        table.add_row(f"max active clusters of {occ.cluster}", str(occ.max_active_clusters))
    return table


def occupancy_dict(occ: Occupancy) -> dict:
    return {"arch": occ.arch, "threads": occ.threads, "regs": occ.regs, "smem": occ.smem,
            "blocks_per_sm": occ.blocks_per_sm, "limits": occ.limits, "limiting": list(occ.limiting),
            "active_warps": occ.active_warps, "max_warps": occ.max_warps, "occupancy": occ.occupancy,
            "regs_per_block": occ.regs_per_block, "smem_per_block": occ.smem_per_block,
            "smem_per_sm": occ.smem_per_sm, "cluster": occ.cluster,
            "max_active_clusters": occ.max_active_clusters, "notes": list(occ.notes)}


def report_dict(report: PatternReport, advice: list[Advice] | None) -> dict:
    accesses = []
    for a in report.accesses:
        counts = Counter((i.result.wavefronts, i.result.ideal) for i in a.instructions)
        accesses.append({
            "label": a.access.title, "array": a.access.array, "layout": a.layout.describe(),
            "op": a.access.op, "width": a.access.width, "instructions": len(a.instructions),
            "wavefronts": a.wavefronts, "ideal": a.ideal, "degree": a.degree, "broadcasts": a.broadcasts,
            "worst": {"warp": a.worst.warp, "loop": dict(a.worst.loop),
                      "wavefronts": a.worst.result.wavefronts, "ideal": a.worst.result.ideal},
            "histogram": [{"wavefronts": wf, "ideal": ideal, "count": n}
                          for (wf, ideal), n in sorted(counts.items())],
        })
    out = {"pattern": report.pattern.name, "block": list(report.pattern.block),
           "conflict_free": report.conflict_free, "wavefronts": report.wavefronts, "ideal": report.ideal,
           "accesses": accesses}
    if advice is not None:
        out["advice"] = [{
            "array": a.array, "wavefronts": a.wavefronts, "ideal": a.ideal, "conflict_free": a.conflict_free,
            "padding": _candidate_dict(a.padding), "swizzles": [_candidate_dict(c) for c in a.swizzles],
            "combined": _candidate_dict(a.combined), "occupancy_before": occupancy_dict(a.occupancy_before),
        } for a in advice]
    return out


def _candidate_dict(c: Candidate | None) -> dict | None:
    if c is None:
        return None
    return {"fix": c.summary, "pad": c.layout.pad,
            "swizzle": str(c.layout.transform) if c.layout.transform else None,
            "added_bytes": c.added_bytes, "wavefronts": c.wavefronts,
            "blocks_per_sm_after": c.occupancy_after.blocks_per_sm,
            "occupancy_after": c.occupancy_after.occupancy}
