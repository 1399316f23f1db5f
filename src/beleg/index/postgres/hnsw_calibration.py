"""How deep pgvector's HNSW index must search to find what exact search finds: measured, not assumed.

HNSW recall depends on the vectors. On real e5-small chunk vectors pgvector's index (m 16,
ef_construction 64) finds the whole exact top 10 at ``hnsw.ef_search`` 40; on near-random
vectors (top-10 cosine about 0.2) it finds 14-17 % of it at 100 (docs/benchmarks.md,
"PostgreSQL at scale"). A fixed ``ef_search`` is therefore either slow on the first kind or
wrong on the second, and nothing would say so.

So the writer measures it, as the embedded IVF does (:mod:`beleg.index.ann`): after a commit
that leaves at least ``max(exact_below, CALIBRATE_FROM)`` chunks with vectors and that changed
their number by a quarter or more since the last measurement, up to :data:`SAMPLE` stored
vectors are searched as queries (each left out of its own results), exactly and through the
index at each of :data:`EF_LEVELS`, for the top 10 and the top 50. The smallest level
reaching :data:`TARGET` recall at each depth is stored in ``meta`` (``hnsw_calibration``);
dense search uses it, and searches exactly when no level reaches the target ("unusable").

What it does not cover: filtered searches are calibrated unfiltered (with
``hnsw.iterative_scan`` the index keeps scanning until enough eligible rows are found, but
a filter that leaves the query's neighbourhood can still lower recall), and queries that
are not like stored chunks (a question against passages) may lie elsewhere in the graph.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

#: meta key of the last measurement.
META_KEY = "hnsw_calibration"
#: Recall against exact search that an ``ef_search`` level must reach to be used.
TARGET = 0.99
#: ``hnsw.ef_search`` levels tried, smallest first (pgvector's maximum is 1000).
EF_LEVELS = (40, 100, 200, 400, 1000)
#: Depths measured: the top k a search asks for, and the hybrid retriever's dense depth.
DEPTHS = (10, 50)
#: Stored vectors used as queries.
SAMPLE = 32
#: No measurement below this many chunks (the index is searched with the default levels).
CALIBRATE_FROM = 1_000
#: Measure again once the number of chunks with vectors moved by this share.
RECALIBRATE_CHANGE = 0.25


@dataclass(frozen=True)
class Calibration:
    rows: int
    #: Per depth: the smallest ``ef_search`` reaching :data:`TARGET`, or None (search exactly).
    ef: dict[int, int | None]
    #: Per depth and level: the measured recall.
    recall: dict[int, dict[int, float]]
    seconds: float

    def ef_for(self, k: int) -> tuple[bool, int | None]:
        """``(known, ef_search)`` for a top-``k`` search: the level calibrated for the smallest
        depth at or above ``k``; ``(True, None)`` means the index cannot reach the target
        there (search exactly); ``(False, None)`` that ``k`` is deeper than any measured depth."""
        depth = next((d for d in sorted(self.ef) if d >= k), None)
        if depth is None:
            return False, None
        return True, self.ef[depth]

    def to_json(self) -> str:
        return json.dumps({"rows": self.rows, "target": TARGET, "ef": {str(d): e for d, e in self.ef.items()},
                           "recall": {str(d): {str(e): r for e, r in levels.items()} for d, levels in self.recall.items()},
                           "seconds": round(self.seconds, 2)})

    @classmethod
    def from_json(cls, text: str | None) -> Calibration | None:
        if not text:
            return None
        data = json.loads(text)
        return cls(int(data["rows"]), {int(d): (None if e is None else int(e)) for d, e in data["ef"].items()},
                   {int(d): {int(e): float(r) for e, r in levels.items()} for d, levels in data["recall"].items()},
                   float(data.get("seconds", 0.0)))


def due(rows: int, last: Calibration | None, exact_below: int) -> bool:
    """Whether a measurement is due at ``rows`` chunks, after ``last`` (None: never measured)."""
    if rows < max(exact_below, CALIBRATE_FROM):
        return False
    return last is None or abs(rows - last.rows) >= RECALIBRATE_CHANGE * last.rows


def measure(conn: Any, schema: str, *, sample: int | None = None, levels: Sequence[int] | None = None,
            depths: Sequence[int] | None = None) -> Calibration:
    """Search ``sample`` stored vectors exactly and through the HNSW index (as the owner, in one
    read-only transaction of ``conn``) and record the recall of each level at each depth
    (defaults: :data:`SAMPLE`, :data:`EF_LEVELS`, :data:`DEPTHS`)."""
    sample = SAMPLE if sample is None else sample
    levels = EF_LEVELS if levels is None else levels
    depths = DEPTHS if depths is None else depths
    s = sql.Identifier(schema)
    t0 = time.perf_counter()
    deepest = max(depths)
    recall: dict[int, dict[int, float]] = {d: {} for d in depths}
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        rows = int(cur.execute(sql.SQL("SELECT count(*) FROM {}.chunks WHERE embedding IS NOT NULL")
                               .format(s)).fetchone()[0])
        # A fixed pseudo-random sample: the same rows give the same measurement.
        queries = cur.execute(sql.SQL("SELECT row, embedding::text FROM {}.chunks WHERE embedding IS NOT NULL "
                                      "ORDER BY md5(row::text) LIMIT %s").format(s), (sample,)).fetchall()
        truth: list[list[int]] = []
        for row, vector in queries:
            # MATERIALIZED: every row is scored; the HNSW index cannot be used here.
            found = cur.execute(sql.SQL(
                "WITH e AS MATERIALIZED (SELECT row, embedding <#> %(q)s::vector AS d FROM {}.chunks "
                "WHERE embedding IS NOT NULL AND row <> %(self)s) SELECT row FROM e ORDER BY d, row LIMIT %(k)s")
                .format(s), {"q": vector, "self": row, "k": deepest}).fetchall()
            truth.append([r[0] for r in found])
        cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        for depth in depths:
            for ef in levels:
                cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                hits = 0
                for (row, vector), exact in zip(queries, truth):
                    found = cur.execute(sql.SQL(
                        "SELECT row FROM {}.chunks WHERE row <> %(self)s ORDER BY embedding <#> %(q)s::vector LIMIT %(k)s")
                        .format(s), {"q": vector, "self": row, "k": depth}).fetchall()
                    hits += len({r[0] for r in found} & set(exact[:depth]))
                recall[depth][ef] = hits / max(1, sum(min(depth, len(e)) for e in truth))
                if recall[depth][ef] >= TARGET:
                    break  # deeper levels only cost time
    chosen = {d: next((e for e in levels if recall[d].get(e, 0.0) >= TARGET), None) for d in depths}
    return Calibration(rows, chosen, recall, time.perf_counter() - t0)
