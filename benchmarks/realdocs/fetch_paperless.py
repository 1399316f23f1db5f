#!/usr/bin/env python3
"""Materialise the Paperless-ngx documentation at a pinned commit (the third realdocs corpus).

The corpus is the user documentation of Paperless-ngx, a document management system,
https://github.com/paperless-ngx/paperless-ngx (``docs/*.md``: MkDocs Markdown with
admonitions, English only; GPL-3.0 like the project). Nothing of it is committed here; this
script rebuilds it:

    python benchmarks/realdocs/fetch_paperless.py --git-dir /path/to/paperless-ngx.git
    python benchmarks/realdocs/fetch_paperless.py            # git clone (network needed)

Selection rule (all of it is in this file): every ``docs/*.md`` at ``COMMIT`` except
``changelog.md`` (the release notes of every version, more than twice the rest together).
Each file is written to ``<out>/en/<name>.md`` with front matter ``title`` (its first
heading), ``language: en``, ``product: paperless-ngx``, ``upstream_path`` and
``upstream_commit``; the body is the upstream file byte for byte. ``<out>/MANIFEST.json``
lists the files and their upstream blob ids.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pinned_git
from fetch_iobroker import split_front_matter
from pinned_git import list_markdown, read_blobs, write_manifest, write_page

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / ".cache" / "realdocs" / "paperless"
UPSTREAM_URL = "https://github.com/paperless-ngx/paperless-ngx.git"
#: main of paperless-ngx on 2026-08-08. Pinned: the gold answers are copied from this state.
COMMIT = "b0e0e8a35373a5d9d588a507cb63c79e50a23403"
LEFT_OUT = ("docs/changelog.md",)
FIRST_HEADING = re.compile(r"^#\s+(.+?)\s*$", re.MULTILINE)


def materialise(git_dir: Path, out: Path) -> dict[str, Any]:
    rows = [(p, b) for p, b in list_markdown(git_dir, UPSTREAM_URL, COMMIT, ["docs"])
            if p.count("/") == 1 and p not in LEFT_OUT]
    contents = read_blobs(git_dir, sorted({b for _, b in rows}), COMMIT)
    if out.exists():
        shutil.rmtree(out)
    kept = []
    for upstream_path, blob in sorted(rows):
        meta, body = split_front_matter(contents[blob].decode("utf-8", errors="replace"))
        heading = FIRST_HEADING.search(body)
        keep = {"title": str(meta.get("title") or (heading.group(1) if heading else Path(upstream_path).stem)),
                "language": "en", "product": "paperless-ngx", "upstream_path": upstream_path,
                "upstream_commit": COMMIT}
        path = "en/" + Path(upstream_path).name
        write_page(out, path, keep, body)
        kept.append({"path": path, "upstream_path": upstream_path, "blob": blob, "language": "en"})
    manifest = {"repository": UPSTREAM_URL, "commit": COMMIT, "files": len(kept), "by_language": {"en": len(kept)},
                "pages": kept, "skipped": {p: "release notes" for p in LEFT_OUT}}
    return write_manifest(out, manifest)


def summary(m: dict[str, Any]) -> str:
    return f"{m['files']} files at {m['commit'][:12]} ({len(m['skipped'])} left out)"


if __name__ == "__main__":
    sys.exit(pinned_git.fetch_main(sys.modules[__name__]))
