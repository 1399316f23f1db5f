"""Erasure on PostgreSQL leaves no value of the erased documents in the planner's statistics
(``pg_statistic``): after the VACUUM every erasure runs, the tables are analysed again, so the
sampled values (most common values, histogram bounds) come from the rows that remain. Checked
as the superuser the tests connect as, the only role that reads ``pg_statistic`` raw."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

import beleg

MARKER = "zebraquark"


def statistics_holding(kb: Any, needle: str) -> list[str]:
    """``table.column`` of every statistic of the index's schema whose sampled values hold ``needle``."""
    rows = kb.store.conn.execute(
        "SELECT c.relname || '.' || a.attname FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = s.starelid AND a.attnum = s.staattnum WHERE n.nspname = %s "
        "AND concat_ws(' ', s.stavalues1::text, s.stavalues2::text, s.stavalues3::text, s.stavalues4::text, "
        "s.stavalues5::text) ILIKE %s", (kb.store.schema, f"%{needle}%")).fetchall()
    return sorted(r[0] for r in rows)


def analyze(kb: Any) -> None:
    """What autovacuum does by itself once enough rows changed."""
    for table in ("documents", "chunks", "postings", "term_df", "corpus_stats"):
        kb.store.conn.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(kb.store.schema), sql.Identifier(table)))


@pytest.fixture()
def kb(pg_location: str, embedder: Any) -> Iterator[Any]:
    with beleg.open(pg_location, embedder=embedder) as base:
        yield base


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"plain-{i}.md").write_text(f"# Plain {i}\n\nOrdinary note number {i} about relays.\n")
    (docs / f"{MARKER}.md").write_text(f"---\nid: {MARKER}-id\ntitle: {MARKER}\n---\n# {MARKER}\n\n{MARKER}.\n")
    return docs


def test_delete_leaves_no_value_in_the_statistics(kb: Any, corpus: Path) -> None:
    kb.ingest([corpus], progress=False)
    analyze(kb)
    assert statistics_holding(kb, MARKER)  # the check sees them while the document exists
    kb.delete([f"{MARKER}-id"])
    assert statistics_holding(kb, MARKER) == []
    # Erasing the last documents empties the tables, whose old statistics ANALYZE would keep.
    analyze(kb)
    assert statistics_holding(kb, "plain-3")
    kb.delete([r.doc_id for r in kb.store.document_records()])
    assert statistics_holding(kb, "plain-3") == []


def test_a_reingest_that_removes_text_and_sync_leave_no_value_in_the_statistics(kb: Any, corpus: Path) -> None:
    changing = corpus / "changing.md"
    changing.write_text("# quibbleflarn\n\nquibbleflarn.\n")
    kb.ingest([corpus], progress=False)
    analyze(kb)
    assert statistics_holding(kb, "quibbleflarn")
    changing.write_text("# Renamed\n\nPlain now.\n")
    kb.ingest([corpus], progress=False)
    assert statistics_holding(kb, "quibbleflarn") == []
    (corpus / "plain-2.md").unlink()
    analyze(kb)
    assert statistics_holding(kb, "plain-2")
    kb.ingest([corpus], progress=False, sync=True)
    assert statistics_holding(kb, "plain-2") == []
