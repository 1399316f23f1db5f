"""Query understanding shared by search, answering and every strategy.

* :mod:`beleg.query.versions`: which versions a question asks about (one rule for search
  boosts and for the answer's target version);
* :mod:`beleg.query.self_query`: constraints stated in words (product, version, status,
  language, date range) turned into filters and boosts, from values the asker may see;
* :mod:`beleg.query.intent`: questions that need no retrieval (arithmetic, greetings,
  questions about the assistant), answered by rule.

This package imports nothing from ``beleg.answer``, ``beleg.strategies`` or ``beleg.kb``,
so each of them can import it without a cycle. Import from the modules themselves: this
file imports none of them, so a search that needs only the self-query rules does not pay
for the intent rules' set-up (start-up time of every search).
"""
