"""A ``ModelConfig`` from what a user names: a built-in model, a config.json, or a checkpoint directory.

The planner needs a model's shapes and the bytes of one weight element. ``load_model`` reads the
shapes; this module adds the element size a source declares, so that a float32 checkpoint is
planned at 4 bytes a weight and a bfloat16 one at 2: from config.json's ``dtype`` (``torch_dtype``
in files written by transformers < 5), else, in a checkpoint directory, from the safetensors
headers (the element type holding most of the bytes), else bfloat16. Headers are parsed here by
hand (8-byte little-endian length, then JSON), so planning needs neither torch nor safetensors.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from dataclasses import replace
from pathlib import Path

from smemkit.errors import InvalidArgumentError
from smemkit.offload.models import BUILTIN_MODELS, ModelConfig, canonical_dtype, load_model

CONFIG_NAME = "config.json"
INDEX_NAME = "model.safetensors.index.json"
# safetensors header dtype codes -> the weight dtypes the planner knows (models.DTYPE_BYTES)
HEADER_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
MAX_HEADER_BYTES = 100 * 2**20  # the safetensors format's own limit


def config_dtype(data: dict, where: str) -> str | None:
    """The weight dtype a config.json declares (``dtype``, else ``torch_dtype``), or None."""
    for key in ("dtype", "torch_dtype"):
        if data.get(key) is not None:
            return canonical_dtype(data[key], f"{where}: '{key}'")
    return None


def checkpoint_files(directory: str | Path) -> list[Path]:
    """The safetensors files of a checkpoint directory: those its index names, else every
    ``*.safetensors`` file in it (sorted). An index naming a missing file is an error."""
    root = Path(directory)
    index = root / INDEX_NAME
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidArgumentError(f"{index}: not a safetensors index (a JSON object with a "
                                       f"'weight_map'): {exc}") from exc
        if not isinstance(weight_map, dict):
            raise InvalidArgumentError(f"{index}: 'weight_map' must map tensor names to file names")
        files = [root / name for name in sorted(set(weight_map.values()))]
        missing = [str(f.name) for f in files if not f.is_file()]
        if missing:
            raise InvalidArgumentError(f"{index} names shard(s) that are not in {root}: {', '.join(missing)}")
        return files
    files = sorted(root.glob("*.safetensors"))
    if not files:
        raise InvalidArgumentError(f"checkpoint directory {root} holds no *.safetensors file")
    return files


def safetensors_header(path: str | Path) -> dict:
    """The JSON header of one safetensors file: tensor name -> {dtype, shape, data_offsets}."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            if size > MAX_HEADER_BYTES:
                raise ValueError(f"header of {size} bytes exceeds the format's {MAX_HEADER_BYTES}")
            header = json.loads(f.read(size))
    except (OSError, struct.error, ValueError) as exc:
        raise InvalidArgumentError(f"{path}: not a safetensors file: {exc}") from exc
    if not isinstance(header, dict):
        raise InvalidArgumentError(f"{path}: the safetensors header is not a JSON object")
    header.pop("__metadata__", None)
    return header


def checkpoint_dtype(directory: str | Path) -> str | None:
    """The dtype that holds most of a checkpoint's tensor bytes, as models.DTYPE_BYTES names it."""
    held: Counter[str] = Counter()
    for path in checkpoint_files(directory):
        for name, entry in safetensors_header(path).items():
            try:
                begin, end = entry["data_offsets"]
                held[entry["dtype"]] += int(end) - int(begin)
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidArgumentError(f"{path}: tensor '{name}' has a malformed header entry") from exc
    if not held:
        return None
    code = held.most_common(1)[0][0]
    if code not in HEADER_DTYPES:
        raise InvalidArgumentError(f"checkpoint {directory}: most tensor bytes are {code!r}; the planner "
                                   f"knows {', '.join(HEADER_DTYPES)}")
    return HEADER_DTYPES[code]


def model_config_from_source(spec: str | Path) -> ModelConfig:
    """A built-in model by name, a config.json file, or a checkpoint directory (its config.json),
    with ``dtype_bytes`` as the source declares it (see the module docstring)."""
    text = str(spec)
    if text.lower() in BUILTIN_MODELS:
        return BUILTIN_MODELS[text.lower()]
    path = Path(text)
    directory = path if path.is_dir() else None
    config_path = path / CONFIG_NAME if directory is not None else path
    if directory is not None and not config_path.is_file():
        raise InvalidArgumentError(f"--model '{text}': the directory has no {CONFIG_NAME}")
    cfg = load_model(str(config_path))  # the config's own dtype, bfloat16 when it names none
    data = json.loads(config_path.read_text())  # load_model read and checked it already
    if config_dtype(data, str(config_path)) is None and directory is not None \
            and any(directory.glob("*.safetensors")):
        cfg = replace(cfg, dtype=checkpoint_dtype(directory) or cfg.dtype)
    return replace(cfg, name=text)
