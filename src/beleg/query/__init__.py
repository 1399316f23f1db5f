"""Query understanding shared by search, answering and every strategy.

* :mod:`beleg.query.versions`: which versions a question asks about (one rule for search
  boosts and for the answer's target version);
* :mod:`beleg.query.self_query`: constraints stated in words (product, version, status,
  language, date range) turned into filters and boosts, from values the asker may see;
* :mod:`beleg.query.intent`: questions that need no retrieval (arithmetic, greetings,
  questions about the assistant), answered by rule.

This package imports nothing from ``beleg.answer``, ``beleg.strategies`` or ``beleg.kb``,
so each of them can import it without a cycle.
"""

from beleg.query.intent import Intent, no_retrieval_intent
from beleg.query.self_query import Constraint, Inferred, apply_constraints, infer_constraints
from beleg.query.versions import asked_versions, version_mentions

__all__ = ["Constraint", "Inferred", "Intent", "apply_constraints", "asked_versions", "infer_constraints",
           "no_retrieval_intent", "version_mentions"]
