"""Reading the YAML files users write (gold sets, metadata rules) with errors that name them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from beleg.errors import ConfigError


def read_yaml(path: str | Path, what: str) -> Any:
    """Parse ``path``; unreadable or invalid files raise :class:`ConfigError` naming ``what`` and the file."""
    p = Path(path)
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {p} is not valid YAML: {exc}") from None
