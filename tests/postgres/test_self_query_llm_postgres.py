"""The LLM self-query over PostgreSQL: the prompt offers only what Row-Level Security lets the asker read."""

from __future__ import annotations

from typing import Any

import beleg
from beleg.backends.llms import load_llm
from beleg.ingest.pipeline import TextSource
from beleg.testing import FakeOpenAIServer
from beleg.types import Principal

ACME = Principal(user="ann", tenant="acme", groups=("ops-acme",))
QUESTION = "How does the ledger product replicate?"


def test_hidden_values_are_never_offered_nor_accepted_over_postgres(pg_location: str, embedder: Any) -> None:
    with beleg.open(pg_location, embedder=embedder) as kb:
        kb.ingest_texts([
            TextSource("ferrolink.md", "# Replication\n\nFerrolink 3.0 replicates every queue to two zones.",
                       {"product": "ferrolink", "version": "3.0", "status": "current", "language": "en"}),
            TextSource("geheimdb.md", "# Replication\n\nGeheimdb 7.7 replicates its ledger to the vault.",
                       {"product": "geheimdb", "version": "7.7", "status": "draft", "language": "en",
                        "tenant": "acme", "acl": ["ops-acme"]}),
        ], progress=False)
        with FakeOpenAIServer(['{"product": "geheimdb", "version": "7.7"}'] * 2) as server:
            llm = load_llm("openai-compatible:fake", base_url=server.base_url, max_retries=0)
            public = kb.infer_constraints(QUESTION, llm=llm)
            tenant = kb.infer_constraints(QUESTION, ACME, llm=llm)
            prompts = ["\n".join(m.content for m in call) for call in server.llm.calls]
    assert "geheimdb" not in prompts[0] and "7.7" not in prompts[0] and "draft" not in prompts[0]
    assert public.applied() == () and {r.field for r in public.llm.rejected} == {"product", "version"}
    assert '"geheimdb"' in prompts[1]
    assert {c.key: c.value for c in tenant.applied()} == {"product": "geheimdb", "version": "7.7"}
