"""Would a browser show this element? Shared by the HTML reader and HTML inside Markdown.

Only what the document itself says is judged: the ``hidden`` and ``aria-hidden``
attributes, the inline ``style`` and the page's own ``<style>`` elements. Text is left
out when its element is ``display: none``, ``visibility: hidden``/``collapse``,
``opacity: 0``, ``content-visibility: hidden`` or has a font size of zero, and the
elements the browser's own style sheet hides (``<datalist>``, ``<noembed>``,
``<noframes>``, ``<title>``, ``<rp>`` and a ``<dialog>`` that is not ``open``).

CSS comments are whitespace to a browser (``display:/**/none`` hides), so they are
removed before any value is read, and CSS escapes (``n\\6f ne``) are resolved, as are
``<!--``/``-->`` around a style sheet. Style sheets are read with *simple* selectors only:
a tag, ``.class``, ``#id``, ``*`` and compounds of them (``span.sr``), in comma lists.
Selectors with combinators, attributes or pseudo-classes (``div > .x``, ``[data-x]``,
``:not()``) are ignored: matching them needs a selector engine, and ignoring a rule can
only keep text, never invent it. The cascade is followed as far as these selectors
need: ``!important`` first, then the inline style, then specificity, then source order,
so ``.sr{display:none}`` is undone by ``style="display:inline"`` as in a browser.

Not judged (the text stays): external style sheets, rules inside ``@media`` queries other
than ``all``/``screen``, text coloured like its background, text positioned off-screen or
clipped away, and zero-sized boxes with ``overflow: hidden``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from beleg.errors import IngestError

# An unclosed comment runs to the end of the style sheet, as in CSS.
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
# '<!--' and '-->' are ignored by CSS: the legacy way to hide a style sheet from old browsers.
_CDO_CDC = re.compile(r"<!--|-->")
# A CSS escape: '\\' and 1-6 hex digits (with one optional whitespace after), or '\\' and any
# other character but a newline. 'displ\\61y:n\\6f ne' is 'display:none' to a browser.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|([^\n\r\f0-9a-fA-F]))")
_IMPORTANT = re.compile(r"!\s*important\s*$")
# Compound selectors without combinators: an optional tag (or '*') and .class/#id parts.
_SIMPLE_SELECTOR = re.compile(r"^(?:([a-z][a-z0-9-]*)|\*)?((?:[.#][\w-]+)*)$", re.IGNORECASE)
_SELECTOR_PART = re.compile(r"([.#])([\w-]+)")
_BLOCK_EDGE = re.compile(r"[{}]")
# A length of zero in any unit: 0, 0.0, .0, 0px, 0em, 0%.
_ZERO_LENGTH = re.compile(r"^[+-]?(?:0+(?:\.0*)?|\.0+)(?:[a-z]+|%)?$")
_NUMBER = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(%?)$")
# Font sizes relative to the parent's (em, %, ...) stay zero under a zero-sized parent.
_RELATIVE_FONT_SIZE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:em|ex|ch|cap|ic|lh|%)$")
_INHERITING = {"inherit", "unset", "smaller", "larger"}
#: Properties whose declarations are kept; rules with none of them are dropped on reading.
_JUDGED = frozenset({"display", "visibility", "opacity", "content-visibility", "font-size", "font"})
# @media queries a screen always matches; conditional ones (print, widths) are not applied.
_SCREEN_MEDIA = {"", "all", "screen", "only screen", "only all"}

# Elements the HTML standard's UA style sheet gives 'display: none' (in the body); a
# <dialog> is hidden until it is 'open'.
_UA_HIDDEN = frozenset({"datalist", "noembed", "noframes", "title", "rp"})

Declarations = tuple[tuple[str, str, bool], ...]  # (property, value, important)

#: Element x rule checks one page may cost. Each element only checks the rules indexed
#: under its tag, ids and classes, and rules with the same selector are merged, so real
#: pages stay far below this; a page of thousands of compound rules sharing one class
#: applied to thousands of elements does not, and is refused rather than read for minutes.
MAX_RULE_CHECKS = 5_000_000


def strip_css_comments(css: str) -> str:
    return _CSS_COMMENT.sub(" ", css)


def parse_declarations(style: str) -> Declarations:
    """The judged ``property: value`` pairs of a declaration block, values lower-cased."""
    out: list[tuple[str, str, bool]] = []
    for declaration in strip_css_comments(style).split(";"):
        prop, colon, value = declaration.partition(":")
        if "\\" in declaration:  # decoded after splitting: "\\3b " (a ";") splits nothing
            prop, value = _CSS_ESCAPE.sub(_unescape, prop), _CSS_ESCAPE.sub(_unescape, value)
        prop = prop.strip().lower()
        if not colon or prop not in _JUDGED:
            continue
        value = " ".join(value.split()).lower()
        important = bool(_IMPORTANT.search(value))
        out.append((prop, _IMPORTANT.sub("", value).strip(), important))
    return tuple(out)


def _unescape(match: re.Match[str]) -> str:
    if match.group(2) is not None:
        return match.group(2)
    code = int(match.group(1), 16)
    # As CSS Syntax says: zero, surrogates and values past Unicode become U+FFFD.
    return "\ufffd" if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)


@dataclass(slots=True)
class _Rule:
    tag: str | None
    classes: frozenset[str]
    ids: frozenset[str]
    specificity: tuple[int, int, int]
    # Per property, the winning declaration among all rules with this exact selector:
    # (important, source order, value). Same selector means same specificity, so only
    # !important and then source order decide between them, as in the cascade.
    declarations: dict[str, tuple[bool, int, str]]


class StyleSheet:
    """The simple-selector rules of a page's ``<style>`` elements, indexed for lookup."""

    def __init__(self, sources: Iterable[str] = ()) -> None:
        self._by_key: dict[str, list[_Rule]] = {}
        self._by_selector: dict[tuple[str | None, frozenset[str], frozenset[str]], _Rule] = {}
        self._count = 0
        self._checks = 0
        for source in sources:
            self._parse(strip_css_comments(_CDO_CDC.sub(" ", source)))

    def __bool__(self) -> bool:
        return self._count > 0

    def _parse(self, css: str) -> None:
        applies: list[bool] = []  # one entry per open at-rule block: are its rules in force?
        pos = 0
        for edge in _BLOCK_EDGE.finditer(css):
            if edge.start() < pos:
                continue  # inside a declaration block already consumed
            # Statements such as '@import url(x);' end at ';' before the next prelude.
            prelude = css[pos : edge.start()].rsplit(";", 1)[-1].strip()
            pos = edge.end()
            if edge.group() == "}":
                if applies:
                    applies.pop()
                continue
            if prelude.startswith("@"):
                applies.append(_at_rule_applies(prelude))
                continue
            close = css.find("}", pos)
            close = len(css) if close < 0 else close
            if all(applies):
                self._add(prelude, parse_declarations(css[pos:close]))
            pos = close + 1

    def _add(self, prelude: str, declarations: Declarations) -> None:
        if not declarations:
            return
        for selector in prelude.split(","):
            if "\\" in selector:
                # '.\68' is '.h' to a browser. An escaped '.' or '#' is read as a new part
                # ('.a\.b' as '.a.b', not one class 'a.b'): a rare class name, left as a limit.
                selector = _CSS_ESCAPE.sub(_unescape, selector)
            match = _SIMPLE_SELECTOR.match(selector.strip())
            if match is None or not selector.strip():
                continue  # a complex selector: not judged (see the module docstring)
            tag = match.group(1).lower() if match.group(1) else None
            parts = _SELECTOR_PART.findall(match.group(2))
            classes = frozenset(name for kind, name in parts if kind == ".")
            ids = frozenset(name for kind, name in parts if kind == "#")
            order = self._count
            self._count += 1
            # Rules with one selector are merged: 'span{opacity:1}' a thousand times is one
            # rule, so repeating a rule cannot multiply the work per element.
            rule = self._by_selector.get((tag, classes, ids))
            if rule is None:
                rule = _Rule(tag, classes, ids, (len(ids), len(classes), int(tag is not None)), {})
                self._by_selector[(tag, classes, ids)] = rule
                # Indexed under one part the element must have, so an element only checks
                # rules that could match it.
                key = f"#{min(ids)}" if ids else f".{min(classes)}" if classes else tag or "*"
                self._by_key.setdefault(key, []).append(rule)
            for prop, value, important in declarations:
                held = rule.declarations.get(prop)
                if held is None or (important, order) >= held[:2]:
                    rule.declarations[prop] = (important, order, value)

    def matching(self, tag: str, classes: frozenset[str], element_id: str) -> list[_Rule]:
        keys = [tag, "*", *(f".{c}" for c in classes)]
        if element_id:
            keys.append(f"#{element_id}")
        candidates = [rule for key in keys for rule in self._by_key.get(key, ())]
        self._checks += len(candidates)
        if self._checks > MAX_RULE_CHECKS:
            # Failing closed: without the style sheet we cannot tell which text is hidden.
            raise IngestError(
                f"the page's <style> rules are too costly to apply (over {MAX_RULE_CHECKS:,} "
                "element x rule checks); hidden text could not be determined"
            )
        return [
            rule
            for rule in candidates
            if (rule.tag is None or rule.tag == tag) and rule.classes <= classes
            and all(i == element_id for i in rule.ids)
        ]


