"""Turn ``ingest`` arguments (files, folders, globs) into a list of files to read.

Discovery never raises for one bad entry: a folder that cannot be listed, a symlink loop
or a name that is not valid UTF-8 becomes that entry's :class:`Candidate` with a problem,
and the other files are still found.

Each file also gets an **id key**, the path its document id is derived from: the file's
path below the *ingest root*, prefixed with the root's own folder name, so an index keeps
its ids when the corpus folder moves or is ingested from another working directory. The
root is the folder argument; for a glob, the folder before the first wildcard; for a
file named directly, the folder it is in. ``beleg ingest /data/corpus`` gives
``docs/setup.md`` the key ``corpus/docs/setup.md``; so do ``beleg ingest corpus`` and
``beleg ingest "corpus/**/*.md"``; ``beleg ingest corpus/docs/setup.md`` gives ``docs/setup.md``.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_GLOB_CHARS = set("*?[")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path
    #: The path as the user named it (relative paths stay relative), in printable form: the
    #: document's ``source``.
    source: str
    #: Set when the argument itself is unusable (missing file, empty glob, unreadable folder).
    problem: str | None = None
    #: The path below the ingest root that the document id derives from (see module docstring).
    key: str | None = None
    #: Set when the file is left out on purpose (a symlink out of the folder): reported ``skipped``.
    skip: str | None = None
    #: True for a folder that could not be listed: ``--sync`` must not take its files for deleted.
    unlisted_folder: bool = False


def printable(path: str) -> str:
    """``path`` with bytes that are not UTF-8 shown as ``\\xff`` escapes (safe to store and print)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _under(path: str, root: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _key(root: str, full: str) -> str:
    """``<root folder name>/<path of full below root>``, with forward slashes."""
    rel = os.path.relpath(os.path.abspath(full), os.path.abspath(root))
    return printable("/".join([os.path.basename(os.path.abspath(root)), *Path(rel).parts]))


def glob_root(pattern: str) -> str:
    """The folder a glob pattern starts in: its components before the first wildcard."""
    parts: list[str] = []
    for part in Path(pattern).parts[:-1]:
        if _GLOB_CHARS & set(part):
            break
        parts.append(part)
    return os.path.join(*parts) if parts else "."


def rooted_glob(root: str | Path, path: str | Path) -> str:
    """A glob pattern that matches exactly the file ``path`` below the folder ``root`` and whose
    :func:`glob_root` is ``root``, so its document id derives from its path below ``root``
    (``root``'s name, then the rest) rather than from its own folder, as a file named directly
    would be. The server ingests an upload this way, so the tenant's folder is part of the id.

    One character of the first component below ``root`` is written as a one-character class
    (``uploads/acm[e]/notes.md``); every other character is matched literally. Raises
    ValueError when ``root`` itself holds a wildcard character (it would not be the glob's
    root), when ``path`` is not below it, or when the first component has no letter or digit.
    """
    root_text = str(root)
    if _GLOB_CHARS & set(root_text):
        raise ValueError(f"{printable(root_text)} holds a glob character ({''.join(sorted(_GLOB_CHARS))}), "
                         "so it cannot be the root of a glob pattern")
    parts = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root_text))).parts
    if not parts or parts[0] in (os.curdir, os.pardir):
        raise ValueError(f"{printable(str(path))} is not below {printable(root_text)}")
    first = parts[0]
    at = max((i for i, c in enumerate(first) if c.isalnum()), default=-1)
    if at < 0:
        raise ValueError(f"{printable(first)} has no letter or digit to write as a one-character class")
    head = glob.escape(first[:at]) + f"[{first[at]}]" + glob.escape(first[at + 1:])
    return os.path.join(root_text, head, *(glob.escape(part) for part in parts[1:]))


def glob_match(path: str, pattern: str) -> bool:
    """Whether ``path`` is one that ``glob.glob(pattern, recursive=True)`` could yield."""
    return _glob_regex(os.path.normpath(pattern)).fullmatch(os.path.normpath(path)) is not None


@functools.lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = Path(pattern).as_posix().split("/")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.append(_component_regex(part) + ("" if last else "/"))
    return re.compile("".join(out), re.DOTALL)


