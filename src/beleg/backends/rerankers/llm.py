"""Rerank with the configured LLM: pointwise (a 0-10 grade per passage) or listwise (one ranking).

Pointwise asks once per passage, listwise once per query. A reply that cannot be read
(no number; a ranking that names unknown passages) is an error naming what came back,
never a silent fall back to the fused order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from beleg.errors import ConfigError, ModelError

POINTWISE = ("Grade how well the passage answers the question, from 0 (not at all) to 10 (fully). "
             "Reply with the number only.")
LISTWISE = ("Rank the numbered passages by how well they answer the question, best first. Reply with "
            "the passage numbers only, separated by commas.")
#: Characters of a passage shown to the model.
PASSAGE_CHARS = 1200


class LLMReranker:
    def __init__(self, llm: Any, method: str = "pointwise") -> None:
        if method not in ("pointwise", "listwise"):
            raise ConfigError(f"LLM reranking method {method!r} is unknown; use llm:pointwise or llm:listwise")
        self.llm, self.method = llm, method
        self.spec = f"llm:{method}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        return self._pointwise(query, passages) if self.method == "pointwise" else self._listwise(query, passages)

    def _ask(self, system: str, user: str) -> str:
        from beleg.backends.llms.base import Message

        return str(self.llm.complete([Message("system", system), Message("user", user)], max_tokens=60).text)

    def _pointwise(self, query: str, passages: Sequence[str]) -> list[float]:
        scores = []
        for p in passages:
            reply = self._ask(POINTWISE, f"Question: {query}\n\nPassage:\n{p[:PASSAGE_CHARS]}")
            m = re.search(r"\d+(?:\.\d+)?", reply)
            if m is None:
                raise ModelError(f"the LLM reranker expected a grade 0-10, got {reply[:80]!r}")
            scores.append(min(float(m.group()), 10.0))
        return scores

    def _listwise(self, query: str, passages: Sequence[str]) -> list[float]:
        listing = "\n\n".join(f"[{i}] {p[:PASSAGE_CHARS]}" for i, p in enumerate(passages, 1))
        reply = self._ask(LISTWISE, f"Question: {query}\n\n{listing}")
        order = [int(n) for n in re.findall(r"\d+", reply)]
        if not order or any(not 1 <= n <= len(passages) for n in order):
            raise ModelError(f"the LLM reranker expected passage numbers 1-{len(passages)}, got {reply[:80]!r}")
        ranked = list(dict.fromkeys(order))
        # Unranked passages keep their input order below the ranked ones.
        ranked += [i for i in range(1, len(passages) + 1) if i not in ranked]
        return [float(len(passages) - ranked.index(i)) for i in range(1, len(passages) + 1)]
