"""Semantic chunking: break a heading section where its topic shifts.

Each sentence is embedded together with its neighbours (a *sentence group*: the sentence
before, itself and the one after), and the cosine similarity of consecutive groups is
computed. A break candidate is a gap whose similarity is below the ``percentile``-th
percentile of the section's gaps (the biggest drops). Pieces are then packed in order:
a candidate gap ends the piece once it holds ``min_tokens`` words, and a piece never
grows past ``max_tokens`` words. Heading sections are never merged, so every chunk keeps
its heading path, and every span is a slice of the document text (exact offsets).

Sentences come from :func:`beleg.sentences.split_sentences`, the splitter the
answerer quotes with, so a chunk boundary never cuts a citable sentence in half. A
sentence longer than ``max_tokens`` is cut at word boundaries like ``structure`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from beleg.errors import ModelError
from beleg.sentences import split_sentences

if TYPE_CHECKING:
    from beleg.ingest.chunking import ChunkingConfig, EmbedFn, _Section

#: Sentences on each side of a sentence that its group embedding includes.
GROUP_RADIUS = 1


def semantic_spans(text: str, sections: Sequence[_Section], config: ChunkingConfig,
                   embed: EmbedFn) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, heading path) of every semantic chunk of ``text``, in document order."""
    from beleg.ingest.chunking import _body_is_empty

    out: list[tuple[int, int, tuple[str, ...]]] = []
    for sec in sections:
        if sec.path != sec.path[:1] and _body_is_empty(text, sec):
            continue  # a heading directly followed by its subsection: the child carries the path
        sentences = _sentences(text, sec.start, sec.end, config.max_tokens)
        if not sentences:
            continue
        breaks = _break_candidates(text, sentences, config.percentile, embed)
        out.extend((s, e, sec.path) for s, e in _pack(text, sentences, breaks, config.min_tokens, config.max_tokens))
    return out


def _sentences(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` in absolute offsets; over-long ones cut into word windows."""
    from beleg.ingest.chunking import _count_words, _word_windows

    spans: list[tuple[int, int]] = []
    for span in split_sentences(text[start:end]):
        s, e = start + span.start, start + span.end
        if _count_words(text, s, e) > max_tokens:
            spans.extend(_word_windows(text, s, e, max_tokens, 0))
        elif s < e:
            spans.append((s, e))
    return spans


def _break_candidates(text: str, sentences: list[tuple[int, int]], percentile: float, embed: EmbedFn) -> set[int]:
    """Indices ``i`` such that a break between sentence ``i - 1`` and ``i`` is a topic shift."""
    if len(sentences) < 3:
        return set()  # one gap or none: nothing to compare a drop against
    groups = []
    for i in range(len(sentences)):
        lo, hi = max(0, i - GROUP_RADIUS), min(len(sentences) - 1, i + GROUP_RADIUS)
        groups.append(text[sentences[lo][0]:sentences[hi][1]])
    vectors = np.asarray(embed(groups), dtype=np.float32)
    if vectors.shape[0] != len(groups):
        raise ModelError(f"the embedder returned {vectors.shape[0]} vectors for {len(groups)} sentence groups")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    similarity = np.sum(vectors[1:] * vectors[:-1], axis=1)  # gap j lies before sentence j + 1
    threshold = float(np.percentile(similarity, percentile))
    return {j + 1 for j, sim in enumerate(similarity.tolist()) if sim <= threshold}


def _pack(text: str, sentences: list[tuple[int, int]], breaks: set[int], min_tokens: int,
          max_tokens: int) -> list[tuple[int, int]]:
    """Group consecutive sentences into pieces of min..max words, preferring breaks at topic shifts."""
    from beleg.ingest.chunking import _count_words

    pieces: list[tuple[int, int]] = []
    start, words = sentences[0][0], 0
    end = sentences[0][0]
    for i, (s, e) in enumerate(sentences):
        n = _count_words(text, s, e)
        topic_shift = i in breaks and words >= min_tokens
        if words and (topic_shift or words + n > max_tokens):
            pieces.append((start, end))
            start, words = s, 0
        end = e
        words += n
    pieces.append((start, end))
    return pieces
