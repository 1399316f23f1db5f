"""String tables of a persisted view: the same strings and lookups as a list and a dict."""

from __future__ import annotations

import numpy as np
import pytest

from beleg.index.string_table import StringTable, TermIds, encode, sorted_terms

STRINGS = ["", "a", "ab", "abc", "b", "Größe", "größe", "straße", "/api/v3", "E-4012", "日本", "😀", "z" * 300]


def test_a_table_reads_back_every_string_by_position_slice_and_iteration():
    table = StringTable(*encode(STRINGS))
    assert len(table) == len(STRINGS)
    assert [table[i] for i in range(len(STRINGS))] == STRINGS
    assert list(table) == STRINGS and table[-1] == STRINGS[-1] and table[2:5] == STRINGS[2:5]
    assert table.index("Größe") == STRINGS.index("Größe") and "日本" in table and "c" not in table
    with pytest.raises(IndexError):
        table[len(STRINGS)]
    with pytest.raises(IndexError):
        table[-len(STRINGS) - 1]
    empty = StringTable(*encode([]))
    assert len(empty) == 0 and list(empty) == []


def test_offsets_that_do_not_fit_the_blob_are_refused():
    blob, offsets = encode(["abc", "de"])
    with pytest.raises(ValueError):
        StringTable(blob[:-1], offsets)
    with pytest.raises(ValueError):
        StringTable(blob, np.zeros(0, dtype=np.int64))


def test_term_ids_answer_every_lookup_as_the_dict_they_were_made_from():
    rng = np.random.default_rng(3)
    alphabet = list("abcäöüßé-/.0123")
    vocab = {"".join(rng.choice(alphabet, size=int(rng.integers(1, 8)))): int(i) for i in range(3000)}
    vocab.update({s: 10_000 + i for i, s in enumerate(STRINGS)})
    blob, offsets, ids = sorted_terms(vocab)
    terms = TermIds(StringTable(blob, offsets), ids)
    assert len(terms) == len(vocab) and terms == vocab and dict(terms) == vocab
    for term, tid in vocab.items():
        assert term in terms and terms[term] == tid and terms.get(term) == tid
    probes = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 9)))) for _ in range(3000)] + ["ä" * 9, "\uffff"]
    for probe in probes:
        assert (probe in terms) == (probe in vocab) and terms.get(probe) == vocab.get(probe)
    assert 5 not in terms and terms.get(None) is None  # type: ignore[call-overload]
    with pytest.raises(KeyError):
        terms["not a term at all"]


def test_term_ids_need_one_id_per_term():
    blob, offsets, ids = sorted_terms({"a": 0, "b": 1})
    with pytest.raises(ValueError):
        TermIds(StringTable(blob, offsets), ids[:1])
