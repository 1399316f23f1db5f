"""A PostgreSQL restart (immediate shutdown: crash recovery) in the middle of an ingest loses
nothing that was committed and leaves no half document. Restarts scripts/postgres.sh's
own server, never a server given from outside."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from psycopg import sql

from beleg.index.postgres.store import PostgresStore
from beleg.types import ANONYMOUS
from tests.postgres.conftest import SCRIPT, schema_url

REPO = Path(__file__).resolve().parents[2]


def local_server() -> str:
    """The URL of scripts/postgres.sh's server (started if needed)."""
    subprocess.run(["bash", str(SCRIPT), "start"], check=True, timeout=300)
    return subprocess.run(["bash", str(SCRIPT), "url"], check=True, capture_output=True, text=True).stdout.strip()


def test_a_server_crash_mid_ingest_keeps_every_commit_whole() -> None:
    url = local_server()
    schema = f"t_restart_{uuid.uuid4().hex[:8]}"
    location = schema_url(url, schema)
    PostgresStore(location).close()
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from beleg.index.postgres.store import PostgresStore
        from beleg.testing.conformance import write
        store = PostgresStore({location!r})
        for i in range(100000):
            write(store, f"d-{{i:05d}}", {{"status": "current"}},
                  tuple(f"Document {{i}} section {{j}} relay words" for j in range(8)))
            print(i, flush=True)
    """)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    try:
        committed = -1
        while committed < 20:  # let it commit some documents
            committed = int(writer.stdout.readline())
        subprocess.run(["bash", str(SCRIPT), "crash"], check=True, timeout=120)
    finally:
        writer.wait(60)
    assert writer.returncode != 0  # the writer lost its connection mid-ingest
    local_server()
    store = PostgresStore(location)
    try:
        s = sql.Identifier(schema)
        rows = store.conn.execute(sql.SQL(
            "SELECT d.doc_id, d.chunk_count, count(c.row) FROM {s}.documents d LEFT JOIN {s}.chunks c "
            "ON c.doc_id = d.doc_id GROUP BY 1, 2 ORDER BY 1").format(s=s)).fetchall()
        assert len(rows) >= committed + 1  # everything reported committed is there
        assert all(n == 8 and chunks == 8 for _, n, chunks in rows)  # and whole
        assert [r[0] for r in rows] == [f"d-{i:05d}" for i in range(len(rows))]
        orphans = store.conn.execute(sql.SQL("SELECT count(*) FROM {s}.postings p WHERE NOT EXISTS "
                                             "(SELECT 1 FROM {s}.chunks c WHERE c.row = p.chunk_row)").format(s=s))
        assert orphans.fetchone() == (0,)
        assert store.read_view().eligible(None, ANONYMOUS).count == 8 * len(rows)
    finally:
        store.drop()
        store.close()

