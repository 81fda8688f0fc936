"""Load a pattern spec: a built-in name, a JSON file, or a Python file that defines one.

JSON (all index/predicate expressions are strings evaluated by :mod:`smemkit.tiling.expr`)::

    {"name": "transpose", "block": [32, 8], "regs": 32,
     "arrays": {"tile": {"shape": [32, 32], "dtype": "fp32", "pad": 0, "swizzle": [5, 0, 5]}},
     "accesses": [{"array": "tile", "index": "tx, ty + j", "width": 32, "op": "load",
                   "loops": {"j": [0, 8, 16, 24]}, "active": "ty < 4", "label": "column read"}]}

A loop may also be ``{"start": 0, "stop": 32, "step": 8}``. A Python file is executed (it is
code you trust, like any script) and must define ``PATTERN`` (a :class:`Pattern`) or a function
``pattern()`` returning one; there the index may be any callable taking the variables dict.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.pattern import Access, Pattern
from smemkit.tiling.swizzle import Swizzle

_PATTERN_KEYS = {"name", "block", "arrays", "accesses", "description", "regs", "extra_smem"}
_ARRAY_KEYS = {"shape", "dtype", "pad", "swizzle", "base"}
_ACCESS_KEYS = {"array", "index", "width", "op", "loops", "active", "label"}


def _check_keys(where: str, data: dict, allowed: set[str], required: set[str]) -> None:
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{where}: must be a JSON object with keys {', '.join(sorted(allowed))}")
    extra = set(data) - allowed
    if extra:
        raise InvalidArgumentError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; "
                                   f"allowed: {', '.join(sorted(allowed))}")
    missing = required - set(data)
    if missing:
        raise InvalidArgumentError(f"{where}: missing key(s) {', '.join(sorted(missing))}")


def _loop(name: str, value) -> tuple[int, ...]:
    if isinstance(value, dict):
        _check_keys(f"loop {name!r}", value, {"start", "stop", "step"}, {"stop"})
        bounds = (value.get("start", 0), value["stop"], value.get("step", 1))
        if not all(is_int(b) for b in bounds) or bounds[2] == 0:
            raise InvalidArgumentError(f"loop {name!r}: start/stop/step must be integers, step not 0")
        return tuple(range(*bounds))
    if isinstance(value, list):
        return tuple(value)
    raise InvalidArgumentError(f"loop {name!r}: give a list of integers or {{start, stop, step}}")


def pattern_from_dict(data: dict) -> Pattern:
    """Build a :class:`Pattern` from the JSON structure described in the module docstring."""
    _check_keys("pattern", data, _PATTERN_KEYS, {"block", "arrays", "accesses"})
    if not isinstance(data["arrays"], dict) or not isinstance(data["accesses"], list):
        raise InvalidArgumentError("pattern: 'arrays' must be an object of name -> array, "
                                   "'accesses' a list of access objects")
    if not isinstance(data["block"], list):
        raise InvalidArgumentError("pattern: 'block' must be a list of 1-3 sizes, e.g. [32, 8]")
    arrays = {}
    for name, spec in data["arrays"].items():
        _check_keys(f"array {name!r}", spec, _ARRAY_KEYS, {"shape"})
        swz = spec.get("swizzle")
        if swz is not None and (not isinstance(swz, list) or len(swz) != 3):
            raise InvalidArgumentError(f"array {name!r}: swizzle must be [B, M, S] or null")
        arrays[name] = SmemLayout(tuple(spec["shape"]), spec.get("dtype", "fp32"), spec.get("pad", 0),
                                  Swizzle(*swz) if swz else None, spec.get("base", 0))
    accesses = []
    for i, spec in enumerate(data["accesses"]):
        _check_keys(f"access #{i}", spec, _ACCESS_KEYS, {"array", "index"})
        loops = {k: _loop(k, v) for k, v in spec.get("loops", {}).items()}
        accesses.append(Access(spec["array"], spec["index"], spec.get("width", 32), spec.get("op", "load"),
                               loops, spec.get("active"), spec.get("label", "")))
    return Pattern(data.get("name", "pattern"), tuple(data["block"]), arrays, tuple(accesses),
                   data.get("description", ""), data.get("regs", 32), data.get("extra_smem", 0))


def _checked(build, data, path: Path) -> Pattern:
    """Build a pattern from user data; malformed fields become one clear error naming the file."""
    try:
        return build(data)
    except InvalidArgumentError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise InvalidArgumentError(f"pattern file {path}: malformed field: {exc!r} (see docs/tiling.md "
                                   "for the layout)") from exc


def load_pattern(spec: str | Path) -> Pattern:
    """A built-in example name, a ``.json`` file, or a ``.py`` file defining PATTERN / pattern()."""
    if isinstance(spec, str) and spec in BUILTIN:
        return BUILTIN[spec]()
    path = Path(spec)
    if not path.is_file():
        raise InvalidArgumentError(f"pattern {str(spec)!r}: not a file; give a .json or .py file or "
                                   f"one of the built-ins: {', '.join(BUILTIN)}")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:  # invalid JSON or not UTF-8
            raise InvalidArgumentError(f"pattern file {path}: not valid JSON: {exc}") from exc
        return _checked(pattern_from_dict, data, path)
    if path.suffix == ".py":
        namespace = runpy.run_path(str(path))
        value = namespace.get("PATTERN")
        if value is None and callable(namespace.get("pattern")):
            value = namespace["pattern"]()
        if isinstance(value, dict):
            value = _checked(pattern_from_dict, value, path)
        if not isinstance(value, Pattern):
            raise InvalidArgumentError(f"pattern file {path}: define PATTERN (a smemkit.tiling.Pattern "
                                       "or a dict in the JSON layout) or a function pattern() returning one")
        return value
    raise InvalidArgumentError(f"pattern file {path}: suffix must be .json or .py")
