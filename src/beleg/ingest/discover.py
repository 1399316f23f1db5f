"""Turn ``ingest`` arguments (files, folders, globs) into a list of files to read."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

_GLOB_CHARS = set("*?[")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path
    #: The path as the user named it (relative paths stay relative): the document's ``source``.
    source: str
    #: Set when the argument itself is unusable (missing file, empty glob).
    problem: str | None = None


def discover(args: list[str], suffixes: tuple[str, ...]) -> list[Candidate]:
    """Expand arguments in order; folders yield supported files, recursively, skipping hidden ones.

    A file named explicitly is kept even if its suffix is unsupported, so the report can
    say why it was not ingested instead of dropping it silently.
    """
    out: list[Candidate] = []
    seen: set[Path] = set()

    def add(path: Path, source: str, problem: str | None = None) -> None:
        key = path.resolve() if problem is None else Path(source)
        if key not in seen:
            seen.add(key)
            out.append(Candidate(path, source, problem))

    for arg in args:
        if _GLOB_CHARS & set(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            if not files:
                add(Path(arg), arg, "the pattern matches no files")
            for m in files:
                add(Path(m), m)
        elif os.path.isdir(arg):
            for root, dirs, files in os.walk(arg):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith(".") and Path(name).suffix.lower() in suffixes:
                        full = os.path.join(root, name)
                        add(Path(full), full)
        elif os.path.isfile(arg):
            add(Path(arg), arg)
        else:
            add(Path(arg), arg, "no such file or folder")
    return out
