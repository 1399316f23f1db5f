"""Read files of one pinned commit from a local git clone or mirror, or clone it.

Shared by the corpus scripts of the realdocs benchmark (fetch_iobroker.py, fetch_contao.py):
each pins an upstream commit, because documentation changes daily and the gold answers are
copied from one state of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml


class FetchError(RuntimeError):
    """The upstream repository or commit could not be read."""


def git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    cmd = ["git", f"--git-dir={git_dir}", *args]
    proc = subprocess.run(cmd, input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise FetchError(f"`{' '.join(cmd)}` failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def clone_pinned(url: str, commit: str, target: Path) -> Path:
    """A blob-less bare clone of ``url`` holding ``commit`` (blobs come on demand)."""
    subprocess.run(["git", "clone", "--bare", "--filter=blob:none", "--depth", "1", url, str(target)], check=True)
    subprocess.run(["git", f"--git-dir={target}", "fetch", "--depth", "1", "origin", commit], check=True)
    return target


def list_markdown(git_dir: Path, url: str, commit: str, folders: list[str]) -> list[tuple[str, str]]:
    """(path, blob id) of every Markdown file under ``folders`` at ``commit``."""
    try:
        git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
    except FetchError:
        raise FetchError(f"{git_dir} does not contain commit {commit}; fetch it "
                         f"(git --git-dir={git_dir} fetch {url} {commit}) or omit --git-dir") from None
    out = git(git_dir, "ls-tree", "-r", commit, "--", *folders).decode()
    rows = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        _mode, kind, blob = meta.split()
        if kind == "blob" and path.endswith(".md"):
            rows.append((path, blob))
    return rows


def read_blobs(git_dir: Path, blobs: list[str], commit: str) -> dict[str, bytes]:
    """Blob contents via one ``git cat-file --batch`` call."""
    raw = git(git_dir, "cat-file", "--batch", data="".join(b + "\n" for b in blobs).encode())
    out: dict[str, bytes] = {}
    pos = 0
    for blob in blobs:
        header_end = raw.index(b"\n", pos)
        header = raw[pos:header_end].decode().split()
        if len(header) != 3:  # "<oid> missing"
            raise FetchError(f"{git_dir} lacks blob {blob} of commit {commit}; fetch the commit with its files")
        oid, _kind, size = header
        start = header_end + 1
        out[oid] = raw[start:start + int(size)]
        pos = start + int(size) + 1  # content is followed by a newline
    return out


def write_page(out: Path, path: str, keep: dict[str, Any], body: str) -> None:
    """``out/path``: the front matter ``keep`` (YAML, keys sorted), a blank line, then the
    upstream body byte for byte (without its leading blank lines)."""
    target = out / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("---\n" + yaml.safe_dump(keep, allow_unicode=True, sort_keys=True) + "---\n\n"
                      + body.lstrip("\n"), encoding="utf-8")


def write_manifest(out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """``out/MANIFEST.json``; returns ``manifest``."""
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def read_manifest(out: Path) -> dict[str, Any]:
    """The MANIFEST.json of a materialised corpus ({} when there is none)."""
    manifest = out / "MANIFEST.json"
    return json.loads(manifest.read_text(encoding="utf-8")) if manifest.exists() else {}


def ensure_corpus(corpus: ModuleType, out: Path | None = None, git_dir: Path | None = None) -> Path:
    """The folder of ``corpus`` (a corpus script: ``UPSTREAM_URL``, ``COMMIT``, ``DEFAULT_OUT``,
    ``materialise``), materialised unless it already holds that commit's selection: from
    ``git_dir`` when given, else from a temporary clone of the upstream repository. The
    script's attributes are read at call time (the tests pin ``COMMIT`` to a repository they build)."""
    out = out or corpus.DEFAULT_OUT
    if read_manifest(out).get("commit") == corpus.COMMIT:
        return out
    if git_dir is not None:
        corpus.materialise(git_dir, out)
        return out
    with tempfile.TemporaryDirectory(prefix="realdocs-") as tmp:
        corpus.materialise(clone_pinned(corpus.UPSTREAM_URL, corpus.COMMIT, Path(tmp) / "repo.git"), out)
    return out


def fetch_main(corpus: ModuleType) -> int:
    """The command line of a corpus script: ``[--git-dir CLONE] [--out DIR] [--force]``; it
    prints the script's ``summary(manifest)``."""
    ap = argparse.ArgumentParser(description=(corpus.__doc__ or "").split("\n\n")[0])
    ap.add_argument("--git-dir", type=Path, help="a local clone or mirror (its .git or bare directory) "
                                                 f"that contains commit {corpus.COMMIT[:12]}; default: git clone")
    ap.add_argument("--out", type=Path, default=corpus.DEFAULT_OUT, help=f"corpus folder (default {corpus.DEFAULT_OUT})")
    ap.add_argument("--force", action="store_true", help="rebuild even if the folder holds this commit")
    args = ap.parse_args()
    if args.force and (args.out / "MANIFEST.json").exists():
        (args.out / "MANIFEST.json").unlink()
    try:
        ensure_corpus(corpus, args.out, args.git_dir)
    except (FetchError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.out}: {corpus.summary(read_manifest(args.out))}")
    return 0
