"""Sentence vectors of the offline answerer, kept in the index instead of embedded per question.

The extractive answerer scores every candidate sentence of the retrieved chunks by its e5
similarity to the question (:class:`beleg.answer.scoring.SentenceScorer`). Embedding those
sentences was most of an offline ``ask`` (about 0.9 s of 1 s at 10k chunks on 2 cores), and
an in-memory cache alone does not help a server: every commit starts a new index
generation, which empties it, and each new question meets new sentences.

So the vectors are kept in the catalog, table ``sentence_vectors (key, doc_id, vector)``:

* ``key`` is the SHA-256 of the index's embedder fingerprint and the passage the embedder
  sees (``"heading: sentence"``, :func:`sentence_passage`), so a vector is only ever reused
  for the same text under the same model;
* ``doc_id`` is the document the sentence was read from: the rows go with the document when
  it is deleted or replaced, in the same transaction as its chunks (erasure leaves none);
* they are written at ingest with ``beleg ingest --sentence-vectors`` (in the commit that
  writes the document's chunks), and otherwise *lazily*: the first answer that needs a
  sentence embeds it and stores it, for every later answer, process and thread. A lazy
  write never bumps the index generation (it changes no search result), stores a row only
  while its chunk still exists (a document erased meanwhile gets nothing back), and is
  skipped, not waited for, while an ingest holds the write lock (the vectors then stay in
  memory and are stored at a later answer).

Over PostgreSQL there is no store: vectors are computed at the first need and kept in
memory for the index generation, as before.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from beleg.answer.scoring import VectorCache, can_answer, sentence_passage
from beleg.sentences import split_sentences

if TYPE_CHECKING:
    from beleg.index.catalog import Catalog

__all__ = ["SentenceVectors", "chunk_passages", "passage_key", "sentence_passage"]

log = logging.getLogger(__name__)


def chunk_passages(text: str, heading_path: Sequence[str], title: str) -> list[str]:
    """The passages of every sentence of a chunk the answerer may score (prose of 3+ words).

    Instruction-like sentences are included: which ones are withheld depends on the answer's
    policy, and a stored vector of a withheld sentence is simply never looked up."""
    return [sentence_passage(heading_path, title, sp.text) for sp in split_sentences(text) if can_answer(sp)]


def passage_key(fingerprint: str, passage: str) -> str:
    """The store key of a passage's vector under one embedder."""
    return hashlib.sha256(f"{fingerprint}\n{passage}".encode()).hexdigest()


class SentenceVectors:
    """Sentence vectors for answering: memory first (per index generation), then the
    catalog's store, then the model; what the model computed is stored for next time.

    Args:
        catalog: The index folder's catalog, or None (PostgreSQL: memory only).
        fingerprint: The embedder's fingerprint, asked for at the first look-up (loading
            the model only when an answer needs it).
    """

    def __init__(self, catalog: Catalog | None, fingerprint: Callable[[], str]) -> None:
        self.catalog = catalog
        self._fingerprint = fingerprint
        self.memory = VectorCache()
        #: Counters for tests and benchmarks: vectors read from the store, embedded, stored.
        self.stats = {"stored_hits": 0, "embedded": 0, "stored": 0, "store_skipped": 0}
        #: Vectors embedded but not stored yet (the write lock was busy): (doc_id, chunk_id, key) → vector.
        self._unstored: dict[tuple[str, str, str], np.ndarray] = {}

    def get(self, generation: int, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray],
            owners: Sequence[tuple[str, str]] | None = None) -> np.ndarray:
        """Vectors of ``texts`` (passages), one row each.

        ``owners`` gives each text's ``(doc_id, chunk_id)``; without it (or without a store)
        vectors are kept in memory only."""
        owner_of = dict(zip(texts, owners)) if owners is not None else {}

        def load_or_embed(todo: list[str]) -> np.ndarray:
            return self._load_or_embed(todo, embed, owner_of)

        vectors = self.memory.get(generation, texts, load_or_embed)
        if self._unstored:  # this answer's new vectors, and any an earlier one could not store
            self._store()
        return vectors

    def _load_or_embed(self, todo: list[str], embed: Callable[[list[str]], np.ndarray],
                       owner_of: dict[str, tuple[str, str]]) -> np.ndarray:
        if self.catalog is None or not owner_of:
            self.stats["embedded"] += len(todo)
            return np.asarray(embed(todo))
        fingerprint = self._fingerprint()
        keys = [passage_key(fingerprint, t) for t in todo]
        found = self.catalog.sentence_vectors(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.stats["stored_hits"] += len(todo) - len(missing)
        if missing:
            fresh = np.asarray(embed([todo[i] for i in missing]))
            self.stats["embedded"] += len(missing)
            for i, vector in zip(missing, fresh):
                found[keys[i]] = vector
                if todo[i] in owner_of:
                    doc_id, chunk_id = owner_of[todo[i]]
                    self._unstored[(doc_id, chunk_id, keys[i])] = vector
        return np.stack([found[k] for k in keys])

    def _store(self) -> None:
        """Write the vectors not stored yet; on a busy or read-only index keep them for the next try."""
        assert self.catalog is not None
        rows = [(doc_id, chunk_id, key, vector) for (doc_id, chunk_id, key), vector in self._unstored.items()]
        stored = self.catalog.add_sentence_vectors_lazily(rows)
        if stored is None:
            self.stats["store_skipped"] += 1
            if len(self._unstored) > self.memory.max_entries:  # never retried for ever on a read-only index
                self._unstored.clear()
            return
        self.stats["stored"] += stored
        self._unstored.clear()
