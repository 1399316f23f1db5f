"""Markdown files: YAML front matter becomes metadata, ATX/setext headings are indexed.

The body is kept as written (heading lines included), so a quoted span can be found in
the source file by eye; only the front matter and blank edges are removed, and text a
reader of the rendered page would not see (HTML comments, hidden HTML elements) is
blanked in place, keeping every offset (:mod:`beleg.ingest.readers.markdown_hidden`).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml

from beleg.errors import IngestError, NoContent
from beleg.ingest.readers.base import decode_text, iso_date, require_content
from beleg.ingest.readers.markdown_hidden import blank_hidden
from beleg.ingest.readers.text import body_position, trim_blank_edges
from beleg.types import Heading, ParsedDocument
from beleg.yamlfile import MAX_DEPTH, YamlAliasError, YamlDepthError, load_yaml

logger = logging.getLogger(__name__)

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# Lines that cannot be the text of a setext heading: a '---' under them is something else.
_NOT_SETEXT_TEXT = re.compile(r"^(?: {4}| {0,3}(?:[-*+>|#]|\d+[.)]\s|`{3}|~{3}))")
_FRONT_MATTER_FENCE = "---"
_FRONT_MATTER_END = ("---", "...")
#: Front matter is metadata, a few hundred bytes as a rule; past this it is not metadata,
#: and PyYAML (pure Python here) would spend seconds on it.
MAX_FRONT_MATTER_CHARS = 256 * 1024

# Inline markup removed from heading titles so that heading paths read as plain text.
# Links and emphasis are found by hand (below), not by the regular expressions that say
# what they match: those backtrack, and one long heading line cost seconds to minutes.
_CODE = re.compile(r"`+([^`]*)`+")
# Emphasis delimiters in the order the old pattern (\*{1,3}|_{2,3}) tried them at a position.
_EMPHASIS_DELIMITERS = ("***", "**", "*", "___", "__")


def _clean_title(raw: str) -> str:
    title = _strip_links(raw)
    title = _CODE.sub(r"\1", title)
    title = _strip_emphasis(title)
    return " ".join(title.split())


def atx_heading(line: str) -> tuple[int, str] | None:
    r"""(level, raw title) of a CommonMark ATX heading line (no newline in it), else ``None``.

    Up to three spaces of indent (four would be a code block), one to six '#', then a space,
    a tab or the end of the line; a closing run of '#' after a space or tab is dropped
    (``# Title ##`` -> ``Title``, ``# Title#`` keeps its '#'). String operations, not the
    regular expression ``(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`` this replaces (same results):
    its lazy title before optional whitespace and ``$`` backtracked quadratically, and one
    100 KB line (``# a``, spaces, ``x``) took 66 s.
    """
    body = line.lstrip(" ")
    if len(line) - len(body) > 3 or not body.startswith("#"):
        return None
    rest = body.lstrip("#")
    level = len(body) - len(rest)
    if level > 6 or (rest and rest[0] not in " \t"):
        return None  # seven '#', or '#5 bolt'
    title = rest.strip(" \t")
    unclosed = title.rstrip("#")
    if unclosed and unclosed != title and unclosed[-1] in " \t":
        title = unclosed.rstrip(" \t")
    return level, title


class _NextMatch:
    """``text.find(needle, start)`` for non-decreasing ``start``, scanning each character once;
    with ``after_non_space``, only a ``needle`` right after a non-space counts (a closing
    emphasis delimiter).

    A search from every opening bracket of ``[[[[...`` to the same far-away ``]`` is what
    made the link pattern quadratic; the answer stays valid until ``start`` passes it.
    """

    def __init__(self, text: str, needle: str, after_non_space: bool = False) -> None:
        self.text, self.needle, self.after_non_space, self.found = text, needle, after_non_space, -2  # -2: not yet

    def __call__(self, start: int) -> int:
        if self.found == -1 or self.found >= start:
            return self.found
        at = self.text.find(self.needle, start)
        while self.after_non_space and at >= 0 and self.text[at - 1].isspace():
            at = self.text.find(self.needle, at + 1)
        self.found = at
        return at


def _strip_links(text: str) -> str:
    r"""``[label](target)`` and ``![alt](src)`` replaced by their label, in linear time.

    The same as ``re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)``: the label runs to the
    first ']' after the '[', and the target to the first ')' after the '('.
    """
    close_bracket, close_paren = _NextMatch(text, "]"), _NextMatch(text, ")")
    parts: list[str] = []
    done = pos = 0  # text[:done] is in parts; the next '[' is searched from pos
    while (open_ := text.find("[", pos)) >= 0:
        label_end = close_bracket(open_ + 1)
        if label_end < 0:
            break  # no ']' left: no link can follow
        if not text.startswith("(", label_end + 1):
            pos = open_ + 1
            continue
        target_end = close_paren(label_end + 2)
        if target_end < 0:
            break  # no ')' left
        start = open_ - 1 if open_ > done and text[open_ - 1] == "!" else open_
        parts += (text[done:start], text[open_ + 1 : label_end])
        done = pos = target_end + 1
    parts.append(text[done:])
    return "".join(parts)


def _strip_emphasis(text: str) -> str:
    r"""``*a*``, ``**a**``, ``***a***``, ``__a__``, ``___a___`` replaced by their content, in linear time.

    The same as ``re.sub(r"(\*{1,3}|_{2,3})(\S(?:.*?\S)?)\1", r"\2", text)`` on one line:
    at each position the delimiters are tried in that pattern's order, and the content is
    the shortest of two or more characters that ends in a non-space right before the same
    delimiter, else a single character. The pattern searched to the end of the line from
    every unclosed delimiter (``__a __a __a ...`` was quadratic); here each delimiter's next
    closing position is remembered until the scan passes it.
    """
    closers = {d: _NextMatch(text, d, after_non_space=True) for d in _EMPHASIS_DELIMITERS}
    parts: list[str] = []
    done = pos = 0
    length = len(text)
    while pos < length:
        char = text[pos]
        if char not in "*_":
            pos += 1
            continue
        for delim in _EMPHASIS_DELIMITERS:
            start = pos + len(delim)
            if not text.startswith(delim, pos) or start >= length or text[start].isspace():
                continue
            end = closers[delim](start + 2)
            if end < 0 and text.startswith(delim, start + 1):
                end = start + 1  # a single character: '*a*'
            if end >= 0:
                parts += (text[done:pos], text[start:end])
                done = pos = end + len(delim)
                break
        else:
            pos += 1
    parts.append(text[done:])
    return "".join(parts)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into (front matter mapping, body); no front matter gives ``{}``.

    The YAML is read by :func:`beleg.yamlfile.load_yaml`: no alias expansion, bounded depth,
    and version-like labels kept as written (``version: 2.10`` -> ``"2.10"``).
    """
    lines = text.split("\n")
    if lines[0].rstrip() != _FRONT_MATTER_FENCE:
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in _FRONT_MATTER_END), None)
    if end is None:
        raise IngestError(
            "front matter opened with '---' on line 1 is never closed; "
            "add a '---' line after it (or remove the first line if it is a rule)"
        )
    source = "\n".join(lines[1:end])
    where = f"lines 2-{end}" if end > 1 else "line 1"
    if len(source) > MAX_FRONT_MATTER_CHARS:
        raise IngestError(
            f"front matter ({where}) is {len(source):,} characters, over the {MAX_FRONT_MATTER_CHARS:,} "
            "Beleg reads as metadata; move long content into the body"
        )
    loaded = _load_front_matter(source, where)
    body = "\n".join(lines[end + 1 :])
    if loaded is None:
        return {}, body
    if not isinstance(loaded, dict):
        raise IngestError(
            f"front matter ({where}) must be 'key: value' lines (a YAML mapping), "
            f"not a {type(loaded).__name__}"
        )
    return _normalize_mapping(loaded), body


def _load_front_matter(source: str, where: str) -> Any:
    try:
        return load_yaml(source)
    except YamlAliasError as exc:
        raise IngestError(
            f"front matter uses YAML aliases (&name/*name), which Beleg does not expand "
            f"({_line(exc, where)}); write the values out"
        ) from None
    except YamlDepthError as exc:
        raise IngestError(f"front matter nests lists/mappings deeper than {MAX_DEPTH} levels ({_line(exc, where)})") from None
    except yaml.MarkedYAMLError as exc:
        reason = exc.problem or exc.context or "syntax error"
        raise IngestError(f"front matter is not valid YAML ({_line(exc, where)}: {reason}); fix or quote the value") from None
    except yaml.YAMLError as exc:  # without a position
        reason = " ".join(str(exc).split())
        raise IngestError(f"front matter ({where}) is not valid YAML: {reason}") from None


def _line(exc: yaml.MarkedYAMLError, where: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    # +2: the mark is 0-based and counts from the line after the opening '---'.
    return f"line {mark.line + 2}" if mark is not None else where


def _normalize_mapping(mapping: dict[Any, Any]) -> dict[str, Any]:
    return {str(key).lower(): _normalize_value(value) for key, value in mapping.items()}


def _normalize_value(value: Any) -> Any:
    # Dates become strings so metadata stays JSON-serialisable and comparable across formats.
    as_date = iso_date(value)
    if as_date is not None:
        return as_date
    if isinstance(value, dict):
        return _normalize_mapping(value)
    if isinstance(value, (list, tuple, set)):
        items = [_normalize_value(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set) else items
    if isinstance(value, bytes):
        # !!binary: metadata is stored as JSON text, which cannot hold raw bytes.
        raise IngestError("front matter holds a !!binary value; metadata must be text, numbers or dates")
    return value


def find_headings(text: str) -> tuple[Heading, ...]:
    """ATX and setext headings outside fenced code blocks, with their line offsets."""
    headings: list[Heading] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    offset = 0
    prev: tuple[int, str] | None = None  # (offset, line) of a possible setext text line
    prev_blank = True
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            prev, prev_blank = None, False
            continue
        opened = _FENCE_OPEN.match(line)
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence, prev, prev_blank = opened.group(1), None, False
            continue
        atx = atx_heading(line)
        if atx is not None:
            title = _clean_title(atx[1])
            if title:
                headings.append(Heading(atx[0], title, start))
            prev, prev_blank = None, False
            continue
        setext = _SETEXT.match(line)
        if setext and prev is not None:
            # Only a single paragraph line directly under a blank line counts: that keeps
            # '---' rules under multi-line paragraphs and tables from becoming headings.
            title = _clean_title(prev[1])
            if title:
                headings.append(Heading(1 if setext.group(1)[0] == "=" else 2, title, prev[0]))
            prev, prev_blank = None, False
            continue
        blank = not line.strip()
        prev = (start, line) if prev_blank and not blank and not _NOT_SETEXT_TEXT.match(line) else None
        prev_blank = blank
    return tuple(headings)


class MarkdownReader:
    """Reads ``.md``/``.markdown`` files."""

    suffixes: tuple[str, ...] = (".md", ".markdown")
    decodes_text = True

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        """Parse front matter and headings; ``text`` is the body after the front matter."""
        require_content(data)
        decoded = decode_text(data, path, encoding)
        metadata, body = split_front_matter(decoded)
        # Blanked in place (same length, newlines kept), so offsets into the file stay exact.
        shown = blank_hidden(body)
        text = trim_blank_edges(shown)
        if not text:
            # Only front matter (a redirect stub) or only whitespace: intentionally empty, not broken.
            what = "no text after the front matter" if metadata or body != decoded else "file contains only whitespace"
            if body.strip():
                what = "all text is hidden (HTML comments or hidden elements)"
            raise NoContent(f"{what}; nothing to index")
        headings = find_headings(text)
        title = metadata.get("title")
        if title is not None and not isinstance(title, str):
            title = str(title)
        if not title:
            title = next((h.title for h in headings if h.level == 1), None)
        logger.debug("read %s: %d headings, metadata keys %s", path.name, len(headings), sorted(metadata))
        return ParsedDocument(text=text, headings=headings, metadata=metadata, title=title or None,
                              # the body is a suffix of the file; its leading lines may be blanked
                              file_position=body_position(decoded[: len(decoded) - len(body)] + shown, shown))
