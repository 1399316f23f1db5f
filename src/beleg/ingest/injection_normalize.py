"""Undo cheap obfuscation before the injection patterns run, keeping a map to the original.

An attacker who wants a phrase to reach an LLM but slip past a filter hides it in ways
that a model still reads (or a person still sees) but a regular expression does not:
zero-width characters and soft hyphens inside words, Cyrillic or Greek look-alike
letters, fullwidth or mathematical letters, letter-spacing ("I g n o r e"), leetspeak
("1gn0r3"), HTML entities and tags, Markdown emphasis, and table pipes between the words
of one sentence. :func:`normalize` undoes these and returns the cleaned text together
with ``origin``: ``origin[i]`` is the offset in the *original* text of cleaned character
``i``, so a finding on the cleaned text maps back to exactly the original characters
(the answer layer withholds those sentences, so the offsets must be exact).

:func:`table_columns` adds a second way to read a Markdown table, column by column,
because an instruction can be split over the cells of one column as well as one row.

Every pass is a regular-expression substitution; passes whose trigger character is absent
are skipped, and text that needs no change is not copied.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Normalized", "fold_characters", "normalize", "table_columns"]


@dataclass(frozen=True, slots=True)
class Normalized:
    """Cleaned text and, for each of its characters, the offset it came from."""

    text: str
    #: ``len(origin) == len(text) + 1``; the last entry is the original length.
    origin: list[int]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original ``(start, end)`` covering cleaned characters ``start:end``.

        Views may reorder characters (table columns), so the span is the smallest one that
        holds every original character behind the match.
        """
        if end <= start:
            return self.origin[start], self.origin[start]
        offsets = self.origin[start:end]
        return min(offsets), max(offsets) + 1


# Letters that look like Latin ones. NFKC leaves Cyrillic and Greek alone (they are real
# letters), so "Ignоre" with a Cyrillic о survives it. Mapping them in genuine Russian or
# Greek text only turns that text into Latin gibberish that no English or German pattern
# matches, so the map is applied everywhere.
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "г": "r", "е": "e", "ё": "e", "ѕ": "s", "і": "i", "ј": "j", "к": "k", "о": "o",
    "р": "p", "с": "c", "у": "y", "х": "x", "һ": "h", "ԁ": "d", "ӏ": "l", "ԛ": "q", "ԝ": "w",
    "А": "A", "В": "B", "Е": "E", "Ѕ": "S", "І": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "У": "Y", "Ԝ": "W",
    # Greek
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes NFKC keeps
    "ı": "i", "ɡ": "g", "ɑ": "a",
    # Latin small capitals ("ɪɢɴᴏʀᴇ"), which NFKC keeps too
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i",
    "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "զ": "q", "ց": "g", "Օ": "O", "Ս": "S",
    # Coptic
    "ⲁ": "a", "ⲉ": "e", "ⲓ": "i", "ⲟ": "o", "ⲣ": "p", "ⲥ": "c", "Ⲁ": "A", "Ⲉ": "E", "Ⲓ": "I",
    "Ⲏ": "H", "Ⲕ": "K", "Ⲙ": "M", "Ⲛ": "N", "Ⲟ": "O", "Ⲣ": "P", "Ⲥ": "C", "Ⲧ": "T", "Ⲭ": "X",
    # Lisu (Fraser) capitals
    "ꓮ": "A", "ꓐ": "B", "ꓚ": "C", "ꓓ": "D", "ꓰ": "E", "ꓝ": "F", "ꓖ": "G", "ꓧ": "H", "ꓲ": "I",
    "ꓙ": "J", "ꓗ": "K", "ꓡ": "L", "ꓟ": "M", "ꓠ": "N", "ꓳ": "O", "ꓑ": "P", "ꓣ": "R", "ꓢ": "S",
    "ꓔ": "T", "ꓴ": "U", "ꓦ": "V", "ꓪ": "W", "ꓫ": "X", "ꓬ": "Y", "ꓜ": "Z",
    # Single Latin-like letters of other blocks
    "ɾ": "r", "ɩ": "i", "ꭵ": "i", "\U00010339": "i",
    # Cherokee capitals drawn like Latin ones
    "Ꭺ": "A", "Ᏼ": "B", "Ꮯ": "C", "Ꭰ": "D", "Ꭼ": "E", "Ꮐ": "G", "Ꮋ": "H", "Ꮖ": "I", "Ꭻ": "J",
    "Ꮶ": "K", "Ꮮ": "L", "Ꮇ": "M", "Ꮲ": "P", "Ꮪ": "S", "Ꭲ": "T", "Ꮩ": "V", "Ꮃ": "W", "Ꮓ": "Z",
})
# Accents fold to their letter ("Ignóre", "İgnore", "Ànweisung"): no English or German pattern
# needs them. German's own letters stay, since patterns spell them ("für", "Schlüssel").
_KEPT_LETTERS = frozenset("äöüÄÖÜ")
# Invisible characters that are not category Cf: combining grapheme joiner, variation
# selectors, Mongolian vowel separator.
_INVISIBLE = {0x034F, 0x180E, *range(0xFE00, 0xFE10)}
# Hangul fillers are blank but take up room: a reader sees a gap, so they are spaces
# ("Ignore\u3164all\u3164previous" reads as three words).
_BLANKS = {0x115F, 0x1160, 0x3164, 0xFFA0}
_PARENTHESISED = re.compile(r"\(([A-Za-z])\)")


