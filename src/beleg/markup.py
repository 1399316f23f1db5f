"""Plain text for people: Markdown, Hugo/Jinja shortcodes and HTML removed from a quote.

Answers, citations and search snippets all show text through it, so it sits outside
``beleg.answer``: printing search hits then imports no answering code.

Quotes stay exact spans of the document (``document.text[start:end] == quote``, which is
what verification checks); what a person reads is :func:`plain` of the quote. It keeps the
words and drops the markup around them:

* links ``[text](url)`` (also ``[text]({{% relref "x" %}})``) and images become their text;
  footnote references (``[^1]``) go;
* emphasis (``**b**``, ``*i*``, ``__b__``, ``_i_``, ``~~s~~``), heading marks, block-quote
  marks and setext underlines go;
* shortcodes ``{{% … %}}``, ``{{< … >}}`` and ``{% … %}`` go; the text between a paired
  opening and closing tag (``{{% notice %}}text{{% /notice %}}``) stays;
* HTML tags go (``<br>`` becomes a line break), entities are decoded (``&amp;`` -> ``&``);
* inline code stays as ```code```; fenced code keeps its lines without the fences; markup
  inside code is left alone;
* table rows under a header become ``Header: value; Header: value`` (:func:`table_row`);
* MkDocs admonitions (``!!! warning "Achtung"``, ``??? note``) and content tabs
  (``=== "docker compose"``) become their title, their bodies lose the four spaces of
  indentation that put them under the opener (:func:`unwrap_blocks`); Docusaurus and
  VitePress containers (``:::tip Title`` … ``:::``) become their title, GitHub alerts
  (``> [!NOTE]``) and docsify's ``?>``/``!>`` markers go.
"""

from __future__ import annotations

import html
import re

__all__ = ["plain", "table_cells", "table_row", "unwrap_blocks"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# Placeholders for protected code: private-use characters never occur in documents we quote.
_HOLE = "\ue000{}\ue001"
_HOLE_RE = re.compile("\ue000(\\d+)\ue001")

_SHORTCODE = re.compile(r"\{\{[%<].*?[%>]\}\}|\{%.*?%\}", re.DOTALL)
# The link target may hold a shortcode with spaces and quotes: ({{% relref "a b.md" %}}).
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\((?:\{\{.*?\}\}|[^()\n]|\([^()\n]*\))*\)")
# "[text][ref]", but not two citation labels side by side ("[S1][S2]").
_REF_LINK = re.compile(r"!?\[(?!S\d+\])([^\[\]]+)\]\[(?!S\d+\])[^\]]*\]")
# A footnote reference ("mailcow[^1]: dockerized") and a footnote's own label ("[^1]: text").
# A footnote label is short; unbounded, "[^" * n was scanned to the end from every "[^" (quadratic).
_FOOTNOTE = re.compile(r"^[ \t]*\[\^[^\]\s]{1,100}\]:[ \t]*|\[\^[^\]\s]{1,100}\]", re.MULTILINE)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_BREAK_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.DOTALL)
_EMPHASIS = (
    re.compile(r"(\*\*\*|\*\*|\*)(?=\S)(.+?)(?<=\S)\1"),
    re.compile(r"(?<![\w\\])(___|__|_)(?=\S)(.+?)(?<=\S)\1(?!\w)"),
    re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"),
)
_HEADING_MARK = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_SETEXT_LINE = re.compile(r"^[ \t]{0,3}(?:=+|-{3,})[ \t]*$", re.MULTILINE)
_QUOTE_MARK = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_TABLE_LINE = re.compile(r"^[ \t]*\|.*$")
# An admonition ("!!! tip", "??? note "Title"", "???+ warning") or a content tab (=== "Tab"),
# Python-Markdown and MkDocs Material syntax; the title is group 1 or 2. A tab has a title
# always: a bare "===" is a setext heading's underline.
_BLOCK_OPENER = re.compile(r'^(?:(?:!!!|\?\?\?\+?)[ \t]*[\w-]+(?:[ \t]+[\w-]+)*(?:[ \t]+"([^"\n]*)")?'
                           r'|===\+?[ \t]+"([^"\n]*)")[ \t]*$')
# Docusaurus/VitePress containers: ":::tip Title" opens (the title is group 1), ":::" closes.
_CONTAINER = re.compile(r"^[ \t]*:{3,}[ \t]*(?:[\w-]+(?:\{[^}\n]*\})?)?(?:[ \t]+(.*?))?[ \t]*$", re.MULTILINE)
# A GitHub alert's marker line ("> [!NOTE]", after the quote mark is gone) and docsify's
# "?> tip" / "!> warning" at the start of a line.
_ALERT = re.compile(r"^[ \t]*\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*$\n?|^[ \t]*[?!]>[ \t]?",
                    re.MULTILINE | re.IGNORECASE)
