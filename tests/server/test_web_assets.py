"""The web page's files: shipped in the wheel (a non-editable install serves them too) and
self-contained (no CDN, no external URL; the page must work on a machine without internet)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "beleg" / "server" / "static"
PAGE_FILES = ("index.html", "app.js", "app.css")
_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")
_URL = re.compile(r"\b(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


def test_page_references_only_its_own_files() -> None:
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    references = _REFERENCE.findall(html)
    assert {"app.js", "app.css"} <= set(references)
    for ref in references:
        if ref.startswith("#"):
            continue
        assert "//" not in ref and ":" not in ref, f"index.html loads {ref!r} from elsewhere"
        assert (STATIC / ref).is_file(), f"index.html references {ref!r}, which is not in {STATIC}"


def test_no_external_urls_in_script_or_style() -> None:
    for name in ("app.js", "app.css"):
        text = (STATIC / name).read_text(encoding="utf-8")
        assert not _URL.findall(text), f"{name} names an external URL: {_URL.findall(text)}"
        assert "@import" not in text and "importScripts" not in text


def test_script_never_builds_html_from_strings() -> None:
    """Retrieved text is data: the page adds it with textContent/createTextNode only."""
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, f"app.js uses {sink}"


def test_wheel_ships_the_page(tmp_path: Path) -> None:
    source = tmp_path / "src-copy"  # build from a copy: the shared tree gets no build/ folder
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("beleg-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (*PAGE_FILES, "favicon.svg"):
        assert f"beleg/server/static/{name}" in names, f"the wheel lacks beleg/server/static/{name}"