def media_applies(media: str | None) -> bool:
    """Does a ``<style media=...>`` apply on a screen? Only ``all`` and ``screen`` are taken."""
    return " ".join((media or "all").lower().split()) in _SCREEN_MEDIA


def _at_rule_applies(prelude: str) -> bool:
    name, _, condition = prelude[1:].partition(" ")
    name = name.lower()
    if name == "media":
        return " ".join(condition.lower().split()) in _SCREEN_MEDIA
    return name in ("layer", "supports", "scope", "container")


def computed_style(tag: str, get: Callable[[str], str | None], sheet: StyleSheet) -> dict[str, str]:
    """The judged properties of one element after the cascade (not inheritance)."""
    best: dict[str, tuple[tuple[bool, bool, tuple[int, int, int], int], str]] = {}

    def offer(declarations: Declarations, inline: bool, specificity: tuple[int, int, int], order: int) -> None:
        for prop, value, important in declarations:
            key = (important, inline, specificity, order)
            if prop not in best or key >= best[prop][0]:
                best[prop] = (key, value)

    if sheet:
        classes = frozenset((get("class") or "").split())
        for rule in sheet.matching(tag.lower(), classes, (get("id") or "").strip()):
            for prop, (important, order, value) in rule.declarations.items():
                offer(((prop, value, important),), False, rule.specificity, order)
    offer(parse_declarations(get("style") or ""), True, (0, 0, 0), 0)
    return {prop: value for prop, (_, value) in best.items()}


