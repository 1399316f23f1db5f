"""Beleg: retrieval-augmented generation where every answer carries checkable evidence."""

from beleg.errors import BelegError, ConfigError, FilterError, IngestError
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig
from beleg.kb import KnowledgeBase, open
from beleg.types import ANONYMOUS, Chunk, Document, Hit, ParsedDocument, Principal

__version__ = "0.1.0"

__all__ = [
    "BelegError", "ConfigError", "FilterError", "IngestError", "IndexConfig", "ChunkingConfig",
    "KnowledgeBase", "open", "Chunk", "Document", "Hit", "ParsedDocument", "Principal", "ANONYMOUS", "__version__",
]
