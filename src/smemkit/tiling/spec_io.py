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
from pathlib import Path

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.inputs import code_error, existing_file, read_text, run_python_file
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.pattern import Access, Pattern
from smemkit.tiling.swizzle import Swizzle

_PATTERN_KEYS = {"name", "block", "arrays", "accesses", "description", "regs", "extra_smem"}
_ARRAY_KEYS = {"shape", "dtype", "pad", "swizzle", "base"}
_ACCESS_KEYS = {"array", "index", "width", "op", "loops", "active", "label"}
MAX_DIM = 2**31 - 1
MAX_LOOP_VALUES = 4096
# Swizzle bit counts beyond this span more than the 2**48 offsets any shared array could have.
MAX_SWIZZLE_BITS = 16


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
        steps = range(*bounds)
        if len(steps) > MAX_LOOP_VALUES:
            raise InvalidArgumentError(f"loop {name!r}: {len(steps)} values; at most {MAX_LOOP_VALUES}")
        return tuple(steps)
    if isinstance(value, list) and all(is_int(v) for v in value):
        return tuple(value)
    raise InvalidArgumentError(f"loop {name!r}: give a list of integers or {{start, stop, step}}")


def _int_list(where: str, value, low: int, high: int, length: tuple[int, int]) -> list[int]:
    """``value`` as a list of ``length[0]``..``length[1]`` integers in [low, high]."""
    if not (isinstance(value, list) and length[0] <= len(value) <= length[1]
            and all(is_int(v) and low <= v <= high for v in value)):
        count = f"{length[0]}" if length[0] == length[1] else f"{length[0]}-{length[1]}"
        raise InvalidArgumentError(f"{where}: give a list of {count} integers in [{low}, {high}], "
                                   f"got {value!r}")
    return value


def _string(where: str, value, *, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{where}: must be a string{' or null' if allow_none else ''}, "
                                   f"got {value!r}")
    return value


def pattern_from_dict(data: dict) -> Pattern:
    """Build a :class:`Pattern` from the JSON structure described in the module docstring."""
    _check_keys("pattern", data, _PATTERN_KEYS, {"block", "arrays", "accesses"})
    if not isinstance(data["arrays"], dict) or not isinstance(data["accesses"], list):
        raise InvalidArgumentError("pattern: 'arrays' must be an object of name -> array, "
                                   "'accesses' a list of access objects")
    block = _int_list("pattern: 'block' (threads per dimension, e.g. [32, 8])", data["block"], 1, 1024,
                      (1, 3))
    arrays = {}
    for name, spec in data["arrays"].items():
        _check_keys(f"array {name!r}", spec, _ARRAY_KEYS, {"shape"})
        shape = _int_list(f"array {name!r}: shape", spec["shape"], 1, MAX_DIM, (1, 4))
        swz = spec.get("swizzle")
        if swz is not None:
            swz = _int_list(f"array {name!r}: swizzle [B, M, S] (or null)", swz, -MAX_SWIZZLE_BITS,
                            MAX_SWIZZLE_BITS, (3, 3))
        for key, high in (("pad", MAX_DIM), ("base", MAX_DIM)):
            if key in spec and not (is_int(spec[key]) and 0 <= spec[key] <= high):
                raise InvalidArgumentError(f"array {name!r}: {key} must be an integer in [0, {high}], "
                                           f"got {spec[key]!r}")
        arrays[name] = SmemLayout(tuple(shape), _string(f"array {name!r}: dtype", spec.get("dtype", "fp32")),
                                  spec.get("pad", 0), Swizzle(*swz) if swz else None, spec.get("base", 0))
    accesses = []
    for i, spec in enumerate(data["accesses"]):
        _check_keys(f"access #{i}", spec, _ACCESS_KEYS, {"array", "index"})
        loops = spec.get("loops", {})
        if not isinstance(loops, dict):
            raise InvalidArgumentError(f"access #{i}: loops must be an object of name -> values")
        width = spec.get("width", 32)
        if not is_int(width):
            raise InvalidArgumentError(f"access #{i}: width must be an integer number of bits, got {width!r}")
        accesses.append(Access(_string(f"access #{i}: array", spec["array"]), spec["index"], width,
                               _string(f"access #{i}: op", spec.get("op", "load")),
                               {k: _loop(k, v) for k, v in loops.items()},
                               _string(f"access #{i}: active", spec.get("active"), allow_none=True),
                               _string(f"access #{i}: label", spec.get("label", ""))))
    return Pattern(_string("pattern: name", data.get("name", "pattern")), tuple(block), arrays,
                   tuple(accesses), _string("pattern: description", data.get("description", "")),
                   data.get("regs", 32), data.get("extra_smem", 0))


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
    path = existing_file(spec)
    if path is None:
        raise InvalidArgumentError(f"pattern {str(spec)!r}: not a file; give a .json or .py file or "
                                   f"one of the built-ins: {', '.join(BUILTIN)}")
    if path.suffix == ".json":
        text = read_text(path, "pattern file")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InvalidArgumentError(f"pattern file {path}: not valid JSON: {exc}") from exc
        return _checked(pattern_from_dict, data, path)
    if path.suffix == ".py":
        namespace = run_python_file(path, "pattern file")
        value = namespace.get("PATTERN")
        if value is None and callable(namespace.get("pattern")):
            try:
                value = namespace["pattern"]()
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"pattern file {path}: {exc}") from None
            except Exception as exc:
                raise code_error(path, exc, "pattern file") from None
        if isinstance(value, dict):
            value = _checked(pattern_from_dict, value, path)
        if not isinstance(value, Pattern):
            raise InvalidArgumentError(f"pattern file {path}: define PATTERN (a smemkit.tiling.Pattern "
                                       "or a dict in the JSON layout) or a function pattern() returning one")
        return value
    raise InvalidArgumentError(f"pattern file {path}: suffix must be .json or .py")
