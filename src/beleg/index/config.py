"""The index configuration and the index version derived from it.

Whatever changes the chunks or their vectors (chunking, embedder, analyzer) is hashed
into ``index_version``. Opening an index with a different configuration is refused
rather than silently mixing two kinds of vectors or chunks in one index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from beleg.backends.embedders import default_embedder
from beleg.errors import ConfigError
from beleg.index.analyzer import ANALYZER_VERSION

FORMAT_VERSION = 1
#: The chunking methods (see :mod:`beleg.ingest.chunking`).
METHODS = ("structure", "window", "parent-child", "semantic")
#: Revisions of the chunker's rules at fixed settings, so that an index keeps cutting new
#: documents the way it cut its old ones. 1: until 2026-12-03. 2: a paragraph ending in ":"
#: stays in one chunk with the block it announces (before, 58 of 2,336 chunk boundaries of the
#: Contao manual fell right after such a paragraph: "Here is a recommendation:" | ```ini …).
#: 3: a block too long for one chunk is cut between lines before it is cut between words, and a
#: pipe table only between its rows (before, long tables were cut in the middle of rows).
CHUNK_RULES = 3


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    """How documents are cut into chunks; part of the index version."""

    method: Literal["structure", "window", "parent-child", "semantic"] = "structure"
    max_tokens: int = 220
    overlap: int = 40
    #: Contextual retrieval: a situating context indexed with each chunk (both legs).
    #: "none", "offline" (title, version facts, the document's lead, the previous chunk's
    #: tail) or "llm:PROVIDER:MODEL" (written by that model, cached in the catalog).
    context: str = "none"
    #: parent-child: the size of a child (the indexed unit) in words; parents are max_tokens.
    child_tokens: int = 60
    #: semantic: a break goes where the similarity of neighbouring sentence groups is below
    #: this percentile of the section's similarities; pieces stay within min_tokens..max_tokens.
    percentile: float = 20.0
    min_tokens: int = 30
    #: The chunker's rule revision (CHUNK_RULES); an index built before revisions existed is 1.
    rules: int = CHUNK_RULES

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"chunking method {self.method!r} is unknown; use one of {', '.join(METHODS)}")
        if self.max_tokens < 8:
            raise ConfigError(f"max_tokens={self.max_tokens} is too small; use at least 8 words")
        if self.method == "parent-child" and not 4 <= self.child_tokens <= self.max_tokens:
            raise ConfigError(f"child_tokens={self.child_tokens} must be between 4 and max_tokens={self.max_tokens}")
        if not 0.0 < self.percentile < 100.0:
            raise ConfigError(f"percentile={self.percentile} must lie strictly between 0 and 100, e.g. 20")
        if self.method == "semantic" and not 1 <= self.min_tokens <= self.max_tokens:
            raise ConfigError(f"min_tokens={self.min_tokens} must be between 1 and max_tokens={self.max_tokens}")
        if self.context not in ("none", "offline") and not self.context.startswith("llm:"):
            raise ConfigError(f"chunk context {self.context!r} is unknown; use 'none', 'offline' or 'llm:PROVIDER:MODEL'")
        if not 1 <= self.rules <= CHUNK_RULES:
            raise ConfigError(f"chunking rules={self.rules} are unknown to this Beleg (1 to {CHUNK_RULES})")
        if not 0 <= self.overlap < self.max_tokens:
            raise ConfigError(
                f"overlap={self.overlap} must be at least 0 and below max_tokens={self.max_tokens}"
            )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "max_tokens": self.max_tokens, "overlap": self.overlap}
        if self.context != "none":  # absent when off, so existing index versions keep their hash
            out["context"] = self.context
        # Method-specific sizes enter the version only for their method (older hashes stay).
        if self.method == "parent-child":
            out["child_tokens"] = self.child_tokens
        if self.method == "semantic":
            out["percentile"], out["min_tokens"] = self.percentile, self.min_tokens
        if self.rules != 1:  # absent for the first rules, so existing index versions keep their hash
            out["rules"] = self.rules
        return out



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
            # An index stored without "rules" was built before they had revisions: rules 1.
            return cls(ChunkingConfig(**{"rules": 1, **data["chunking"]}), str(data["embedder"]),
                       str(data["analyzer"]))
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"index configuration is incomplete or malformed: {exc}") from None