def _component_regex(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (close := part.find("]", i + 2)) > 0:
            body = part[i + 1:close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _folder_link_skip(path: str) -> Candidate:
    """A symlinked folder found in a walk and not followed: reported, so nothing is left out silently."""
    return Candidate(Path(path), printable(path), key=None,
                     skip=f"symlink to the folder {printable(os.path.realpath(path))}; "
                          "pass --follow-symlinks to ingest its files")


def discover(args: list[str], suffixes: tuple[str, ...], *, follow_symlinks: bool = False) -> list[Candidate]:
    """Expand arguments in order; folders yield supported files, recursively, skipping hidden ones.

    A file named explicitly is kept even if its suffix is unsupported, so the report can
    say why it was not ingested instead of dropping it silently. A file found through a
    folder or glob that is a symlink to somewhere outside that folder is reported skipped
    unless ``follow_symlinks``; a file named directly is read wherever it points.
    """
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(path: str, root: str | None, problem: str | None = None) -> None:
        source = printable(path)
        skip = None
        if problem is None and root is not None and not follow_symlinks and not _under(path, root):
            target = printable(os.path.realpath(path))
            # --follow-symlinks cannot help a link whose target is gone: say that instead.
            skip = (f"symlink to {target}, which does not exist" if not os.path.exists(path) else
                    f"symlink to {target}, outside {printable(root)}; pass --follow-symlinks to ingest it")
        # A file is ingested once however many arguments reach it, so it is remembered by its
        # real path; a skipped symlink is not ingested, so it must not take that path from the
        # file itself named elsewhere in the same run (that file would get no entry at all).
        seen_as = source if problem else os.path.abspath(path) if skip else os.path.realpath(path)
        if seen_as not in seen:
            seen.add(seen_as)
            key = _key(root if root is not None else os.path.dirname(os.path.abspath(path)), path)
            out.append(Candidate(Path(path), source, problem, key, skip))

    for arg in args:
        try:
            _expand(arg, suffixes, add, out, follow_symlinks)
        except (OSError, ValueError, RuntimeError) as exc:  # one argument's trouble stays its own
            out.append(Candidate(Path(arg), printable(arg), f"cannot list: {type(exc).__name__}: {exc}"))
    return out


def _expand(arg: str, suffixes: tuple[str, ...], add: Callable[..., None], out: list[Candidate],
            follow_symlinks: bool = False) -> None:
    if _GLOB_CHARS & set(arg):
        root = glob_root(arg)
        files = [m for m in sorted(glob.glob(arg, recursive=True)) if os.path.isfile(m)]
        if not files:
            add(arg, None, "the pattern matches no files")
        for m in files:
            add(m, root)
    elif os.path.isdir(arg):
        def unlisted(exc: OSError) -> None:
            folder = printable(str(exc.filename or arg))
            out.append(Candidate(Path(str(exc.filename or arg)), folder,
                                 f"cannot list folder: {exc.strerror or exc}; its files were not ingested",
                                 unlisted_folder=True))

        walked = {os.path.realpath(arg)}  # followed folder links never loop back
        for root, dirs, files in os.walk(arg, onerror=unlisted, followlinks=follow_symlinks):
            kept = []
            for d in sorted(d for d in dirs if not d.startswith(".")):
                full = os.path.join(root, d)
                if not os.path.islink(full):
                    kept.append(d)
                elif not follow_symlinks:
                    out.append(_folder_link_skip(full))
                elif os.path.realpath(full) not in walked:
                    walked.add(os.path.realpath(full))
                    kept.append(d)
            dirs[:] = kept
            for name in sorted(files):
                if not name.startswith(".") and Path(name).suffix.lower() in suffixes:
                    add(os.path.join(root, name), arg)
    elif os.path.islink(arg) and not os.path.exists(arg):
        add(arg, None, f"broken or looping symlink (points to {printable(os.readlink(arg))})")
    elif os.path.exists(arg):  # a file, or a pipe or device named directly (the reader says what it is)
        add(arg, None)
    else:
        add(arg, None, "no such file or folder")
