"""What a search process loads: the persisted view from its files, and no ingest machinery."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_threads import HashEmbedder

import beleg
from beleg.ingest.pipeline import TextSource

CHILD = r"""
import sys
from beleg.index import persisted_view
import beleg

def no_sqlite_rebuild(*args, **kwargs):
    raise AssertionError("a current view must open from its files")

persisted_view._rebuild = no_sqlite_rebuild
with beleg.open(sys.argv[1], create=False) as kb:
    hits = kb.search("relay redrive", mode="bm25", k=3, self_query=False)
print(len(hits), sorted(m for m in ("beleg.ingest.pipeline", "tqdm", "beleg.backends.embedders.e5_fp32") if m in sys.modules))
"""


def test_a_bm25_search_process_opens_the_persisted_view_and_imports_no_ingest_or_model_code(tmp_path: Path) -> None:
    with beleg.open(tmp_path / "kb", embedder=HashEmbedder()) as kb:
        kb.ingest_texts([TextSource("notes/relay.md", "# Relay\n\nRelay redrive notes.\n", {}, "Relay")],
                        progress=False)
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "kb")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "[]"], out.stdout


LAZY_CHILD = r"""
import sys
import beleg

with beleg.open(sys.argv[1], create=False) as kb:
    hits = kb.search("relay redrive", mode="bm25", k=3, self_query=False)
patterns = sys.modules.get("beleg.ingest.injection_patterns")
compiled = patterns._compiled.cache_info().currsize if patterns else 0
print(len(hits), compiled, sorted(m for m in ("beleg.answer", "beleg.retrieve.compress", "beleg.query.self_query")
                                  if m in sys.modules))
"""


def test_a_plain_bm25_search_imports_no_answerer_self_query_or_compiled_injection_patterns(tmp_path: Path) -> None:
    # No flagged chunks to re-detect, no techniques, no self-query: none of these is needed, and
    # together they cost about half a second of start-up.
    with beleg.open(tmp_path / "kb", embedder=HashEmbedder()) as kb:
        kb.ingest_texts([TextSource("notes/relay.md", "# Relay\n\nRelay redrive notes.\n", {}, "Relay")],
                        progress=False)
    out = subprocess.run([sys.executable, "-c", LAZY_CHILD, str(tmp_path / "kb")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "0", "[]"], out.stdout


def test_every_injection_pattern_compiles_on_first_use_and_is_compiled_once() -> None:
    from beleg.ingest.injection_patterns import FAMILIES

    rules = [rule for _, family in FAMILIES for rule in family]
    assert rules and all(rule.pattern.flags for rule in rules)  # each source is a valid regex
    assert all(rule.pattern is rule.pattern for rule in rules)
