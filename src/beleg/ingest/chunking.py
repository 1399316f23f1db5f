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
from typing import TYPE_CHECKING, Literal

from beleg.errors import ConfigError
from beleg.types import Chunk, Heading, ParsedDocument

if TYPE_CHECKING:
    import numpy as np

_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MIN_PIECE_WORDS = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9\"'(])")
METHODS = ("structure", "window", "parent-child", "semantic")
#: Embeds passages (semantic chunking needs the index's embedder while chunking).
EmbedFn = Callable[[list[str]], "np.ndarray"]


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    """How documents are cut into chunks; part of the index version."""

    method: Literal["structure", "window", "parent-child", "semantic"] = "structure"
    max_tokens: int = 220
    overlap: int = 40
    #: Contextual retrieval: a situating context indexed with each chunk (both legs).
    #: "none", "offline" (title, version facts, the document's lead, the previous chunk's
    #: tail) or "llm:PROVIDER:MODEL" (written by that model, cached in the catalog).
    context: str = "none"
    #: parent-child: the size of a child (the indexed unit) in words; parents are max_tokens.
    child_tokens: int = 60
    #: semantic: a break goes where the similarity of neighbouring sentence groups is below
    #: this percentile of the section's similarities; pieces stay within min_tokens..max_tokens.
    percentile: float = 20.0
    min_tokens: int = 30

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"chunking method {self.method!r} is unknown; use one of {', '.join(METHODS)}")
        if self.max_tokens < 8:
            raise ConfigError(f"max_tokens={self.max_tokens} is too small; use at least 8 words")
        if self.method == "parent-child" and not 4 <= self.child_tokens <= self.max_tokens:
            raise ConfigError(f"child_tokens={self.child_tokens} must be between 4 and max_tokens={self.max_tokens}")
        if not 0.0 < self.percentile < 100.0:
            raise ConfigError(f"percentile={self.percentile} must lie strictly between 0 and 100, e.g. 20")
        if self.method == "semantic" and not 1 <= self.min_tokens <= self.max_tokens:
            raise ConfigError(f"min_tokens={self.min_tokens} must be between 1 and max_tokens={self.max_tokens}")
        if self.context not in ("none", "offline") and not self.context.startswith("llm:"):
            raise ConfigError(f"chunk context {self.context!r} is unknown; use 'none', 'offline' or 'llm:PROVIDER:MODEL'")
        if not 0 <= self.overlap < self.max_tokens:
            raise ConfigError(
                f"overlap={self.overlap} must be at least 0 and below max_tokens={self.max_tokens}"
            )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "max_tokens": self.max_tokens, "overlap": self.overlap}
        if self.context != "none":  # absent when off, so existing index versions keep their hash
            out["context"] = self.context
        # Method-specific sizes enter the version only for their method (older hashes stay).
        if self.method == "parent-child":
            out["child_tokens"] = self.child_tokens
        if self.method == "semantic":
            out["percentile"], out["min_tokens"] = self.percentile, self.min_tokens
        return out


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
    if config.method == "structure":
        spans = list(_structure_spans(parsed.text, sections, config.max_tokens))
    elif config.method == "parent-child":
        spans = [(s, e, path) for ps, pe, path in _structure_spans(parsed.text, sections, config.max_tokens)
                 for s, e in _pack(parsed.text, ps, pe, config.child_tokens, _PARAGRAPH_BREAK)]
    elif config.method == "semantic":
        from beleg.ingest.semantic_chunking import semantic_spans

        if embed is None:
            raise ConfigError("semantic chunking needs the index's embedder; pass embed= to chunk_document")
        spans = semantic_spans(parsed.text, sections, config, embed)
    else:
        spans = list(_windows(parsed.text, sections, config.max_tokens, config.overlap))
    return _as_chunks(doc_id, parsed.text, spans)


def parents_of_children(text: str, children: Sequence[tuple[int, int, tuple[str, ...]]],
                        max_tokens: int) -> list[tuple[int, int, tuple[str, ...]]]:
    """The parents of a ``parent-child`` document, re-derived from its stored children
    ``(start, end, heading path)`` in order: consecutive children with one heading path are
    one section, which is split as ``structure`` splits it (the same spans, since the gaps
    between children are whitespace)."""
    parents: list[tuple[int, int, tuple[str, ...]]] = []
    i = 0
    while i < len(children):
        j = i
        while j + 1 < len(children) and children[j + 1][2] == children[i][2]:
            j += 1
        for s, e in _pack(text, children[i][0], children[j][1], max_tokens, _PARAGRAPH_BREAK):
            s, e = _strip(text, s, e)
            if s < e:
                parents.append((s, e, children[i][2]))
        i = j + 1
    return parents


def _structure_spans(text: str, sections: list[_Section], max_tokens: int) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    for sec in sections:
        for s, e in _split_section(text, sec, max_tokens):
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


def _split_section(text: str, section: _Section, max_tokens: int) -> Iterator[tuple[int, int]]:
    """Split one section into spans of at most ``max_tokens`` words, at natural breaks."""
    if section.path != section.path[:1] and _body_is_empty(text, section):
        return  # a heading directly followed by its subsection: the child carries the path
    yield from _pack(text, section.start, section.end, max_tokens, _PARAGRAPH_BREAK)


def _pack(text: str, start: int, end: int, max_tokens: int, separator: re.Pattern[str]) -> Iterator[tuple[int, int]]:
    if _count_words(text, start, end) <= max_tokens:
        yield start, end
        return
    pieces = _pieces(text, start, end, separator)
    if len(pieces) == 1:
        if separator is _PARAGRAPH_BREAK:
            yield from _pack(text, start, end, max_tokens, _SENTENCE_END)
        else:
            yield from _word_windows(text, start, end, max_tokens, 0)
        return
    group_start, group_words = pieces[0][0], 0
    group_end = pieces[0][0]
    for p_start, p_end in pieces:
        words = _count_words(text, p_start, p_end)
        if group_words and group_words + words > max_tokens:
            yield from _pack(text, group_start, group_end, max_tokens, separator)
            group_start, group_words = p_start, 0
        group_end = p_end
        group_words += words
    yield from _pack(text, group_start, group_end, max_tokens, separator)


def _pieces(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    pieces, cursor = [], start
    for match in separator.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    pieces = [(s, e) for s, e in pieces if text[s:e].strip()]
    # A heading line or a one-line lead-in belongs with what follows it, not alone.
    merged: list[tuple[int, int]] = []
    for s, e in pieces:
        if merged and _count_words(text, *merged[-1]) < _MIN_PIECE_WORDS:
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
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
