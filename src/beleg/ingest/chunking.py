"""Split a parsed document into chunks that keep their place in the document.

Two methods:

* ``structure`` (default): one chunk per heading section; long sections are split at
  paragraph, then sentence, then word boundaries. Every chunk carries its heading path
  ("Title > Section > Subsection"), which readers of a hit need to judge it and which
  the index adds to the text it searches.
* ``window``: fixed windows of ``max_tokens`` words with ``overlap`` words shared between
  neighbours; the heading path is that of the section the window starts in.
* ``parent-child`` (small-to-big): the indexed chunks are *children* of about
  ``child_tokens`` words (a sentence group) inside the ``structure`` chunks, which are
  their *parents*; search matches children and returns their parents
  (:mod:`beleg.retrieve.expand`), which are re-derived from the stored children with
  :func:`parents_of_children`, so nothing but the children is stored.
* ``semantic``: breaks inside each heading section where the embedding similarity of
  consecutive sentence groups drops (:mod:`beleg.ingest.semantic_chunking`).

"Tokens" here are whitespace-separated words: cheap, language-neutral and stable. The
default of 220 words stays under e5's 512 sub-word limit for German and English.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

# ChunkingConfig is part of the index version, so it lives with IndexConfig; it is
# re-exported here, where chunking is described (ingest imports index, never the reverse).
from beleg.errors import ConfigError
from beleg.index.config import ChunkingConfig
from beleg.types import Chunk, Heading, ParsedDocument

if TYPE_CHECKING:
    import numpy as np

_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MIN_PIECE_WORDS = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9\"'(])")
_LINE_BREAK = re.compile(r"\n")
#: Embeds passages (semantic chunking needs the index's embedder while chunking).
EmbedFn = Callable[[list[str]], "np.ndarray"]


@dataclass(frozen=True, slots=True)
class _Section:
    start: int
    end: int
    path: tuple[str, ...]


def chunk_document(doc_id: str, parsed: ParsedDocument, title: str, config: ChunkingConfig,
                   embed: EmbedFn | None = None) -> list[Chunk]:
    """Cut ``parsed.text`` into chunks with exact offsets and heading paths.

    ``embed`` (passages → vectors) is needed by the ``semantic`` method only."""
    sections = list(_sections(parsed.text, parsed.headings, title))
    rules = config.rules
    if config.method == "structure":
        spans = list(_structure_spans(parsed.text, sections, config.max_tokens, rules))
    elif config.method == "parent-child":
        spans = [(s, e, path) for ps, pe, path in _structure_spans(parsed.text, sections, config.max_tokens, rules)
                 for s, e in _pack(parsed.text, ps, pe, config.child_tokens, _PARAGRAPH_BREAK, rules)]
    elif config.method == "semantic":
        from beleg.ingest.semantic_chunking import semantic_spans

        if embed is None:
            raise ConfigError("semantic chunking needs the index's embedder; pass embed= to chunk_document")
        spans = semantic_spans(parsed.text, sections, config, embed)
    else:
        spans = list(_windows(parsed.text, sections, config.max_tokens, config.overlap))
    return _as_chunks(doc_id, parsed.text, spans)


def parents_of_children(text: str, children: Sequence[tuple[int, int, tuple[str, ...]]],
                        config: ChunkingConfig) -> list[tuple[int, int, tuple[str, ...]]]:
    """The parents of a ``parent-child`` document, re-derived from its stored children
    ``(start, end, heading path)`` in order: consecutive children with one heading path are
    one section, which is split as ``structure`` splits it under the index's ``config``
    (its max_tokens and rules: the same spans, since the gaps between children are whitespace)."""
    max_tokens, rules = config.max_tokens, config.rules
    parents: list[tuple[int, int, tuple[str, ...]]] = []
    i = 0
    while i < len(children):
        j = i
        while j + 1 < len(children) and children[j + 1][2] == children[i][2]:
            j += 1
        for s, e in _pack(text, children[i][0], children[j][1], max_tokens, _PARAGRAPH_BREAK, rules):
            s, e = _strip(text, s, e)
            if s < e:
                parents.append((s, e, children[i][2]))
        i = j + 1
    return parents


def _structure_spans(text: str, sections: list[_Section], max_tokens: int,
                     rules: int) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    for sec in sections:
        for s, e in _split_section(text, sec, max_tokens, rules):
            yield s, e, sec.path


def _as_chunks(doc_id: str, text_all: str, spans: list[tuple[int, int, tuple[str, ...]]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for start, end, path in spans:
        start, end = _strip(text_all, start, end)
        if start >= end:
            continue
        text = text_all[start:end]
        key = hashlib.sha256("\x1f".join([doc_id, " > ".join(path), text]).encode()).hexdigest()
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        chunk_id = hashlib.sha256(f"{key}\x1f{occurrence}".encode()).hexdigest()[:24]
        chunks.append(Chunk(chunk_id, doc_id, len(chunks), start, end, path, text))
    return chunks


def _sections(text: str, headings: tuple[Heading, ...], title: str) -> Iterator[_Section]:
    """Heading sections in document order, each with its full heading path."""
    ordered = sorted(headings, key=lambda h: h.start)
    bounds = [h.start for h in ordered] + [len(text)]
    if not ordered or ordered[0].start > 0:
        yield _Section(0, bounds[0], (title,))
    stack: list[Heading] = []
    for i, heading in enumerate(ordered):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        # A top-level heading that repeats the title would read "Title > Title".
        names = [h.title for h in stack if not (h.level == 1 and h.title.strip() == title.strip())]
        yield _Section(heading.start, bounds[i + 1], (title, *names))


def _body_is_empty(text: str, section: _Section) -> bool:
    body = text[section.start : section.end]
    first_newline = body.find("\n")
    return first_newline < 0 or not body[first_newline:].strip()


def _split_section(text: str, section: _Section, max_tokens: int, rules: int) -> Iterator[tuple[int, int]]:
    """Split one section into spans of at most ``max_tokens`` words, at natural breaks."""
    if section.path != section.path[:1] and _body_is_empty(text, section):
        return  # a heading directly followed by its subsection: the child carries the path
    yield from _pack(text, section.start, section.end, max_tokens, _PARAGRAPH_BREAK, rules)


def _pack(text: str, start: int, end: int, max_tokens: int, separator: re.Pattern[str],
          rules: int) -> Iterator[tuple[int, int]]:
    """Spans of at most ``max_tokens`` words: paragraphs, else sentences, else (rules 3) lines,
    else word windows. Rules 3: a table too long for one chunk is cut between rows, never
    inside one (before, a 60-row table's chunks began and ended in the middle of rows)."""
    if _count_words(text, start, end) <= max_tokens:
        yield start, end
        return
    pieces = _pieces(text, start, end, separator, rules)
    if len(pieces) == 1:
        if separator is _PARAGRAPH_BREAK:
            lines_first = rules >= 3 and _holds_table(text, start, end)
            yield from _pack(text, start, end, max_tokens, _LINE_BREAK if lines_first else _SENTENCE_END, rules)
        elif separator is _SENTENCE_END and rules >= 3:
            yield from _pack(text, start, end, max_tokens, _LINE_BREAK, rules)
        else:
            yield from _word_windows(text, start, end, max_tokens, 0)
        return
    group_start, group_words = pieces[0][0], 0
    group_end = pieces[0][0]
    for p_start, p_end in pieces:
        words = _count_words(text, p_start, p_end)
        if group_words and group_words + words > max_tokens:
            yield from _pack(text, group_start, group_end, max_tokens, separator, rules)
            group_start, group_words = p_start, 0
        group_end = p_end
        group_words += words
    yield from _pack(text, group_start, group_end, max_tokens, separator, rules)


def _holds_table(text: str, start: int, end: int) -> bool:
    """Whether the block holds a pipe table (two or more table rows), alone or after the
    paragraph that announces it ("The settings:")."""
    return sum(line.lstrip().startswith("|") for line in text[start:end].splitlines()) >= 2


def _pieces(text: str, start: int, end: int, separator: re.Pattern[str], rules: int) -> list[tuple[int, int]]:
    pieces, cursor = [], start
    for match in separator.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    pieces = [(s, e) for s, e in pieces if text[s:e].strip()]
    # A heading line or a one-line lead-in belongs with what follows it, not alone; so does
    # (chunking rules 2) a paragraph that ends in ":", whatever its length: "Here is a
    # recommendation:" announces the code block, list or table after it.
    # The merged piece's word count and last character are kept as it grows: recounting or
    # re-stripping it for every piece made many ":"-ended lines quadratic. The separators are
    # whitespace, so the merged count is the sum of its pieces' counts.
    merged: list[tuple[int, int]] = []
    merged_words, merged_last = 0, ""
    for s, e in pieces:
        words = _count_words(text, s, e)
        if merged and (merged_words < _MIN_PIECE_WORDS or rules >= 2 and merged_last == ":"):
            merged[-1] = (merged[-1][0], e)
            merged_words += words
        else:
            merged.append((s, e))
            merged_words = words
        merged_last = text[s:e].rstrip()[-1]  # the piece is not blank (filtered above)
    return merged


def _word_windows(text: str, start: int, end: int, size: int, overlap: int) -> Iterator[tuple[int, int]]:
    words = [m.span() for m in _WORD.finditer(text, start, end)]
    step = size - overlap
    for i in range(0, len(words), step):
        window = words[i : i + size]
        yield window[0][0], window[-1][1]
        if i + size >= len(words):
            break


def _windows(text: str, sections: list[_Section], size: int, overlap: int) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    starts = [s.start for s in sections]
    for s, e in _word_windows(text, 0, len(text), size, overlap):
        # The window belongs to the last section that starts at or before it.
        idx = max((i for i, st in enumerate(starts) if st <= s), default=0)
        yield s, e, sections[idx].path


def _count_words(text: str, start: int, end: int) -> int:
    return sum(1 for _ in _WORD.finditer(text, start, end))


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
