#!/usr/bin/env python3
"""Materialise the mailcow: dockerized documentation at a pinned commit (the fourth realdocs corpus).

The corpus is the documentation of mailcow: dockerized, a mail server suite built by a German
team, https://github.com/mailcow/mailcow-dockerized-docs (``docs/**/*.de.md`` and
``*.en.md``: MkDocs Material Markdown with admonitions and content tabs, every page in German
and in English; the project is GPL-3.0). Nothing of it is committed here; this script
rebuilds it:

    python benchmarks/realdocs/fetch_mailcow.py --git-dir /path/to/mailcow-dockerized-docs.git
    python benchmarks/realdocs/fetch_mailcow.py            # git clone (network needed)

Selection rule (all of it is in this file): every ``docs/**/*.de.md`` and ``*.en.md`` at
``COMMIT``. The language comes from the suffix. Each file is written to
``<out>/<language>/<folder>/<name>.md`` with front matter ``title`` (its own, else its first
heading, else the file name), ``language``, ``product: mailcow``, ``upstream_path`` and
``upstream_commit``; the body is the upstream file byte for byte. ``<out>/MANIFEST.json``
lists the files and their upstream blob ids.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pinned_git
from fetch_iobroker import split_front_matter
from pinned_git import list_markdown, read_blobs, write_manifest, write_page

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / ".cache" / "realdocs" / "mailcow"
UPSTREAM_URL = "https://github.com/mailcow/mailcow-dockerized-docs.git"
#: master of mailcow-dockerized-docs on 2026-08-22. Pinned: the gold answers are copied from this state.
COMMIT = "380f81eefa0928c157b6a9676ccf6e59530fe160"
LANGUAGE_SUFFIX = re.compile(r"^docs/(?P<stem>.+)\.(?P<language>de|en)\.md$")
FIRST_HEADING = re.compile(r"^#\s+(.+?)\s*$", re.MULTILINE)


def materialise(git_dir: Path, out: Path) -> dict[str, Any]:
    rows = []
    for path, blob in list_markdown(git_dir, UPSTREAM_URL, COMMIT, ["docs"]):
        match = LANGUAGE_SUFFIX.match(path)
        if match:
            rows.append((path, blob, match.group("language"), match.group("stem")))
    contents = read_blobs(git_dir, sorted({b for _, b, _, _ in rows}), COMMIT)
    if out.exists():
        shutil.rmtree(out)
    kept = []
    for upstream_path, blob, language, stem in sorted(rows):
        meta, body = split_front_matter(contents[blob].decode("utf-8", errors="replace"))
        heading = FIRST_HEADING.search(body)
        keep = {"title": str(meta.get("title") or (heading.group(1) if heading else Path(stem).name)),
                "language": language, "product": "mailcow", "upstream_path": upstream_path,
                "upstream_commit": COMMIT}
        path = f"{language}/{stem}.md"
        write_page(out, path, keep, body)
        kept.append({"path": path, "upstream_path": upstream_path, "blob": blob, "language": language})
    by_language = Counter(page["language"] for page in kept)
    manifest = {"repository": UPSTREAM_URL, "commit": COMMIT, "files": len(kept),
                "by_language": dict(sorted(by_language.items())), "pages": kept, "skipped": {}}
    return write_manifest(out, manifest)


def summary(m: dict[str, Any]) -> str:
    return f"{m['files']} files at {m['commit'][:12]} ({m['by_language']})"


if __name__ == "__main__":
    sys.exit(pinned_git.fetch_main(sys.modules[__name__]))
