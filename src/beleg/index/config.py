"""The index configuration and the index version derived from it.

Whatever changes the chunks or their vectors (chunking, embedder, analyzer) is hashed
into ``index_version``. Opening an index with a different configuration is refused
rather than silently mixing two kinds of vectors or chunks in one index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from beleg.backends.embedders import default_embedder
from beleg.errors import ConfigError
from beleg.index.analyzer import ANALYZER_VERSION
from beleg.ingest.chunking import ChunkingConfig

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class IndexConfig:
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    #: Default: the engine qualified on this machine (beleg.backends.embedders.engine_check).
    embedder: str = field(default_factory=default_embedder)
    analyzer: str = ANALYZER_VERSION

    @property
    def index_version(self) -> str:
        blob = json.dumps(self.versioned(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def versioned(self) -> dict[str, Any]:
        return {"chunking": self.chunking.to_dict(), "embedder": self.embedder, "analyzer": self.analyzer}

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, **self.versioned(), "index_version": self.index_version}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexConfig:
        if data.get("format") != FORMAT_VERSION:
            raise ConfigError(f"index format {data.get('format')!r} is not supported by this Beleg (expects {FORMAT_VERSION})")
        try:
            return cls(ChunkingConfig(**data["chunking"]), str(data["embedder"]), str(data["analyzer"]))
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"index configuration is incomplete or malformed: {exc}") from None
