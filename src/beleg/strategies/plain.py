"""Plain retrieval: one search with the question as asked. The baseline every strategy must beat."""

from __future__ import annotations

from beleg.strategies.base import StrategyContext, StrategyResult


class PlainSearch:
    name = "hybrid"
    offline = True

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        return StrategyResult(ctx.search(question, step="search"), ctx.trace)
