"""Printing rich tables so every number stays whole at any terminal width (80 columns included).

A table is printed as built when it fits the console: no line wider than the console and no cell
cut short (rich marks a cut cell with "…"; text may still wrap between words). Otherwise it is
printed in a narrow layout:

* ``split``: the table in parts, one under the other, each the key (first) columns and as
  many of the others as fit: for grids of numbers (a value per warp count, per profile);
* ``records``: one block per row, each cell on its own line under its column's header: for rows
  that carry a sentence (a verdict), and the fallback when even one column per part is too wide.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Literal

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

CUT = "…"


def fits(table: Table, width: int) -> bool:
    """Whether ``table`` renders within ``width`` columns with no cell cut short."""
    probe = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False,
                    legacy_windows=False)
    probe.print(table)
    text = probe.file.getvalue()
    return CUT not in text and all(len(line) <= width for line in text.splitlines())


def _plain(header: object) -> str:
    return header.plain if isinstance(header, Text) else str(header)


def _cells(table: Table) -> list[list]:
    return [list(c.cells) for c in table.columns]


def _part(table: Table, indices: list[int], title: str | None) -> Table:
    """A table of ``table``'s columns ``indices`` (same headers, alignment and cells)."""
    cells = _cells(table)
    part = Table(title=title, box=table.box, show_lines=table.show_lines)
    for i in indices:
        part.columns.append(dataclasses.replace(table.columns[i], _index=len(part.columns), _cells=[]))
    for r in range(table.row_count):
        part.add_row(*(cells[i][r] for i in indices))
    return part


def _natural_widths(table: Table) -> list[int]:
    """Each column's width unwrapped: its widest cell or header."""
    probe = Console(width=10_000, file=io.StringIO(), color_system=None, legacy_windows=False)
    options = probe.options
    return [max(Measurement.get(probe, options, probe.render_str(c) if isinstance(c, str) else c).maximum
                for c in (column.header, *column.cells))
            for column in table.columns]


def split(table: Table, width: int, keys: int = 1) -> list[Table] | None:
    """``table`` as parts that fit ``width``, each with the first ``keys`` columns and the others
    shared out evenly over as few parts as fit; None when no such split fits."""
    natural = _natural_widths(table)
    others = list(range(keys, len(table.columns)))
    # a boxed table with padding 1 takes its columns' widths + 3 each + 1
    key_width = sum(natural[:keys]) + 3 * keys + 1
    for count in range(2, len(others) + 1):
        size = -(-len(others) // count)
        groups = [others[i:i + size] for i in range(0, len(others), size)]
        if all(key_width + sum(natural[i] + 3 for i in g) <= width for g in groups):
            parts = [_part(table, [*range(keys), *g], table.title if n == 0 else None)
                     for n, g in enumerate(groups)]
            if all(fits(part, width) for part in parts):
                return parts
    return None


def records(table: Table) -> Table:
    """``table`` as one block per row: the first cell as the block's heading, then
    ``header  value`` lines for the others (values wrap between words, never cut)."""
    out = Table.grid(padding=(0, 1))
    out.add_column(no_wrap=True, style="dim")
    out.add_column(overflow="fold")
    columns: list[Column] = table.columns
    cells = _cells(table)
    for r in range(table.row_count):
        if r:
            out.add_row("", "")
        out.add_row(Text(_plain(columns[0].header), style="bold"), cells[0][r])
        for column, values in zip(columns[1:], cells[1:], strict=True):
            out.add_row(f"  {_plain(column.header)}", values[r])
    return out


def show(console: Console, table: Table, narrow: Literal["split", "records"] = "split",
         keys: int = 1) -> None:
    """Print ``table`` as built when it fits ``console``, else in the ``narrow`` layout."""
    width = console.width
    if fits(table, width):
        console.print(table)
        return
    parts = split(table, width, keys) if narrow == "split" else None
    if parts is not None:
        for part in parts:
            console.print(part)
        return
    if table.title:
        console.print(table.title, style="bold", highlight=False)
    console.print(records(table))
