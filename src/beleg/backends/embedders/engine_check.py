"""Which e5-small engine is the default on this machine: the cached capability check.

The int8 engine (:mod:`e5_int8`) becomes the default only where it met all three of
issue 16's conditions on this machine, measured by ``benchmarks/embedder_engines.py
--record`` against the fp32 reference in the same run:

1. throughput >= 1.0x the fp32 ceiling (sgemm GFLOPS / FLOPs per passage), and >= 2x
   the fp32 engine's passages/s;
2. cosine >= 0.995 to the fp32 vectors on every XQuAD paragraph and question;
3. Hit@1 on XQuAD dev (en, de, de→en) within 0.005 of fp32.

The benchmark writes its figures to ``<cache>/engine_check.json`` (``<cache>`` =
``$BELEG_CACHE_DIR`` or ``~/.cache/beleg``). :func:`default_embedder` reads that record
and re-applies the thresholds to its numbers; the record only counts for the machine and
engine it was measured on (CPU model and flags, usable CPUs, onnxruntime version, the
int8 engine's fingerprint). No record, another machine, a failed condition → the fp32
reference engine stays the default. Nothing is measured implicitly: the check takes
minutes, and a default that changed under a running ingest would be worse than a slow one.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError

REFERENCE_ENGINE = "e5-small"
INT8_ENGINE = "e5-small-int8"
RECORD_NAME = "engine_check.json"

MIN_SHARE_OF_FP32_CEILING = 1.0
MIN_SPEEDUP_OVER_FP32 = 2.0
MIN_COSINE = 0.995
MAX_HIT1_DROP = 0.005
HIT1_SETS = ("en->en", "de->de", "de->en")


def record_path() -> Path:
    return Path(os.environ.get("BELEG_CACHE_DIR") or Path.home() / ".cache" / "beleg") / RECORD_NAME


def machine_key() -> dict[str, Any]:
    """What a measurement is only valid for; a record with another key is ignored."""
    from beleg.backends.embedders.e5_fp32 import _usable_cpus
    from beleg.backends.embedders.e5_int8 import cpu_features, engine_fingerprint

    try:
        ort_version: str | None = metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        ort_version = None
    return {"cpu_model": _cpu_model(), "features": sorted(cpu_features()), "cpus": _usable_cpus(),
            "onnxruntime": ort_version, "engine": engine_fingerprint()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def conditions(measured: dict[str, Any]) -> dict[str, bool]:
    """Each condition of the check, from a record's ``measured`` figures.

    ``measured``: ``share_of_fp32_ceiling``, ``speedup_over_fp32``, ``cosine_min`` and
    ``hit1`` = ``{set: {"fp32": h, "int8": h}}`` for every set in :data:`HIT1_SETS`.
    """
    try:
        hit1 = measured["hit1"]
        return {
            "throughput_vs_ceiling": measured["share_of_fp32_ceiling"] >= MIN_SHARE_OF_FP32_CEILING,
            "throughput_vs_fp32_engine": measured["speedup_over_fp32"] >= MIN_SPEEDUP_OVER_FP32,
            "cosine": measured["cosine_min"] >= MIN_COSINE,
            "hit1": all(hit1[s]["fp32"] - hit1[s]["int8"] <= MAX_HIT1_DROP for s in HIT1_SETS),
        }
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"engine check figures are incomplete ({exc!r} missing or malformed); "
                          f"rerun python benchmarks/embedder_engines.py --record") from None


def write_record(measured: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Store ``measured`` for this machine (atomically) and return the record written."""
    record: dict[str, Any] = {"machine": machine_key(), "measured": measured, "conditions": conditions(measured)}
    record["qualified"] = all(record["conditions"].values())
    path = path or record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    default_embedder.cache_clear()
    return record


def int8_qualified(path: Path | None = None) -> tuple[bool, str]:
    """``(qualified, why)`` for the int8 engine on this machine, from the stored record."""
    path = path or record_path()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False, f"no engine check at {path}"
    except (OSError, ValueError) as exc:
        return False, f"unreadable engine check {path}: {exc}"
    if not isinstance(record, dict):
        return False, f"engine check {path} is not a JSON object"
    key = machine_key()
    if record.get("machine") != key:
        return False, f"engine check {path} was measured for {record.get('machine')}, this is {key}"
    try:
        failed = [name for name, ok in conditions(record.get("measured") or {}).items() if not ok]
    except ConfigError as exc:
        return False, str(exc)
    if failed:
        return False, f"int8 engine failed {', '.join(failed)} on this machine ({path})"
    return True, f"int8 engine met every condition on this machine ({path})"


@lru_cache(maxsize=1)
def default_embedder() -> str:
    """``"e5-small-int8"`` where the stored check qualifies it on this machine, else ``"e5-small"``."""
    return INT8_ENGINE if int8_qualified()[0] else REFERENCE_ENGINE
