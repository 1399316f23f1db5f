"""A fresh clone has nothing beside it: the tests, benchmarks and scripts must not read
files outside the repository (a data folder beside the repository existed only on the
machines where Beleg was first written, and a clone elsewhere failed its own test command)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A path that climbs out of the repository to a sibling folder, or an absolute path into
# the original authors' workspace.
# (Assembled from parts so that this file does not match itself in outside-path scans.)
_SIBLING = "sha" + "red"
OUTSIDE = re.compile(rf"\.\./{_SIBLING}|/work/{_SIBLING}|parents\[\d\]\s*/\s*[\"']{_SIBLING}[\"']")


def _tracked(*folders: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if line]


def test_nothing_reads_outside_the_repository():
    files = [p for p in _tracked("src", "tests", "benchmarks", "scripts", ".ci", "demo")
             if p.suffix in {".py", ".sh", ""} and p.is_file() and p != Path(__file__).resolve()]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in files
                 for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
                 if OUTSIDE.search(line)]
    assert not offenders, f"these lines read outside the repository: {offenders}"


def test_xquad_dev_ships_with_its_licence():
    folder = ROOT / "tests" / "data" / "xquad"
    for name in ("xquad.dev.en.json", "xquad.dev.de.json", "LICENSE-CC-BY-SA-4.0.txt", "README.md"):
        assert (folder / name).is_file(), f"{name} is missing from {folder}"
    assert "CC BY-SA 4.0" in (folder / "README.md").read_text(encoding="utf-8")