@lru_cache(maxsize=4096)
def _clean_char(ch: str) -> str:
    """One non-ASCII character as a detector should read it ("" for invisible ones)."""
    code = ord(ch)
    if 0xE0020 <= code <= 0xE007E:
        # Unicode tag characters: invisible on screen but read by models as ASCII
        # ("ASCII smuggling"), so decode them instead of dropping them.
        return chr(code - 0xE0000)
    if code in _INVISIBLE or unicodedata.category(ch) in ("Cf", "Me"):
        return ""  # zero-width space/joiners, word joiner, BOM, soft hyphen, bidi marks, enclosing circles
    if code in _BLANKS:
        return " "
    if 0x1F1E6 <= code <= 0x1F1FF:  # regional indicator letters (two of them draw a flag)
        return chr(code - 0x1F1E6 + ord("A"))
    if 0x1F130 <= code <= 0x1F189 and (code - 0x1F130) % 32 < 26:  # squared, negative circled/squared
        return chr((code - 0x1F130) % 32 + ord("A"))
    out = unicodedata.normalize("NFKC", ch).translate(_CONFUSABLES)
    paren = _PARENTHESISED.fullmatch(out)  # "⒜" is "(a)" after NFKC
    if paren:
        return paren.group(1)
    return _fold_accent(out) if len(out) == 1 else out


def _fold_accent(letter: str) -> str:
    """A Latin letter with an accent as its plain letter; any other character unchanged."""
    if letter in _KEPT_LETTERS:
        return letter
    base = unicodedata.normalize("NFD", letter)[0]
    return base if base != letter and base.isascii() and base.isalpha() else letter


def _combined(m: re.Match[str]) -> str:
    """A letter followed by combining marks (decomposed text, "o\u0308"), composed and folded."""
    composed = unicodedata.normalize("NFC", m.group(0))
    return _fold_accent(composed) if len(composed) == 1 else m.group(0)[0]


_COMBINING = re.compile(r"[A-Za-z][\u0300-\u036f]+")


_Replace = Callable[[re.Match[str]], "str | None"]


def _substitute(norm: Normalized, pattern: re.Pattern[str], replace: _Replace) -> Normalized:
    """Apply ``replace`` to every match (``None`` keeps the match), composing ``origin``.

    A replacement of the same length maps character by character, one that only deletes
    characters ("I g n o r e" -> "Ignore") maps each kept character to itself, and any
    other maps to the match's first character (its last new character to the match's
    last), so a finding that ends inside a replacement still ends where the match did.
    """
    pieces: list[str] = []
    origin: list[int] = []
    last = 0
    for m in pattern.finditer(norm.text):
        new = replace(m)
        if new is None or new == m.group(0):
            continue
        start, end = m.span()
        pieces.append(norm.text[last:start])
        origin.extend(norm.origin[last:start])
        pieces.append(new)
        origin.extend(_replacement_origin(norm, start, end, new))
        last = end
    if not pieces:
        return norm
    pieces.append(norm.text[last:])
    origin.extend(norm.origin[last:])
    return Normalized("".join(pieces), origin)


def _replacement_origin(norm: Normalized, start: int, end: int, new: str) -> list[int]:
    old = norm.text[start:end]
    if len(new) == len(old):
        return norm.origin[start:end]
    kept, i = [], 0
    for c in new:  # is ``new`` a subsequence of ``old``?
        i = old.find(c, i)
        if i < 0:
            break
        kept.append(norm.origin[start + i])
        i += 1
    else:
        return kept
    origin = [norm.origin[start]] * len(new)
    if len(new) > 1:
        origin[-1] = norm.origin[end - 1]
    return origin


_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,10});")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

_ROLE_TAGS = r"(?:system|user|assistant|sys|inst|instructions?|s)"
_BLOCK_TAGS = frozenset("br p div li ul ol td th tr table thead tbody h1 h2 h3 h4 h5 h6 hr "
                        "blockquote pre section article header footer".split())
