"""The read side: one :class:`~beleg.index.ports.SearchIndex` view is one REPEATABLE READ,
READ ONLY transaction on its own connection, so every call answers from the same commit.

Queries that return what a principal reads run as the reader role with the principal bound
to the transaction (:mod:`beleg.index.postgres.rls`) and state the access predicate
themselves as well. BM25 is computed in SQL from the stored postings; N, df and avgdl come
from the statistics tables (read as the owner: corpus-wide, or per tenant when the store
was created with ``per_tenant_statistics``), the same Lucene formula as
:mod:`beleg.index.bm25`. Dense search is exact over the eligible rows when fewer than
``exact_below`` chunks are eligible (counted from the documents table, which records each
document's number of chunks: the planner cannot estimate Beleg's filters), and uses the HNSW index with
``hnsw.iterative_scan = relaxed_order`` (so a filter cannot starve it) above that, at the
``hnsw.ef_search`` the writer measured to reach the recall target, or exactly where no level
reaches it (:mod:`beleg.index.postgres.hnsw_calibration`).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from psycopg import sql

from beleg.index.filters import Expr
from beleg.index.ports import ChunkRecord, DocumentRecord, ScoredChunk, TermStatistics
from beleg.index.postgres import hnsw_calibration, rls
from beleg.index.postgres.filters_sql import FilterCompiler
from beleg.index.postgres.writes import vector_literal
from beleg.types import Principal

#: Below this many eligible chunks, dense search is exact (no ANN index): at 20k chunks of 384
#: dimensions an exact scan reads ~30 MiB, a few tens of ms; above it HNSW is worth its recall loss.
EXACT_BELOW = 20_000


class PostgresEligibility:
    """The chunks one search may consider, as a SQL condition over ``chunks c`` and
    ``documents d`` for one principal, bound to the view that compiled it."""

    def __init__(self, index: PostgresSearchIndex, principal: Principal, where: sql.Composable,
                 params: dict[str, Any]) -> None:
        self.index = index
        self.principal = principal
        access, access_params = rls.access_predicate("c", principal)
        doc_access, _ = rls.access_predicate("d", principal)
        self.where = sql.SQL("{} AND {}").format(access, where)
        self.document_where = sql.SQL("{} AND {}").format(doc_access, where)
        self.params = {**params, **access_params}
        self._count: int | None = None
        self._ids: set[str] | None = None

    @property
    def count(self) -> int:
        """Exact, from the documents table (each row records its number of chunks): no chunk scan."""
        if self._count is None:
            self._count = int(self.index.reader_query(
                self.principal, "SELECT coalesce(sum(d.chunk_count), 0) FROM {s}.documents d WHERE {w}",
                self, where=self.document_where)[0][0])
        return self._count

    def __contains__(self, chunk_id: object) -> bool:
        if self._ids is None:
            self._ids = {r[0] for r in self.index.reader_query(
                self.principal, "SELECT c.chunk_id FROM {s}.chunks c JOIN {s}.documents d ON d.doc_id = c.doc_id "
                                "WHERE {w}", self)}
        return str(chunk_id) in self._ids



class PostgresSearchIndex:
    """A consistent read view of one index schema (see the module docstring)."""

    def __init__(self, conn: Any, schema: str, live_conn: Callable[[], Any], *, k1: float = 1.5, b: float = 0.75,
                 per_tenant_statistics: bool = False, exact_below: int = EXACT_BELOW) -> None:
        self.conn = conn
        self.s = sql.Identifier(schema)
        self._live = live_conn
        self.k1, self.b = k1, b
        self.per_tenant_statistics = per_tenant_statistics
        self.exact_below = exact_below
        # Binding a principal and running the query must not interleave with another thread's:
        # the principal is a setting of the one transaction all threads of this view share.
        self._lock = threading.RLock()
        # Distinct stored values of a metadata key, per key and principal: fixed for this
        # snapshot, and each lookup reads every document the principal may read.
        self._distinct: dict[tuple[str, str | None, tuple[str, ...]], list[Any]] = {}
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        # The first statement fixes the transaction's snapshot: everything below reads this commit.
        self._generation = int(self._owner_query("SELECT value FROM {s}.meta WHERE key = 'generation'")[0][0])
        self._has_hnsw = bool(self._owner_query("SELECT 1 FROM {s}.meta WHERE key = 'dim'"))
        row = self._owner_query("SELECT value FROM {s}.meta WHERE key = %s", (hnsw_calibration.META_KEY,))
        #: How deep the HNSW index must search, as the writer last measured it (None: not measured).
        self.calibration = hnsw_calibration.Calibration.from_json(row[0][0] if row else None)

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ plumbing
    def _sql(self, text: str, where: sql.Composable | None = None) -> sql.Composed:
        return sql.SQL(text).format(s=self.s, w=where if where is not None else sql.SQL("TRUE"))

    def _owner_query(self, text: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._lock, self.conn.cursor() as cur:
            rls.unbind_principal(cur)
            cur.execute(self._sql(text), params)
            return cur.fetchall()

    @property
    def broken(self) -> bool:
        """Whether a failed statement aborted the view's transaction (the store then takes a new view)."""
        from psycopg.pq import TransactionStatus

        return self.conn.closed or self.conn.info.transaction_status == TransactionStatus.INERROR

    def reader_query(self, principal: Principal, text: str, eligible: PostgresEligibility | None = None,
                     params: dict[str, Any] | None = None, where: sql.Composable | None = None) -> list[tuple[Any, ...]]:
        """Run a query as the reader role bound to ``principal`` (``{w}``: the eligibility's
        condition over ``chunks c`` and ``documents d``, or ``where`` when given)."""
        with self._lock, self.conn.cursor() as cur:
            rls.bind_principal(cur, principal)
            cur.execute(self._sql(text, where if where is not None else eligible.where if eligible else None),
                        {**(eligible.params if eligible else {}), **(params or {})})
            return cur.fetchall() if cur.description else []

    def _checked(self, eligible: Any) -> PostgresEligibility:
        if not isinstance(eligible, PostgresEligibility) or eligible.index is not self:
            raise TypeError("an Eligibility is only valid for the SearchIndex view that made it")
        return eligible

    # ------------------------------------------------------------------ identity
    @property
    def generation(self) -> int:
        return self._generation

    def __len__(self) -> int:
        return int(self._owner_query("SELECT coalesce(sum(chunks), 0) FROM {s}.corpus_stats")[0][0])

    # ------------------------------------------------------------------ eligibility
    def eligible(self, expr: Expr | None, principal: Principal) -> PostgresEligibility:
        tenant, acl = rls.principal_values(principal)

        def distinct(key: str) -> list[Any]:
            cache_key = (key, tenant, tuple(acl))
            if cache_key not in self._distinct:
                self._distinct[cache_key] = [r[0] for r in self.reader_query(
                    principal, "SELECT DISTINCT d.metadata->%(key)s FROM {s}.documents d WHERE d.metadata ? %(key)s",
                    params={"key": key})]
            return self._distinct[cache_key]

        where, params = FilterCompiler(distinct).compile(expr)
        return PostgresEligibility(self, principal, where, params)

    # ------------------------------------------------------------------ dense
    def dense_top_k(self, query: np.ndarray, k: int, eligible: Any) -> list[ScoredChunk]:
        elig = self._checked(eligible)
        if k <= 0:
            return []
        q = vector_literal(np.asarray(query, dtype=np.float32))
        ef = self._ef_search(k) if self._has_hnsw and elig.count >= self.exact_below else None
        if ef is not None:
            rows = self._approximate(elig, q, k, ef)
        else:
            # MATERIALIZED: every eligible row is scored; the HNSW index cannot be used here.
            rows = self.reader_query(elig.principal, """
                WITH e AS MATERIALIZED (
                    SELECT c.row, c.chunk_id, c.doc_id, -(c.embedding <#> %(q)s::vector) AS score
                    FROM {s}.chunks c JOIN {s}.documents d ON d.doc_id = c.doc_id
                    WHERE {w} AND c.embedding IS NOT NULL)
                SELECT chunk_id, doc_id, score, row FROM e ORDER BY score DESC, row LIMIT %(k)s""",
                elig, {"q": q, "k": k})
        return [ScoredChunk(r[0], r[1], float(r[2])) for r in rows]

    def _ef_search(self, k: int) -> int | None:
        """The HNSW search depth for a top-``k`` search, or None to search exactly: the level
        measured to reach the recall target at that depth; where nothing was measured
        (fewer chunks than the measurement needs, or k deeper than measured) the default
        ``4 k`` within pgvector's 100-1000."""
        if self.calibration is not None:
            known, ef = self.calibration.ef_for(k)
            if known:
                return ef
        return min(1000, max(100, 4 * k))

    def _approximate(self, elig: PostgresEligibility, q: str, k: int, ef: int) -> list[tuple[Any, ...]]:
        with self._lock, self.conn.cursor() as cur:
            cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                        "set_config('hnsw.ef_search', %s, true)", (str(ef),))
        rows = self.reader_query(elig.principal, """
            SELECT c.chunk_id, c.doc_id, -(c.embedding <#> %(q)s::vector) AS score, c.row
            FROM {s}.chunks c JOIN {s}.documents d ON d.doc_id = c.doc_id
            WHERE {w} ORDER BY c.embedding <#> %(q)s::vector LIMIT %(k)s""", elig, {"q": q, "k": k})
        # relaxed_order may return neighbours slightly out of order.
        return sorted(rows, key=lambda r: (-float(r[2]), r[3]))

    # ------------------------------------------------------------------ lexical
    def _statistics(self, terms: Sequence[str], principal: Principal) -> tuple[int, float, dict[str, int]]:
        """``(N, avgdl, df by term)``: corpus-wide, or this principal's tenant plus public documents."""
        tenant, _ = rls.principal_values(principal)
        keys = ["", tenant] if tenant is not None else [""]
        scoped = self.per_tenant_statistics
        n, total = self._owner_query(
            "SELECT coalesce(sum(chunks), 0), coalesce(sum(total_length), 0) FROM {s}.corpus_stats "
            "WHERE NOT %(scoped)s OR tenant_key = ANY(%(keys)s)", {"scoped": scoped, "keys": keys})[0]
        df = dict(self._owner_query(
            "SELECT term, sum(df) FROM {s}.term_df WHERE term = ANY(%(terms)s) "
            "AND (NOT %(scoped)s OR tenant_key = ANY(%(keys)s)) GROUP BY term",
            {"terms": list(dict.fromkeys(terms)), "scoped": scoped, "keys": keys}))
        return int(n), (float(total) / int(n) if n else 0.0), {t: int(v) for t, v in df.items()}

    @staticmethod
    def _idf(n: int, df: int) -> float:
        return math.log1p((n - df + 0.5) / (df + 0.5))

    def lexical_top_k(self, terms: Sequence[str], k: int, eligible: Any) -> list[ScoredChunk]:
        elig = self._checked(eligible)
        unique = list(dict.fromkeys(terms))
        n, avgdl, df = self._statistics(unique, elig.principal)
        known = [t for t in unique if df.get(t)]
        if k <= 0 or not known or n == 0 or avgdl <= 0:
            return []
        rows = self.reader_query(elig.principal, """
            WITH q AS (SELECT unnest(%(terms)s::text[]) AS term, unnest(%(idf)s::float8[]) AS idf),
            scored AS (
                SELECT c.row, c.chunk_id, c.doc_id,
                       sum(q.idf * p.tf / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * c.length / %(avgdl)s))) AS score
                FROM q JOIN {s}.postings p ON p.term = q.term
                JOIN {s}.chunks c ON c.row = p.chunk_row JOIN {s}.documents d ON d.doc_id = c.doc_id
                WHERE {w} GROUP BY c.row, c.chunk_id, c.doc_id)
            SELECT chunk_id, doc_id, score FROM scored WHERE score > 0 ORDER BY score DESC, row LIMIT %(k)s""",
            elig, {"terms": known, "idf": [self._idf(n, df[t]) for t in known], "k1": float(self.k1),
                   "b": float(self.b), "avgdl": avgdl, "k": k})
        return [ScoredChunk(r[0], r[1], float(r[2])) for r in rows]

    def term_statistics(self, terms: Sequence[str], eligible: Any) -> TermStatistics:
        elig = self._checked(eligible)
        unique = list(dict.fromkeys(terms))
        n, _, df = self._statistics(unique, elig.principal)
        seen = {r[0] for r in self.reader_query(elig.principal, """
            SELECT DISTINCT p.term FROM {s}.postings p JOIN {s}.chunks c ON c.row = p.chunk_row
            JOIN {s}.documents d ON d.doc_id = c.doc_id WHERE p.term = ANY(%(terms)s) AND {w}""",
            elig, {"terms": unique})}
        return TermStatistics(n, {t: self._idf(n, df[t]) for t in unique if t in seen and df.get(t)})

    # ------------------------------------------------------------------ records
    def vectors(self, chunk_ids: Sequence[str]) -> np.ndarray:
        found = dict(self._owner_query("SELECT chunk_id, embedding::text FROM {s}.chunks WHERE chunk_id = ANY(%s)",
                                       (list(chunk_ids),)))
        missing = [c for c in chunk_ids if found.get(c) is None]
        if missing:
            raise KeyError(f"chunk {missing[0]!r} is not in this view (generation {self.generation})")
        return np.array([json.loads(found[c]) for c in chunk_ids], dtype=np.float32)

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        # Read from the latest commit, not this view: a chunk erased since is never shown.
        rows = self._live().execute(sql.SQL(
            'SELECT chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags FROM {s}.chunks '
            "WHERE chunk_id = ANY(%s)").format(s=self.s), (list(dict.fromkeys(str(c) for c in chunk_ids)),))
        return {r[0]: ChunkRecord(r[0], r[1], r[2], r[3], r[4], tuple(r[5]), r[6], tuple(r[7])) for r in rows}

    def documents(self, principal: Principal, doc_ids: Sequence[str] | None = None) -> list[DocumentRecord]:
        access, params = rls.access_predicate("d", principal)
        with self._lock, self.conn.cursor() as cur:
            rls.bind_principal(cur, principal)
            cur.execute(sql.SQL("SELECT d.doc_id, d.source, d.metadata FROM {s}.documents d WHERE {a} "
                                "AND (%(all)s OR d.doc_id = ANY(%(ids)s)) ORDER BY d.doc_id").format(s=self.s, a=access),
                        {**params, "all": doc_ids is None, "ids": list(doc_ids or [])})
            return [DocumentRecord(r[0], r[1], r[2]) for r in cur.fetchall()]

    def document_chunks(self, doc_id: str, principal: Principal) -> list[ChunkRecord]:
        access, params = rls.access_predicate("c", principal)
        with self._lock, self.conn.cursor() as cur:
            rls.bind_principal(cur, principal)
            cur.execute(sql.SQL('SELECT c.chunk_id, c.doc_id, c.ordinal, c.start, c."end", c.heading_path, c.text, '
                                "c.flags FROM {s}.chunks c WHERE {a} AND c.doc_id = %(doc)s ORDER BY c.ordinal")
                        .format(s=self.s, a=access), {**params, "doc": doc_id})
            rows = cur.fetchall()
        return [ChunkRecord(r[0], r[1], r[2], r[3], r[4], tuple(r[5]), r[6], tuple(r[7])) for r in rows]

    def all_documents(self) -> list[DocumentRecord]:
        rows = self._owner_query("SELECT doc_id, source, metadata FROM {s}.documents ORDER BY doc_id")
        return [DocumentRecord(r[0], r[1], r[2]) for r in rows]

    def chunk_documents(self) -> Iterator[tuple[str, str]]:
        yield from ((r[0], r[1]) for r in self._owner_query("SELECT chunk_id, doc_id FROM {s}.chunks ORDER BY row"))

    def metadata_values(self, key: str, principal: Principal) -> set[str]:
        return {str(r.metadata[key]) for r in self.documents(principal) if r.metadata.get(key) not in (None, "")}
