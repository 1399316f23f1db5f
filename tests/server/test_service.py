"""The service layer: options reach every strategy the same way, on the CLI and over HTTP."""

from __future__ import annotations

import contextlib
import io
import json

import httpx
import pytest

from tests.server.conftest import bearer

QUESTION = "How long are failed webhook deliveries retried?"
# Three near-duplicates and one different relevant page: MMR moves the different one up.
DOCS = {f"dup{n}.md": f"# Retry window {n}\n\nFailed webhook deliveries are retried for 72 hours from the first "
                      f"attempt{tail}.\n" for n, tail in ((1, ""), (2, " by Ferrolink"), (3, ", then dropped"))}
DOCS["other.md"] = ("# Dead letters\n\nAfter the retry window a failed webhook delivery moves to the dead-letter "
                    "queue, where operators can redrive it.\n")
DOCS["unrelated.md"] = "# Billing\n\nInvoices are sent monthly.\n"


@pytest.fixture(scope="module")
def dup_index(tmp_path_factory, embedder):
    import beleg

    root = tmp_path_factory.mktemp("mmr")
    (root / "corpus").mkdir()
    for name, text in DOCS.items():
        (root / "corpus" / name).write_text(text, encoding="utf-8")
    with beleg.open(root / "kb", embedder=embedder) as kb:
        kb.ingest([str(root / "corpus")], progress=False)
    return root / "kb"


def _cli_search(index, *extra: str) -> dict:
    from beleg.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["search", QUESTION, "--index", str(index), "-k", "3", "--json", *extra]) == 0
    return json.loads(out.getvalue())


def _sources(result: dict) -> list[str]:
    return [h["source"].rsplit("/", 1)[-1] for h in result["hits"]]


@pytest.mark.parametrize("strategy", ["rewrite", "multi-query"])
def test_mmr_reaches_strategies_as_it_reaches_plain_search(dup_index, strategy):
    """``search --strategy rewrite --mmr 0.3`` diversifies exactly like ``search --mmr 0.3``
    (before the service layer, strategies dropped --mmr silently)."""
    plain = _sources(_cli_search(dup_index))
    diversified = _sources(_cli_search(dup_index, "--mmr", "0.3"))
    assert plain != diversified and "other.md" in diversified[:2]  # MMR changes this list
    with_strategy = _cli_search(dup_index, "--strategy", strategy, "--mmr", "0.3")
    assert with_strategy["trace"]["strategy"] == strategy
    assert _sources(with_strategy) == diversified
    assert _sources(_cli_search(dup_index, "--strategy", strategy)) == plain


def test_fusion_weights_reach_strategies(dup_index):
    weighted = _sources(_cli_search(dup_index, "--fusion", "weighted", "--weights", "1,0"))
    assert weighted != _sources(_cli_search(dup_index))
    assert _sources(_cli_search(dup_index, "--strategy", "rewrite", "--fusion", "weighted", "--weights", "1,0")) == weighted


def test_http_and_cli_return_the_same_search_object(dup_index, start_server, api_keys):
    cli = _cli_search(dup_index, "--strategy", "rewrite", "--mmr", "0.3")
    with start_server(index=str(dup_index)) as url:
        r = httpx.post(f"{url}/v1/search", json={"query": QUESTION, "k": 3, "strategy": "rewrite", "mmr": 0.3},
                       headers=bearer(api_keys["public"]), timeout=60)
    api = r.json()
    assert [h["chunk_id"] for h in api["hits"]] == [h["chunk_id"] for h in cli["hits"]]
    assert [{k: v for k, v in h.items() if k != "score"} for h in api["hits"]] == \
           [{k: v for k, v in h.items() if k != "score"} for h in cli["hits"]]
    assert api["trace"]["queries"] == cli["trace"]["queries"]