def hides_subtree(get: Callable[[str], str | None], style: dict[str, str], tag: str = "") -> bool:
    """Is the element, with everything inside it, invisible?"""
    tag = tag.lower()
    # The browser's own style sheet hides these ('display: none'); a page can show them again
    # only with its own CSS, which is rare enough that hiding them errs on the safe side.
    if tag in _UA_HIDDEN or (tag == "dialog" and get("open") is None):
        return True
    hidden = get("hidden")
    # hidden="until-found" content is revealed by find-in-page (collapsed sections): keep it.
    if hidden is not None and hidden.strip().lower() != "until-found":
        return True
    if (get("aria-hidden") or "").strip().lower() == "true":
        return True
    if style.get("display") == "none" or style.get("visibility") in ("hidden", "collapse"):
        return True
    if style.get("content-visibility") == "hidden":
        return True
    opacity = _NUMBER.match(style.get("opacity", ""))
    return opacity is not None and float(opacity.group(1)) <= 0  # negative values clamp to 0


def zero_font(style: dict[str, str], parent_zero: bool) -> bool:
    """Is the element's font size zero? A zero size is inherited unless reset to an absolute one
    (the inline-block whitespace trick sets 0 on a parent and ``16px`` on its children)."""
    size = style.get("font-size")
    if size is None and "font" in style:
        # The shorthand always sets the size: the token before an optional '/line-height'
        # ('font: 0/0 a'), else it names a system font or 'inherit'.
        tokens = [token.split("/")[0] for token in style["font"].split()]
        size = next((t for t in tokens if _ZERO_LENGTH.match(t) or _RELATIVE_FONT_SIZE.match(t)), None)
        size = size or ("inherit" if tokens in (["inherit"], ["unset"]) else "medium")
    if size is None or size in _INHERITING or _RELATIVE_FONT_SIZE.match(size):
        return parent_zero or (size is not None and bool(_ZERO_LENGTH.match(size)))
    return bool(_ZERO_LENGTH.match(size))
