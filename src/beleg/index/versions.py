"""Index versions side by side: build a new configuration beside the live one, switch atomically.

An index directory holds one or more *versions*, each a complete index (``beleg.json`` +
``catalog.sqlite``) named by its configuration hash (:attr:`IndexConfig.index_version`)::

    kb/
      beleg.json, catalog.sqlite     the first version (an index that was never reindexed)
      versions/3f2a9c1d07be/         a version built by `beleg reindex`
      LIVE                           which one readers open: "." or "versions/3f2a9c1d07be"

``reindex`` builds a new version from the live version's stored documents (no source
files needed); ``switch`` rewrites ``LIVE`` with one atomic rename, so a reader opens
either the old or the new version, never a mixture; ``gc`` deletes the versions that are
not live. An open :class:`KnowledgeBase` keeps the version it opened until reopened.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, IndexStateError

LIVE_FILE = "LIVE"
VERSIONS_DIR = "versions"
CONFIG_FILE = "beleg.json"
CATALOG_FILE = "catalog.sqlite"
_FLAT = "."


@dataclass(frozen=True, slots=True)
class VersionInfo:
    version: str
    path: Path
    live: bool
    config: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "path": str(self.path), "live": self.live, "config": self.config}


def _read_config(folder: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def live_dir(root: Path) -> Path:
    """The folder of the live version (the root itself for an index never reindexed)."""
    marker = root / LIVE_FILE
    if not marker.exists():
        return root
    rel = marker.read_text(encoding="utf-8").strip() or _FLAT
    folder = (root / rel).resolve()
    if not folder.is_relative_to(root.resolve()) or not (folder / CONFIG_FILE).exists():
        raise IndexStateError(f"{marker} points at {rel!r}, which is not an index version of {root}")
    return folder


def list_versions(root: Path) -> list[VersionInfo]:
    """Every complete version in ``root``, the live one first."""
    live = live_dir(root).resolve() if (root / CONFIG_FILE).exists() or (root / LIVE_FILE).exists() else None
    folders = [root] if (root / CONFIG_FILE).exists() else []
    if (root / VERSIONS_DIR).is_dir():
        folders += sorted(p for p in (root / VERSIONS_DIR).iterdir() if (p / CONFIG_FILE).exists())
    out = []
    for folder in folders:
        config = _read_config(folder)
        if config is None:
            continue
        out.append(VersionInfo(str(config.get("index_version")), folder, folder.resolve() == live, config))
    return sorted(out, key=lambda v: not v.live)


def version_dir(root: Path, version: str | None) -> Path:
    """The folder of ``version`` (None: the live one); a clear error names the versions there are."""
    if version is None or version == "live":
        return live_dir(root)
    for info in list_versions(root):
        if info.version == version or info.version.startswith(version) and len(version) >= 4:
            return info.path
    known = ", ".join(v.version + (" (live)" if v.live else "") for v in list_versions(root)) or "none"
    raise ConfigError(f"index {root} has no version {version!r}; versions: {known}")


def new_version_dir(root: Path, version: str) -> Path:
    return root / VERSIONS_DIR / version


def switch(root: Path, version: str) -> VersionInfo:
    """Make ``version`` live with one atomic rename of the ``LIVE`` file."""
    folder = version_dir(root, version)
    if not (folder / CATALOG_FILE).exists():
        raise IndexStateError(f"version {version} in {root} has no catalog; rebuild it with 'beleg reindex'")
    rel = _FLAT if folder.resolve() == root.resolve() else folder.resolve().relative_to(root.resolve()).as_posix()
    tmp = root / (LIVE_FILE + ".tmp")
    tmp.write_text(rel + "\n", encoding="utf-8")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, root / LIVE_FILE)
    return next(v for v in list_versions(root) if v.live)


def gc(root: Path) -> list[VersionInfo]:
    """Delete every version that is not live; returns what was removed."""
    removed = []
    for info in list_versions(root):
        if info.live:
            continue
        if info.path.resolve() == root.resolve():
            # The first version lives in the root itself: remove its files, keep the folder.
            for name in (CONFIG_FILE, CATALOG_FILE, CATALOG_FILE + "-wal", CATALOG_FILE + "-shm"):
                (root / name).unlink(missing_ok=True)
        else:
            shutil.rmtree(info.path)
        removed.append(info)
    return removed