_TABLE_SEPARATOR = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?$")


def plain(text: str) -> str:
    """``text`` without markup, for display; words and code are kept (see module docstring)."""
    code: list[str] = []

    def hold(value: str) -> str:
        code.append(value)
        return _HOLE.format(len(code) - 1)

    out = unwrap_blocks(text)
    out = _FENCE.sub(lambda m: hold(m.group(2).rstrip("\n")) + "\n", out)
    out = _INLINE_CODE.sub(lambda m: hold(f"`{m.group(2).strip()}`"), out)
    out = _ESCAPE.sub(lambda m: hold(m.group(1)), out)  # "\*" is a literal star, not emphasis
    out = _SHORTCODE.sub("", out)
    out = _FOOTNOTE.sub("", out)
    out = _LINK.sub(r"\1", out)
    out = _REF_LINK.sub(r"\1", out)
    out = _AUTOLINK.sub(r"\1", out)
    out = _BREAK_TAG.sub("\n", out)
    out = _TAG.sub("", out)
    out = _ALERT.sub("", out)  # docsify's "?>" first: the quote mark would take its ">"
    out = _QUOTE_MARK.sub("", out)
    out = _ALERT.sub("", out)  # a GitHub alert's "[!NOTE]", now that its "> " is gone
    out = _CONTAINER.sub(lambda m: m.group(1) or "", out)
    out = _HEADING_MARK.sub(r"\1", out)
    out = _SETEXT_LINE.sub("", out)
    for pattern in _EMPHASIS:
        out = pattern.sub(lambda m: m.group(m.lastindex or 1), out)
    out = _tables(out)
    out = _tidy(html.unescape(out))
    return _HOLE_RE.sub(lambda m: code[int(m.group(1))], out)


def without_footnote_marks(text: str) -> str:
    """``text`` without footnote references and definition labels ("mailcow[^1]:", "[^note]: ..."):
    their labels are no numbers a reader sees as values ("[^1]" is no version 1)."""
    return _FOOTNOTE.sub("", text)


def unwrap_blocks(text: str) -> str:
    """Admonition and content-tab openers replaced by their title (or nothing), and their
    bodies dedented by the four columns that put them under the opener. The body of
    ``!!! example`` is prose indented four spaces: read as it stands, it would be an indented
    code block, and a check looking for code would find some."""
    if "!!!" not in text and "???" not in text and "===" not in text:
        return text
    out: list[str] = []
    bodies: list[int] = []  # the indentation of each open block's body, innermost last
    for line in text.split("\n"):
        lead = len(line) - len(line.lstrip(" \t"))
        width = len(line[:lead].expandtabs(4))
        if line.strip():
            while bodies and width < bodies[-1]:
                bodies.pop()
        cut = bodies[-1] if bodies and line.strip() else 0
        rest = " " * (width - cut) + line[lead:] if cut else line
        opener = _BLOCK_OPENER.match(rest.strip())
        if opener:
            out.append(" " * (width - cut) + (opener.group(1) or opener.group(2) or ""))
            bodies.append(width + 4)
            continue
        out.append(rest)
    return "\n".join(out)


def table_cells(row: str) -> list[str]:
    """The cells of one Markdown table row, stripped (``| a | b |`` -> ``["a", "b"]``)."""
    body = row.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def table_row(header: str | None, row: str) -> str:
    """One data row as ``Header: value; Header: value`` (empty cells left out); without a
    header, or when the counts differ, the values joined by ``; ``."""
    values = table_cells(row)
    names = table_cells(header) if header is not None else []
    if len(names) == len(values):
        parts = [f"{n}: {v}" if n else v for n, v in zip(names, values) if v]
    else:
        parts = [v for v in values if v]
    return "; ".join(parts)


def _tables(text: str) -> str:
    """Rewrite runs of table lines: a header (a row followed by a separator row) names the
    cells of the rows under it; a row without a header becomes its values."""
    lines = text.split("\n")
    out: list[str] = []
    header: str | None = None
    for i, line in enumerate(lines):
        if not _TABLE_LINE.match(line):
            header = None
            out.append(line)
            continue
        if _TABLE_SEPARATOR.match(line):
            continue
        if i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1]):
            header = line  # a header row is shown through the rows it names
            if i + 2 < len(lines) and _TABLE_LINE.match(lines[i + 2]):
                continue
            out.append("; ".join(c for c in table_cells(line) if c))
            continue
        out.append(table_row(header, line))
    return "\n".join(out)


def _tidy(text: str) -> str:
    """Collapse the spaces and blank lines removed markup leaves behind."""
    lines = [re.sub(r"(?<=\S)[ \t]{2,}", " ", line).rstrip() for line in text.split("\n")]
    out = "\n".join(lines)
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out.strip()
