"""Source identity on PostgreSQL: the same tests as the folder backend's (each document records
its file's resolved location in ``documents.location``), plus the schema migration that adds
the column to an older index and a reindex that keeps the locations."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import beleg
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig
from tests.ingest.test_source_identity import (  # noqa: F401 - collected here against PostgreSQL
    _write,
    test_a_text_cannot_replace_a_files_document,
    test_file_cannot_take_an_id_from_another_working_directory,
    test_moved_corpus_ingested_from_its_new_parent_keeps_its_ids,
    test_same_file_through_another_spelling_keeps_its_document,
    test_sync_by_glob_finds_files_ingested_through_a_relative_folder,
    test_sync_of_a_folder_named_by_its_absolute_path_from_elsewhere,
    test_sync_of_a_glob_never_reaches_another_corpus,
    test_two_corpora_with_the_same_folder_name_stay_apart,
)


@pytest.fixture()
def kb(pg_location: str, embedder: Any) -> Iterator[Any]:
    """A fresh PostgreSQL index per test (its schema is dropped by ``pg_location``)."""
    with beleg.open(pg_location, embedder=embedder) as base:
        yield base


def test_a_schema_from_before_locations_gets_the_column_and_rows_get_one_on_reingest(
        kb: Any, pg_location: str, tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path / "a" / "corpus" / "c.md", "---\nid: old-row\n---\n# C\nOriginal text.\n")
    _write(tmp_path / "b" / "docs" / "c.md", "---\nid: old-row\n---\n# C\nIntruder text.\n")
    _write(tmp_path / "b" / "corpus" / "c.md", "---\nid: old-row\n---\n# C\nIntruder text.\n")
    monkeypatch.chdir(tmp_path / "a")
    kb.ingest(["corpus"], progress=False)
    s = sql.Identifier(kb.store.schema)
    with kb.store.conn.transaction():  # the schema an older Beleg wrote: version 4, no location
        kb.store.conn.execute(sql.SQL("ALTER TABLE {}.documents DROP COLUMN location").format(s))
        kb.store.conn.execute(sql.SQL("DELETE FROM {}.schema_migrations WHERE version >= 5").format(s))
    kb.close()
    with beleg.open(pg_location, embedder=kb._embedder, create=False) as reopened:
        assert reopened.catalog.location("old-row") is None
        monkeypatch.chdir(tmp_path / "b")  # from here the stored "corpus/c.md" names nothing
        taken = reopened.ingest(["docs"], progress=False).files[0]
        assert taken.status == "failed" and "cannot be found from here" in (taken.reason or "")
        monkeypatch.chdir(tmp_path / "a")
        assert reopened.ingest(["corpus"], progress=False).files[0].status == "unchanged"
        assert reopened.catalog.location("old-row") == os.path.realpath(tmp_path / "a" / "corpus" / "c.md")
        monkeypatch.chdir(tmp_path / "b")  # now located: b's corpus/c.md is another file
        taken = reopened.ingest(["corpus"], progress=False).files[0]
        assert taken.status == "failed" and "another file in the index" in (taken.reason or "")
        assert "Original" in reopened.catalog.document("old-row").text


def test_reindex_keeps_the_recorded_locations(kb: Any, pg_location: str, postgres_url: str, tmp_path: Path) -> None:
    note = _write(tmp_path / "corpus" / "n.md", "---\nid: located\n---\n# N\nA located note.\n")
    kb.ingest([str(tmp_path / "corpus")], progress=False)
    built = kb.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)
    try:
        with beleg.open(pg_location, embedder=kb._embedder, version=built["version"], create=False) as rebuilt:
            assert rebuilt.catalog.location("located") == os.path.realpath(note)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:  # the version schema goes with its test
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(built["path"].rsplit("schema=", 1)[1].split("&")[0])))


def test_the_location_is_stored_as_the_file_systems_bytes(kb: Any, tmp_path: Path) -> None:
    """A file name that is not UTF-8 is found again by its location (``source`` holds only a
    printable form of it)."""
    name = os.fsdecode(b"caf\xe9.md")
    path = _write(tmp_path / "corpus" / name, "# Cafe\nA latin-1 file name.\n")
    doc_id = kb.ingest([str(tmp_path / "corpus")], progress=False).files[0].doc_id
    assert kb.catalog.location(doc_id) == os.path.realpath(path)
    assert kb.catalog.doc_ids_at(os.path.realpath(path)) == [doc_id]
    assert kb.ingest([str(tmp_path / "corpus")], progress=False).files[0].status == "unchanged"
