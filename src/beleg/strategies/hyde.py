"""HyDE (Gao et al., 2022, "Precise Zero-Shot Dense Retrieval without Relevance Labels"):
search with a hypothetical answer instead of the question.

A question and the passage that answers it are worded differently ("How long may one item
be?" vs. "The maximum message size is 1 MB"). A passage written the way documentation is
written lies closer to the answering chunks in embedding space than the question does, even
when its facts are wrong: it is used to search, never shown or cited.

One LLM call writes a short passage in the question's language; it is searched in dense
mode (its invented facts would only add noise to BM25), the question itself in the caller's
mode, and both lists are fused with RRF. Versions and products the passage names that
are not in the question or conversation are removed before searching, so the passage
cannot pull retrieval to another version.

There is no honest offline method: without an LLM the strategy raises
:class:`~beleg.errors.NeedsLLMError` (multi-query has an offline expansion).
"""

from __future__ import annotations

from beleg.backends.llms.base import Message
from beleg.errors import NeedsLLMError
from beleg.index.analyzer import detect_language
from beleg.strategies.base import StrategyContext, StrategyResult, fuse
from beleg.strategies.rewrite import (
    conversation_block,
    enforce_constraints,
    known_products,
)

HYDE_SYSTEM = """You write passages of product documentation. Given a question, write the passage
from the documentation that answers it: 3 to 5 sentences, factual in tone, in {language}, in the words
documentation would use (names of features, settings, headers, error codes). No introduction, no hedging,
no questions. If you do not know the facts, write a plausible passage anyway: it is only used to find
the real documentation, never shown. Name no product version that the question or conversation does not name."""

HYDE_USER = """Earlier questions of the conversation (for reference only, oldest first):
{conversation}

Question: {question}

Documentation passage:"""

NO_LLM = ("hyde needs an LLM to write the hypothetical answer; configure --llm, "
          "or use multi-query for an offline expansion")

_LANGUAGES = {"en": "English", "de": "German"}
_MAX_WORDS = 180


class HydeStrategy:
    """Search with a hypothetical answer passage (dense) and the question; fuse with RRF."""

    name = "hyde"
    offline = False

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        if ctx.llm is None:
            raise NeedsLLMError(NO_LLM)
        lists = [ctx.search(question, step="search")]
        language = detect_language(question)
        messages = [Message("system", HYDE_SYSTEM.format(language=_LANGUAGES.get(language, language))),
                    Message("user", HYDE_USER.format(conversation=conversation_block(ctx.context),
                                                     question=question))]
        reply = ctx.complete(messages, step="hyde-llm", max_tokens=250)
        passage = " ".join(reply.split()[:_MAX_WORDS])
        passage, removed = strip_invented(passage, "\n".join([question, *ctx.context]), known_products(ctx))
        if removed:
            ctx.note(f"hypothetical passage: removed {', '.join(removed)} (not in the question or conversation)")
        if not passage.strip():
            ctx.note("the LLM wrote no passage; only the question was searched")
            return StrategyResult(lists[0], ctx.trace)
        ctx.note(f"hypothetical passage written in {_LANGUAGES.get(language, language)} "
                 f"({len(passage.split())} words), searched in dense mode")
        lists.append(ctx.search(passage, step="hypothetical", mode="dense"))
        return StrategyResult(fuse(lists, ctx.k), ctx.trace)


def strip_invented(passage: str, allowed: str, products: list[str]) -> tuple[str, list[str]]:
    """Remove versions and products the passage names that ``allowed`` (question + conversation) lacks.

    Other numbers stay: the passage is hypothetical by design, its figures only shape the
    embedding. A version, however, would steer retrieval to that version's documents.
    """
    checked = enforce_constraints(passage, allowed, (), products, check_identifiers=False)
    return checked.query, checked.removed
