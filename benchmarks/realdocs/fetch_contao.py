#!/usr/bin/env python3
"""Materialise the Contao user manual at a pinned commit (the second realdocs corpus).

The corpus is the user manual of the Contao CMS, https://github.com/contao/docs
(``docs/manual/``: Hugo Markdown with shortcodes, every page in German and English, written
by the Contao community; CC BY-NC-SA 4.0). Nothing of it is committed here; this script
rebuilds it:

    python benchmarks/realdocs/fetch_contao.py --git-dir /path/to/contao-docs.git
    python benchmarks/realdocs/fetch_contao.py            # git clone (network needed)

Selection rule (all of it is in this file): every ``docs/manual/**/*.<lang>.md`` for the
languages in ``LANGUAGES``, less pages with under ``MIN_BODY_CHARS`` characters of text
(chapter indexes that hold little but a ``{{% children %}}`` list). Unlike the ioBroker set,
every page exists in both languages, as on the published manual.

Each file is written to ``<out>/<lang>/<path below docs/manual, ".<lang>.md" → ".md">``
with its upstream ``title`` and ``description`` plus ``language`` (from the file name),
``product: contao``, ``section`` (the first folder), ``upstream_path`` and
``upstream_commit``. The body is the upstream body byte for byte. ``<out>/MANIFEST.json``
lists the files and their upstream blob ids.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pinned_git
from fetch_iobroker import split_front_matter
from pinned_git import list_markdown, read_blobs, write_manifest, write_page

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / ".cache" / "realdocs" / "contao"
UPSTREAM_URL = "https://github.com/contao/docs.git"
#: main of contao/docs on 2026-07-27 ("add empty path example"). Pinned: the gold answers
#: are copied from this state.
COMMIT = "ddf5a72e3148c1696b693eb6ce822f68a20b589d"
MANUAL = "docs/manual/"
LANGUAGES = ("en", "de")
MIN_BODY_CHARS = 200


def corpus_path(upstream_path: str) -> tuple[str, str] | None:
    """(language, corpus path) of a manual page, or None if the path rule leaves it out."""
    if not upstream_path.startswith(MANUAL):
        return None
    rest = upstream_path.removeprefix(MANUAL)
    for lang in LANGUAGES:
        suffix = f".{lang}.md"
        if rest.endswith(suffix):
            return lang, f"{lang}/{rest.removesuffix(suffix)}.md"
    return None


def front_matter(meta: dict[str, Any], language: str, upstream_path: str, path: str) -> dict[str, Any]:
    keep = {k: str(meta[k]).strip() for k in ("title", "description") if meta.get(k)}
    section = path.split("/")[1].removesuffix(".md") if "/" in path else "home"
    keep.update({"language": language, "product": "contao", "section": section,
                 "upstream_path": upstream_path, "upstream_commit": COMMIT})
    return keep


def materialise(git_dir: Path, out: Path) -> dict[str, Any]:
    rows = [(p, b, corpus_path(p)) for p, b in list_markdown(git_dir, UPSTREAM_URL, COMMIT, [MANUAL])]
    pages = [(p, b, where) for p, b, where in rows if where]
    contents = read_blobs(git_dir, sorted({b for _, b, _ in pages}), COMMIT)
    if out.exists():
        shutil.rmtree(out)
    kept, skipped = [], {}
    for upstream_path, blob, (lang, path) in sorted(pages):
        meta, body = split_front_matter(contents[blob].decode("utf-8", errors="replace"))
        if len(body.strip()) < MIN_BODY_CHARS:
            skipped[upstream_path] = f"under {MIN_BODY_CHARS} characters of text"
            continue
        write_page(out, path, front_matter(meta, lang, upstream_path, path), body)
        kept.append({"path": path, "upstream_path": upstream_path, "blob": blob, "language": lang})
    manifest = {"repository": UPSTREAM_URL, "commit": COMMIT, "files": len(kept),
                "by_language": {lang: sum(1 for k in kept if k["language"] == lang) for lang in LANGUAGES},
                "pages": kept, "skipped": skipped}
    return write_manifest(out, manifest)


def summary(m: dict[str, Any]) -> str:
    return f"{m['files']} files at {m['commit'][:12]} ({m['by_language']}; {len(m['skipped'])} left out)"


if __name__ == "__main__":
    sys.exit(pinned_git.fetch_main(sys.modules[__name__]))