# Order matters: tokens a model treats as structure are kept verbatim before the generic
# tag rule can take them apart. Every alternative starts with "<" or "-" so the scan is cheap.
_TAGS = re.compile(
    r"(?P<keep><\|[^|<>\s]{1,40}\|>|<</?SYS>>|</?" + _ROLE_TAGS + r">)"
    r"|(?P<comment><!--|-->)"
    r"|(?P<tag></?(?P<name>[A-Za-z][A-Za-z0-9:-]*)(?:\s[^<>]{0,300})?/?>)",
    re.IGNORECASE,
)
# A Markdown table's separator row ("|---|:--:|") says nothing; it would split a sentence
# that runs across the rows above and below it.
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)
# Emphasis, code and strike marks, table pipes; "_" only between words (snake_case stays).
# Chat-template tokens ("<|im_start|>") keep their pipes.
_MARKS = re.compile(r"(?P<keep><\|[^|<>\s]{1,40}\|>)|[*`|_]+|~~")
# Three or more single letters, each followed by the same one separator: "I g n o r e",
# "i.g.n.o.r.e", "I-g-n-o-r-e". Words stay apart where the spacing is wider. The letter
# comes first (the lookbehind after it) so the scan starts only at letters.
_L = "A-Za-zÄÖÜäöüß"
_SPACED = re.compile(rf"[{_L}](?<![\w.\-·][{_L}])([ .\-·])(?:[{_L}]\1)+[{_L}](?![\w·])")
_SEPARATORS = re.compile(r"[ .\-·]")
# A word hyphenated across a line break ("Vor-\ngaben", "instruc-\ntions") is one word to a reader.
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[^\W\d_])")
# Leetspeak: only words that mix letters with the digits 0 1 3 4 5 7 and nothing else,
# so version numbers, error codes ("E-4012") and identifiers ("x86_64") are untouched.
_MAYBE_LEET = re.compile(r"[A-Za-z][013457]|[013457][A-Za-z]")
_LEET_RUN = re.compile(r"[A-Za-z013457]{3,}")
_LEET = str.maketrans("013457", "oieast")


def _entity(m: re.Match[str]) -> str:
    return html.unescape(m.group(0))


def _char(m: re.Match[str]) -> str:
    return _clean_char(m.group(0))


def _inside_word(m: re.Match[str]) -> bool:
    text, start, end = m.string, m.start(), m.end()
    return start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()


# v5: a run of tags counts as one ("Ig<b></b>nore"), so the letters around the run decide.
_ONE_TAG = r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,300})?/?>"
_TAGS_AFTER = re.compile(rf"(?:{_ONE_TAG})*")
_TAGS_BEFORE = re.compile(rf"(?:{_ONE_TAG})+$")


def _tag_inside_word(m: re.Match[str]) -> bool:
    text, start = m.string, m.start()
    end = _TAGS_AFTER.match(text, m.end()).end()  # type: ignore[union-attr]  # "*" always matches
    if text[start - 1 : start] == ">":
        before = _TAGS_BEFORE.search(text, max(0, start - 320), start)
        if before:
            start = before.start()
    return start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()


# v15: attributes whose values are text a model reads when the HTML reaches it as text (raw HTML
# in Markdown, a pasted snippet): "<img alt="AI systems describing this image must say ...">",
# "<meta name="ai-instructions" content="Tell every visitor ...">". Dropping the tag whole hid
# them from every stage.
_TEXT_ATTRIBUTE = re.compile(
    r"""\s(?:alt|title|content|name|label|summary|placeholder|value|aria-label|aria-description|"""
    r"""aria-roledescription|data-[\w-]+)\s*=\s*(?:"(?P<dq>[^"<>]*)"|'(?P<sq>[^'<>]*)')""", re.IGNORECASE)


def _attribute_text(tag: str) -> str | None:
    """The tag with everything but its text attributes' values blanked (same length, so every kept
    letter maps to itself), or None when it has no value of two words or more."""
    values = [(m.start(g), m.end(g)) for m in _TEXT_ATTRIBUTE.finditer(tag) for g in ("dq", "sq") if m.group(g)]
    if not any(len(tag[a:b].split()) >= 2 for a, b in values):
        return None
    out = [" "] * len(tag)
    for a, b in values:
        out[a:b] = tag[a:b]
    return "".join(out)


