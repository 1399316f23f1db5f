"""ruff and mypy over the tree, with the configuration in pyproject.toml: part of the test command,
so CI and a developer's run check the same thing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed; it is in the test extra (bash scripts/setup.sh)"
    return found


def test_ruff_finds_nothing() -> None:
    run = subprocess.run([_tool("ruff"), "check", "src", "tests", "benchmarks", "scripts"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_finds_nothing() -> None:
    run = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