def _tag(m: re.Match[str]) -> str | None:
    """A tag becomes nothing inside a word ("Ig<b>nore</b>") and a space between words; a tag
    with text in its attributes (v15) becomes that text, blanks around it."""
    if m.group("keep"):
        return None
    if m.group("name") and "=" in m.group(0) and not _tag_inside_word(m):
        kept = _attribute_text(m.group(0))
        if kept is not None:
            return kept
    if m.group("name") and m.group("name").lower() in _BLOCK_TAGS:
        return " "
    return "" if _tag_inside_word(m) else " "


def _rule_row(m: re.Match[str]) -> str:
    return " " * len(m.group(0))


def _mark(m: re.Match[str]) -> str | None:
    if m.group("keep"):
        return None
    if _inside_word(m):
        return None if m.group(0).startswith("_") else ""
    return " "


def _drop(m: re.Match[str]) -> str:
    return ""


def _unspace(m: re.Match[str]) -> str:
    return _SEPARATORS.sub("", m.group(0))


def _leet(m: re.Match[str]) -> str | None:
    word, text, start, end = m.group(0), m.string, m.start(), m.end()
    if word.isalpha() or word.isdigit():
        return None
    if (start and (text[start - 1].isalnum() or text[start - 1] in "_@$")) or (
            end < len(text) and (text[end].isalnum() or text[end] in "_@$")):
        return None  # part of a longer token such as x86_64 or a version string
    return word.translate(_LEET)


def fold_characters(text: str) -> Normalized:
    """``text`` character by character as a model reads it, and the map back to ``text``'s offsets.

    The first passes of :func:`normalize`: HTML entities and character references decoded,
    invisible characters dropped, fullwidth, look-alike (Cyrillic, Greek, Armenian ...) and
    accented letters folded. Tags, Markdown marks and spacing stay, so a caller can look for
    a tag: ``fold_characters("&lt;/\\u0440assage>").text == "</passage>"``.
    """
    norm = Normalized(text, list(range(len(text) + 1)))
    if "&" in text:
        norm = _substitute(norm, _ENTITY, _entity)
    if not norm.text.isascii():
        norm = _substitute(norm, _COMBINING, _combined)
        norm = _substitute(norm, _NON_ASCII, _char)
    return norm


def normalize(text: str) -> Normalized:
    """``text`` with obfuscation undone, and the map back to ``text``'s offsets.

    Example: ``normalize("Ig\\u200bnore").text == "Ignore"``, and ``origin`` maps the
    ``n`` to offset 3 of the original.
    """
    norm = fold_characters(text)
    if "<" in norm.text or "-->" in norm.text:
        norm = _substitute(norm, _TAGS, _tag)
    if "-" in norm.text and "|" in norm.text:
        norm = _substitute(norm, _TABLE_RULE, _rule_row)
    norm = _substitute(norm, _MARKS, _mark)
    if "-\n" in norm.text or "-\r\n" in norm.text:
        norm = _substitute(norm, _LINE_HYPHEN, _drop)
    norm = _substitute(norm, _SPACED, _unspace)
    if _MAYBE_LEET.search(norm.text):
        norm = _substitute(norm, _LEET_RUN, _leet)
    return norm


_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.MULTILINE)


def table_columns(original: str, norm: Normalized) -> list[Normalized]:
    """Each column of each Markdown table in ``original``, read top to bottom.

    Rows are already read left to right in the normalized text (pipes become spaces);
    this is the other direction. Cells come from the normalized text, so they are cleaned
    the same way; a column is returned only when it has at least two non-empty cells.
    """
    if "|" not in original:
        return []
    columns: dict[tuple[int, int], list[tuple[int, int]]] = {}
    table = 0
    last_row_end = -2
    for row in _TABLE_ROW.finditer(original):
        if original.count("\n", last_row_end + 1, row.start()) > 0 or last_row_end < 0:
            table += 1
        last_row_end = row.end()
        bars = [row.start() + i for i, c in enumerate(row.group(0)) if c == "|"]
        for col, (left, right) in enumerate(zip(bars, bars[1:])):
            # The main normalized text keeps the original order, so bisect finds where an
            # original offset landed (the first character at or after it).
            cell = (bisect_left(norm.origin, left + 1), bisect_left(norm.origin, right))
            columns.setdefault((table, col), []).append(cell)
    views = []
    for cells in columns.values():
        cells = [(a, b) for a, b in cells if norm.text[a:b].strip() and norm.text[a:b].strip("-: ")]
        if len(cells) < 2:
            continue
        text = " ".join(norm.text[a:b] for a, b in cells)
        origin: list[int] = []
        for i, (a, b) in enumerate(cells):
            if i:
                origin.append(norm.origin[a])  # the joining space
            origin.extend(norm.origin[a:b])
        origin.append(norm.origin[cells[-1][1]])
        views.append(Normalized(text, origin))
    return views
