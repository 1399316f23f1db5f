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

Text a reader reveals through an interaction the page itself provides is content, as a
closed ``<details>`` is: a CSS-only accordion shuts its panel (``.panel{max-height:0;
overflow:hidden}``) and opens it with ``input:checked ~ .panel{max-height:40em}``. So an
element that its rules hide is kept when it is not hidden as it looks in such a state
(:func:`revealed_style`): a rule whose selector puts another element in a state a reader
brings about (``:checked``, ``:target``, ``:hover``, ``:focus``, ``:focus-within``,
``:focus-visible``, ``:active``, ``details[open]``), or ``:target`` on the element itself,
and whose other parts are tags, classes, ids and attributes. The page must have an element
that can enter that state (a checkbox or radio button that is not disabled, an element a
link on the page points to, a focusable element...), found by
:meth:`StyleSheet.find_interactions`; where that element stands is not checked (no selector
engine), which gives a page nothing it could not have by placing its control right. The
hidden element's own ``:hover`` or ``:focus`` does not count (what is not shown cannot be
pointed at), nor do JavaScript toggles.

The classic concealment tricks are judged in their general form (:func:`hides_subtree`,
:func:`invisible_ink`): text moved off-screen (``text-indent``, ``left``/``top``/``right``/
``bottom`` of a positioned box, ``translate`` at or past -999px), clipped away (``clip:
rect()`` of at most a pixel, ``clip-path: inset(50%)``, ``circle(0)``), scaled to nothing
(``scale(0)``, a collapsing ``matrix``), shut in a box of at most one pixel that clips its
overflow (``height: 0; overflow: hidden``, unpadded), and text painted transparent or in
the colour of its background (``#fff``, ``white``, ``rgb()``, ``hsl()`` alike, within a few
levels of 255). Screen-reader-only text (the ``.sr-only`` pattern: a clipped 1px box) is
dropped too: a sighted reader does not see it, and what it says (a link's purpose, an
icon's name) repeats what the page shows. An element's background counts for the text of
its descendants only when the page loads no external style sheet and none of its own rules
that Beleg does not match (``main .card-dark``) paints a background or colour, since either
may paint any element in between; white text with no background said is kept, since the page
may be dark, and so is text over a picture in the same element (a hero title over an
``<img>``), over a background image (also ``<td background=…>``) or blended
(``mix-blend-mode``).

Not judged (the text stays): external style sheets, rules inside ``@media`` queries other
than ``all``/``screen``, colours named other than the basic keywords, ``var()`` and
``calc()`` values, offsets in percentages, ``margin`` pushed off-screen, nearly transparent
text (only an alpha of 0 counts without a known background), and text coloured like a
background image.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from beleg.errors import IngestError
from beleg.ingest.readers.base import SAME_COLOUR

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
# A compound of a selector with combinators: a tag (or '*') and .class, #id, :pseudo-class
# and [attribute] parts; then the combinator to the next compound.
_COMPOUND = re.compile(r"(\*|[a-z][a-z0-9-]*)?((?:[.#][\w-]+|:[a-z-]+|\[[^\[\]]*\])*)", re.IGNORECASE)
_COMPOUND_PART = re.compile(r"([.#:])([\w-]+)|\[\s*([\w-]+)[^\]]*\]")
_COMBINATOR = re.compile(r"\s*[>~+]\s*|\s+")
#: Pseudo-classes for states a reader puts an element in: ticking a box, following a link
#: to it, pointing at or focusing it. ("open" stands for '[open]' on a <details>.)
_STATES = frozenset({"checked", "target", "hover", "focus", "focus-within", "focus-visible", "active"})
_FOCUSABLE = frozenset({"button", "select", "textarea", "summary", "iframe"})
_BLOCK_EDGE = re.compile(r"[{}]")
# A length of zero in any unit: 0, 0.0, .0, 0px, 0em, 0%.
_ZERO_LENGTH = re.compile(r"^[+-]?(?:0+(?:\.0*)?|\.0+)(?:[a-z]+|%)?$")
_NUMBER = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(%?)$")
# Font sizes relative to the parent's (em, %, ...) stay zero under a zero-sized parent.
_RELATIVE_FONT_SIZE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:em|ex|ch|cap|ic|lh|%)$")
_INHERITING = {"inherit", "unset", "smaller", "larger"}
#: Properties whose declarations are kept; rules with none of them are dropped on reading.
#: Properties that change what text is seen against (see paints_unjudged).
_PAINT = frozenset({"color", "background", "background-color", "background-image", "-webkit-text-fill-color"})
_JUDGED = frozenset({
    "display", "visibility", "opacity", "content-visibility", "font-size", "font",
    # the text's colour and what it is drawn on (see Ink)
    "color", "-webkit-text-fill-color", "background", "background-color", "background-image",
    "background-clip", "-webkit-background-clip", "text-shadow", "-webkit-text-stroke",
    "-webkit-text-stroke-width", "mix-blend-mode",
    # moved off-screen, clipped away, scaled to nothing, or a zero-sized box (see out_of_sight)
    "text-indent", "position", "left", "top", "right", "bottom", "float", "clip", "clip-path",
    "transform", "scale", "width", "height", "max-width", "max-height", "overflow", "overflow-x",
    "overflow-y", "padding", "padding-top", "padding-right", "padding-bottom", "padding-left",
})  # fmt: skip
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
        value = _IMPORTANT.sub("", value).strip()
        if value:  # 'color:' or 'color: !important' is invalid: a browser ignores it
            out.append((prop, value, important))
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
        # Rules for states a reader can put the page in (see revealed_style): indexed by the
        # element they style, with the states they need of other elements.
        self._reveals_by_key: dict[str, list[_Reveal]] = {}
        self._reveal_by_selector: dict[tuple[object, ...], _Reveal] = {}
        self._conditions_by_key: dict[str, dict[_Compound, None]] = {}  # an ordered set per key
        self._offered: set[_Compound] = set()  # conditions some element of the page can meet
        self._linked: frozenset[str] = frozenset()  # ids the page links to ('href="#id"')
        #: A rule Beleg does not match (a combinator, an attribute, a pseudo-class) paints a
        #: background or colour somewhere: then no ancestor's background is known for sure
        #: ("main .card-dark{background:#111}" under white text).
        self.paints_unjudged = False
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
                if any(prop in _PAINT for prop, _, _ in declarations):
                    self.paints_unjudged = True
                self._add_reveal(selector, declarations)
                continue  # otherwise a complex selector is not judged (see the module docstring)
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
                self._by_key.setdefault(_index_key(tag, classes, ids), []).append(rule)
            for prop, value, important in declarations:
                held = rule.declarations.get(prop)
                if held is None or (important, order) >= held[:2]:
                    rule.declarations[prop] = (important, order, value)

    def matching(self, tag: str, classes: frozenset[str], element_id: str) -> list[_Rule]:
        candidates = self._candidates(self._by_key, tag, classes, element_id)
        return [rule for rule in candidates if _matches(rule, tag, classes, element_id)]

    def _add_reveal(self, selector: str, declarations: Declarations) -> None:
        """Keep a rule that styles an element while a reader has put the page in some state:
        ``input:checked ~ .panel``, ``#faq:target .answer``, ``.card:hover .more``,
        ``details[open] .x``, ``.panel:target``. The state must be of another element (an
        ancestor or an earlier sibling), or ``:target`` of the element itself: a hidden
        element cannot be pointed at or focused."""
        compounds = _compounds(selector)
        if compounds is None:
            return
        subject, others = compounds[-1], compounds[:-1]
        conditions = [compound for compound in others if compound.states]
        if subject.attributes or not subject.states <= {"target"} or not (conditions or subject.states):
            return
        order = self._count
        self._count += 1
        ids, classes, tags = zip(*(compound.specificity for compound in compounds))
        specificity = (sum(ids), sum(classes), sum(tags))
        # Rules for one element in one state are merged (as simple rules with one selector are):
        # repeating a rule cannot multiply the work per element.
        same = (subject.tag, subject.classes, subject.ids, frozenset(conditions), "target" in subject.states, specificity)
        reveal = self._reveal_by_selector.get(same)
        if reveal is None:
            rule = _Rule(subject.tag, subject.classes, subject.ids, specificity, {})
            reveal = _Reveal(rule, tuple(conditions), "target" in subject.states)
            self._reveal_by_selector[same] = reveal
            self._reveals_by_key.setdefault(_index_key(subject.tag, subject.classes, subject.ids), []).append(reveal)
        for prop, value, important in declarations:
            held = reveal.rule.declarations.get(prop)
            if held is None or (important, order) >= held[:2]:
                reveal.rule.declarations[prop] = (important, order, value)
        for condition in conditions:
            key = _index_key(condition.tag, condition.classes, condition.ids)
            self._conditions_by_key.setdefault(key, {})[condition] = None  # '.a:hover' in many rules is one

    def find_interactions(self, elements: Iterable[tuple[str, Callable[[str], str | None]]], linked: Iterable[str]) -> None:
        """Note which states the page lets a reader put its elements in: ``elements`` are
        every element's (tag, attribute getter), ``linked`` the ids its links point to."""
        self._linked = frozenset(target for target in linked if target)
        if not self._conditions_by_key:
            return
        for tag, get in elements:
            tag = tag.lower()
            classes = frozenset((get("class") or "").split())
            element_id = (get("id") or "").strip()
            for condition in self._candidates(self._conditions_by_key, tag, classes, element_id):
                if condition not in self._offered and _matches(condition, tag, classes, element_id) \
                        and all(_can_enter(state, tag, get, self._linked) for state in condition.states):
                    self._offered.add(condition)

    def revealing(self, tag: str, classes: frozenset[str], element_id: str) -> list[_Rule]:
        """The rules that style this element in a state a reader can bring about."""
        found: list[_Rule] = []
        for reveal in self._candidates(self._reveals_by_key, tag, classes, element_id):
            if not _matches(reveal.rule, tag, classes, element_id):
                continue
            # Each condition is a check too: K rules chaining 1..K conditions cost K^2 per element.
            self._count_checks(len(reveal.conditions))
            if all(c in self._offered for c in reveal.conditions) and (not reveal.own_target or element_id in self._linked):
                found.append(reveal.rule)
        return found

    def _candidates(self, index: Mapping[str, Iterable[_T]], tag: str, classes: frozenset[str], element_id: str) -> list[_T]:
        keys = [tag, "*", *(f".{c}" for c in classes)]
        if element_id:
            keys.append(f"#{element_id}")
        candidates = [item for key in keys for item in index.get(key, ())]
        self._count_checks(len(candidates))
        return candidates

    def _count_checks(self, checks: int) -> None:
        self._checks += checks
        if self._checks > MAX_RULE_CHECKS:
            # Failing closed: without the style sheet we cannot tell which text is hidden.
            raise IngestError(
                f"the page's <style> rules are too costly to apply (over {MAX_RULE_CHECKS:,} "
                "element x rule checks); hidden text could not be determined"
            )


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Compound:
    """One compound of a selector: what an element must be, and the states it must be in."""

    tag: str | None
    classes: frozenset[str]
    ids: frozenset[str]
    states: frozenset[str]
    attributes: int  # [attribute] conditions, not checked (only counted for specificity)

    @property
    def specificity(self) -> tuple[int, int, int]:
        return (len(self.ids), len(self.classes) + len(self.states) + self.attributes, int(self.tag is not None))


@dataclass(frozen=True, slots=True)
class _Reveal:
    rule: _Rule
    conditions: tuple[_Compound, ...]  # states other elements must be able to enter
    own_target: bool  # ':target' on the element itself: a link must point to its id


def _compounds(selector: str) -> list[_Compound] | None:
    """The compounds of ``selector`` (the combinators between them are not kept), or None
    when it uses anything but tags, classes, ids, attributes and the states in _STATES."""
    selector = selector.strip()
    compounds: list[_Compound] = []
    pos = 0
    while True:
        match = _COMPOUND.match(selector, pos)
        if match is None or match.end() == pos:
            return None
        tag = match.group(1).lower() if match.group(1) and match.group(1) != "*" else None
        classes: set[str] = set()
        ids: set[str] = set()
        states: set[str] = set()
        attributes = 0
        for part in _COMPOUND_PART.finditer(match.group(2)):
            kind, name, attribute = part.groups()
            if attribute is not None:
                attributes += 1
                if attribute.lower() == "open" and tag == "details":
                    states.add("open")  # a <details> the reader has opened
            elif kind == ":":
                if name.lower() not in _STATES:
                    return None
                states.add(name.lower())
            else:
                (classes if kind == "." else ids).add(name)
        compounds.append(_Compound(tag, frozenset(classes), frozenset(ids), frozenset(states), attributes))
        pos = match.end()
        if pos == len(selector):
            return compounds
        combinator = _COMBINATOR.match(selector, pos)
        if combinator is None or combinator.end() == pos:
            return None
        pos = combinator.end()


def _index_key(tag: str | None, classes: frozenset[str], ids: frozenset[str]) -> str:
    """Rules are indexed under one part the element must have."""
    return f"#{min(ids)}" if ids else f".{min(classes)}" if classes else tag or "*"


def _matches(what: _Rule | _Compound, tag: str, classes: frozenset[str], element_id: str) -> bool:
    return (what.tag is None or what.tag == tag) and what.classes <= classes and all(i == element_id for i in what.ids)


def _can_enter(state: str, tag: str, get: Callable[[str], str | None], linked: frozenset[str]) -> bool:
    """Can a reader put this element in ``state``?"""
    kind = (get("type") or "").strip().lower()
    enabled = get("disabled") is None
    if state == "checked":
        return tag == "input" and kind in ("checkbox", "radio") and enabled
    if state == "target":
        return (get("id") or "").strip() in linked
    if state == "open":
        return tag == "details"
    if state in ("focus", "focus-visible"):
        focusable = (
            tag in _FOCUSABLE or (tag in ("a", "area") and get("href") is not None)
            or (tag == "input" and kind != "hidden") or get("tabindex") is not None
            or (get("contenteditable") or "false").strip().lower() != "false"
        )  # fmt: skip
        return focusable and enabled
    return True  # hover, active, focus-within: any element


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
    if not sheet:
        return _cascade(get, [])
    return _cascade(get, sheet.matching(tag.lower(), *_identity(get)))


def revealed_style(tag: str, get: Callable[[str], str | None], sheet: StyleSheet) -> dict[str, str] | None:
    """The element's judged properties once a reader has done what the page offers to show
    it, or ``None`` when no rule styles it so: ticked the box of a CSS-only accordion
    (``input:checked ~ .panel { max-height: 40em }``), followed a link to it (``:target``),
    pointed at or focused an element around it (``.menu:hover .sub``), opened a ``<details>``.

    Only states that some element of the page can enter count (``find_interactions``): a
    rule for a checkbox the page does not have reveals nothing. Whether that element stands
    where the selector needs it (an earlier sibling, an ancestor) is not checked; a page that
    hides text behind a real control shows it to whoever uses the control anyway.
    """
    if not sheet:
        return None
    classes, element_id = _identity(get)
    states = sheet.revealing(tag.lower(), classes, element_id)
    if not states:
        return None
    return _cascade(get, [*sheet.matching(tag.lower(), classes, element_id), *states])


def _identity(get: Callable[[str], str | None]) -> tuple[frozenset[str], str]:
    return frozenset((get("class") or "").split()), (get("id") or "").strip()


def _cascade(get: Callable[[str], str | None], rules: Iterable[_Rule]) -> dict[str, str]:
    """The winning value of each property among ``rules`` and the inline style."""
    best: dict[str, tuple[tuple[bool, bool, tuple[int, int, int], int], str]] = {}

    def offer(declarations: Declarations, inline: bool, specificity: tuple[int, int, int], order: int) -> None:
        for prop, value, important in declarations:
            key = (important, inline, specificity, order)
            if prop not in best or key >= best[prop][0]:
                best[prop] = (key, value)

    for rule in rules:
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
    if opacity is not None and float(opacity.group(1)) <= 0:  # negative values clamp to 0
        return True
    return _off_screen(style) or _clipped_away(style) or _scaled_away(style) or _zero_box(style, tag)


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



# --- geometry: off-screen, clipped, scaled to nothing, zero-sized ----------------------

#: At or past this many pixels to the left of or above its place, a box is off any screen:
#: the ``text-indent: -9999px`` and ``left: -9999px`` idioms. Pages never place content a
#: reader should see there (nothing can scroll to it).
OFF_SCREEN_PX = -999
# What one unit is in CSS pixels; em/rem at the default 16px font, viewport units on a
# 1000px screen. Percentages are left out: they depend on a box we do not know.
_PX_PER_UNIT = {
    "": 1.0, "px": 1.0, "em": 16.0, "rem": 16.0, "ex": 8.0, "ch": 8.0, "pt": 4 / 3, "pc": 16.0,
    "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "q": 96 / 101.6, "vw": 10.0, "vh": 10.0,
    "vmin": 10.0, "vmax": 10.0,
}  # fmt: skip
_LENGTH = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-z]*|%)$")
# A function's name starts where no name character stands before it: unanchored, findall
# tried every position of a long run of letters and scanned the run from each (quadratic:
# a 100,000-letter transform took 87 s).
_FUNCTION = re.compile(r"(?<![a-z0-9-])([a-z0-9-]+)\(([^()]*)\)")
_ARGUMENT_SPLIT = re.compile(r"[\s,/]+")
_MOVED = {"absolute", "fixed", "relative"}  # positions that left/top/right/bottom move
_TAKEN_OUT = {"absolute", "fixed"}  # positions that make any box a block and let 'clip' apply
# Elements a browser lays out as blocks (so width and height apply) unless CSS says otherwise.
# <html> and <body> are not among them: their overflow goes to the viewport, clipping nothing.
_BLOCK_TAGS = frozenset({
    "div", "p", "section", "article", "main", "aside", "header", "footer", "nav", "ul", "ol", "li",
    "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "figure",
    "figcaption", "form", "fieldset", "address", "details", "summary", "center", "hr", "legend",
})  # fmt: skip
# Displays whose boxes take a width and height; inline boxes and table parts do not.
_SIZED_DISPLAYS = {"block", "inline-block", "flex", "inline-flex", "grid", "inline-grid", "flow-root", "list-item"}
#: A scale factor at or below this draws 16px text under 0.2px: nothing a reader can see.
_VANISHING_SCALE = 0.01


def _px(value: str | None) -> float | None:
    """A length in CSS pixels; ``None`` for percentages, keywords and anything not a length."""
    match = _LENGTH.match(value or "")
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2)
    if number == 0:
        return 0.0  # zero in any unit, '0%' included
    factor = _PX_PER_UNIT.get(unit)
    return None if factor is None else number * factor


def _far_off(value: str | None) -> bool:
    px = _px(value)
    return px is not None and px <= OFF_SCREEN_PX


def _off_screen(style: dict[str, str]) -> bool:
    """Moved out of any screen: a huge negative ``text-indent`` (the image-replacement idiom),
    a positioned box pushed far past an edge, or a far ``translate``."""
    if _far_off(style.get("text-indent")):
        return True
    sides = ("left", "top", "right", "bottom")
    if style.get("position") in _MOVED and any(_far_off(style.get(side)) for side in sides):
        return True
    for name, arguments in _FUNCTION.findall(style.get("transform", "")):
        values = _ARGUMENT_SPLIT.split(arguments.strip())
        if name in ("translate", "translate3d") and any(_far_off(v) for v in values[:2]):
            return True
        if name in ("translatex", "translatey") and _far_off(values[0]):
            return True
    return False


def _clipped_away(style: dict[str, str]) -> bool:
    """Clipped to nothing: ``clip: rect()`` of at most one pixel (which only applies to an
    absolutely positioned box), ``clip-path: inset()`` of 50% from both sides, or a
    ``circle()``/``ellipse()`` of radius zero."""
    clip = _FUNCTION.fullmatch(style.get("clip", ""))
    if clip is not None and clip.group(1) == "rect" and style.get("position") in _TAKEN_OUT:
        edges = [_px(v) for v in _ARGUMENT_SPLIT.split(clip.group(2).strip())]
        if len(edges) == 4 and None not in edges:  # 'auto' is the box's own edge: not judged
            top, right, bottom, left = edges
            if bottom - top <= 1 or right - left <= 1:  # type: ignore[operator]
                return True
    shape = _FUNCTION.match(style.get("clip-path", ""))
    if shape is None:
        return False
    name, arguments = shape.group(1), shape.group(2).split(" round ")[0].split(" at ")[0]
    values = _ARGUMENT_SPLIT.split(arguments.strip()) if arguments.strip() else []
    if name == "inset" and 1 <= len(values) <= 4:
        percents = [_percent(v) for v in values]
        if None in percents:
            return False  # lengths: how much is left depends on the box's size
        # One to four values, expanded like 'margin': top, right, bottom, left.
        top, right = percents[0], percents[1 % len(percents)]
        bottom = percents[2] if len(percents) > 2 else top
        left = percents[3] if len(percents) > 3 else right
        return top + bottom >= 100 or left + right >= 100  # type: ignore[operator]
    if name in ("circle", "ellipse"):
        return any(_px(v) == 0 for v in values)  # a radius of zero (a bare '0' or '0%')
    return False


def _percent(value: str) -> float | None:
    if value.endswith("%"):
        number = _NUMBER.match(value)
        return float(number.group(1)) if number else None
    return 0.0 if _px(value) == 0 else None


def _scaled_away(style: dict[str, str]) -> bool:
    """Scaled to nothing: ``transform: scale(0)`` (or scaleX/scaleY/scale3d, a ``matrix``
    that collapses to a line) or the ``scale`` property."""
    for name, arguments in _FUNCTION.findall(style.get("transform", "")):
        factors = _factors(arguments.replace(",", " "))
        if name in ("scale", "scalex", "scaley", "scale3d") and _vanishes(factors[:2]):
            return True  # a zero x or y factor (scale3d's third is depth)
        if name == "matrix" and len(factors) == 6:
            a, b, c, d = factors[:4]
            if abs(a * d - b * c) <= _VANISHING_SCALE**2:  # the area it leaves
                return True
    return _vanishes(_factors(style.get("scale", ""))[:2])


def _factors(values: str) -> list[float]:
    """The numbers (or percentages) in ``values``; none if any is not one (var(), calc())."""
    factors = [_factor(value) for value in values.split()]
    return [] if None in factors else [f for f in factors if f is not None]


def _vanishes(factors: list[float]) -> bool:
    return any(abs(factor) <= _VANISHING_SCALE for factor in factors)


def _factor(value: str) -> float | None:
    number = _NUMBER.match(value)
    if number is None:
        return None
    return float(number.group(1)) / (100 if number.group(2) else 1)


def _zero_box(style: dict[str, str], tag: str) -> bool:
    """A box of at most one pixel that clips what overflows it: ``height: 0; overflow: hidden``.

    Only boxes that take a size count (a ``<span>`` ignores ``width``), and only without
    padding: ``height: 0; padding-bottom: 56%`` is the aspect-ratio box around a video."""
    display = style.get("display")
    if display is not None and display not in _SIZED_DISPLAYS:
        return False
    takes_size = display is not None or tag in _BLOCK_TAGS or style.get("position") in _TAKEN_OUT
    if not takes_size and style.get("float") not in ("left", "right"):
        return False
    padding = ("padding", "padding-top", "padding-right", "padding-bottom", "padding-left")
    if any(_px(part) != 0 for prop in padding if prop in style for part in style[prop].split()):
        return False
    overflow = style.get("overflow", "").split()
    clips_x = style.get("overflow-x", overflow[0] if overflow else "") in ("hidden", "clip")
    clips_y = style.get("overflow-y", overflow[-1] if overflow else "") in ("hidden", "clip")
    return (clips_x and _tiny(style, "width")) or (clips_y and _tiny(style, "height"))


def _tiny(style: dict[str, str], dimension: str) -> bool:
    sizes = (_px(style.get(dimension)), _px(style.get(f"max-{dimension}")))
    return any(size is not None and size <= 1 for size in sizes)


# --- colour: text drawn in the colour of what is behind it -----------------------------

Colour = tuple[float, float, float, float]  # red, green, blue (0-255), alpha (0-1)

_TRANSPARENT: Colour = (0.0, 0.0, 0.0, 0.0)
# The basic CSS colour keywords; a colour named otherwise is not judged (the text stays).
_NAMED = {
    "white": "#ffffff", "black": "#000000", "red": "#ff0000", "lime": "#00ff00", "blue": "#0000ff",
    "yellow": "#ffff00", "aqua": "#00ffff", "cyan": "#00ffff", "fuchsia": "#ff00ff",
    "magenta": "#ff00ff", "silver": "#c0c0c0", "gray": "#808080", "grey": "#808080",
    "maroon": "#800000", "olive": "#808000", "green": "#008000", "purple": "#800080",
    "teal": "#008080", "navy": "#000080", "orange": "#ffa500", "whitesmoke": "#f5f5f5",
    "snow": "#fffafa", "ivory": "#fffff0", "lightgray": "#d3d3d3", "lightgrey": "#d3d3d3",
}  # fmt: skip
_HEX = re.compile(r"^#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$")
_COLOUR_TOKEN = re.compile(r"(?:rgba?|hsla?)\([^()]*\)|#[0-9a-f]+|[a-z]+")
_BACKGROUND_IMAGE = re.compile(r"url\(|gradient\(|image\(|image-set\(|element\(|cross-fade\(")
_FOLLOWS_PARENT = {"inherit", "unset", "currentcolor"}


def parse_colour(value: str) -> Colour | None:
    """A CSS colour (keyword, ``#hex``, ``rgb()``/``rgba()``, ``hsl()``/``hsla()``), else ``None``."""
    value = value.strip().lower()  # attributes (<font color="#FFF">) keep their case
    if value == "transparent":
        return _TRANSPARENT
    value = _NAMED.get(value, value)
    hex_match = _HEX.match(value)
    if hex_match is not None:
        digits = hex_match.group(1)
        if len(digits) <= 4:
            digits = "".join(d * 2 for d in digits)
        opacity = int(digits[6:8], 16) / 255 if len(digits) == 8 else 1.0
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16), opacity)
    function = _FUNCTION.fullmatch(value)
    if function is None or function.group(1) not in ("rgb", "rgba", "hsl", "hsla"):
        return None
    parts = _ARGUMENT_SPLIT.split(function.group(2).strip())
    if len(parts) not in (3, 4):
        return None
    alpha = _factor(parts[3]) if len(parts) == 4 else 1.0
    if alpha is None:
        return None
    if function.group(1).startswith("rgb"):
        channels = [_channel(part) for part in parts[:3]]
        if None in channels:
            return None
        red, green, blue = channels
        return (red, green, blue, min(max(alpha, 0.0), 1.0))  # type: ignore[return-value]
    hue = _NUMBER.match(parts[0].removesuffix("deg"))
    saturation, lightness = _factor(parts[1]), _factor(parts[2])
    if hue is None or saturation is None or lightness is None:
        return None
    import colorsys

    red, green, blue = colorsys.hls_to_rgb(float(hue.group(1)) / 360 % 1, lightness, saturation)
    return (red * 255, green * 255, blue * 255, min(max(alpha, 0.0), 1.0))


def _channel(value: str) -> float | None:
    number = _NUMBER.match(value)
    if number is None:
        return None
    channel = float(number.group(1)) * (2.55 if number.group(2) else 1)
    return min(max(channel, 0.0), 255.0)


@dataclass(frozen=True, slots=True)
class Ink:
    """How an element's text is painted, as far as the page itself says; ``None`` is not known.

    ``colour`` is the inherited ``color``; ``fill`` a ``-webkit-text-fill-color`` that paints
    over it. ``backdrop`` is the nearest opaque background (an image or a translucent layer
    makes it unknown). ``drawn_otherwise`` marks text that shows whatever its fill colour: an
    outline (``-webkit-text-stroke``), a ``text-shadow`` or a background clipped to the text
    (the gradient-headline idiom paints ``color: transparent`` text that way)."""

    colour: Colour | None = None
    fill: Colour | None = None
    backdrop: Colour | None = None
    drawn_otherwise: bool = False


def text_ink(tag: str, get: Callable[[str], str | None], style: dict[str, str], parent: Ink) -> Ink:
    """The element's :class:`Ink`, from its own style and what it inherits from ``parent``."""
    colour_value = style.get("color") or (get("color") if tag.lower() == "font" else None)  # <font color>
    colour = _inherited_colour(colour_value, parent.colour)
    fill = _inherited_colour(style.get("-webkit-text-fill-color"), parent.fill)
    drawn_otherwise = parent.drawn_otherwise
    shadow = style.get("text-shadow")
    if shadow is not None and shadow not in _FOLLOWS_PARENT:
        drawn_otherwise = shadow not in ("none", "initial")
    for prop in ("-webkit-text-stroke", "-webkit-text-stroke-width"):  # an outline of this width
        width = style.get(prop, "").split()
        if width and style[prop] not in _FOLLOWS_PARENT:  # no value: ignored, as a browser does
            drawn_otherwise = style[prop] not in ("none", "initial") and _px(width[0]) != 0
    if "text" in (style.get("background-clip"), style.get("-webkit-background-clip")):
        drawn_otherwise = True
    if style.get("mix-blend-mode", "normal") not in ("normal", "initial", "inherit", "unset"):
        drawn_otherwise = True  # blended with what lies below: its colour is not what is seen
    return Ink(colour, fill, _backdrop(get, style, parent.backdrop, colour), drawn_otherwise)


def _inherited_colour(value: str | None, parent: Colour | None) -> Colour | None:
    if value is None or value in _FOLLOWS_PARENT:
        return parent
    return parse_colour(value)  # 'initial', 'var(--x)', an unknown name: not known


def _backdrop(
    get: Callable[[str], str | None], style: dict[str, str], parent: Colour | None, colour: Colour | None
) -> Colour | None:
    """What the element's text is drawn on: its own background over the parent's backdrop."""
    image = style.get("background-image", "none") not in ("none", "initial")
    if image or _BACKGROUND_IMAGE.search(style.get("background", "")) or get("background"):
        return None  # an image (also the e-mail templates' <td background=…>): text may show anywhere
    layers: set[Colour | None] = set()
    for value in (style.get("background-color"), _background_colour_token(style.get("background"))):
        if value is None or value in ("inherit", "unset"):
            continue
        if value == "currentcolor":
            layers.add(colour)
        elif value in ("none", "initial"):
            layers.add(_TRANSPARENT)
        else:
            layers.add(parse_colour(value))  # None: a colour we cannot read, so not known
    if not layers:
        attribute = get("bgcolor")  # the presentational attribute of <body>, <table>, <td>...
        layers.add(parse_colour(attribute) if attribute else _TRANSPARENT)
    if len(layers) > 1:
        return None  # 'background-color' and the shorthand disagree: which comes last is lost
    own = layers.pop()
    if own is None:
        return None
    if own[3] >= 1:
        return own
    if own[3] <= 0:
        return parent
    return None if parent is None else _over(own, parent)


def _background_colour_token(value: str | None) -> str | None:
    """The colour in a ``background`` shorthand (``none`` if it sets none)."""
    if value is None:
        return None
    if value in ("inherit", "unset", "initial", "none"):
        return value
    for token in _COLOUR_TOKEN.findall(value):
        if token == "currentcolor" or parse_colour(token) is not None:
            return token
    return "none"  # the shorthand resets the colour to transparent


def _over(top: Colour, below: Colour) -> Colour:
    alpha = top[3]
    red, green, blue = (top[i] * alpha + below[i] * (1 - alpha) for i in range(3))
    return (red, green, blue, 1.0)


def invisible_ink(ink: Ink) -> bool:
    """Is text painted this way unseen: fully transparent, or the colour of its backdrop?"""
    painted = ink.fill if ink.fill is not None else ink.colour
    if painted is None or ink.drawn_otherwise:
        return False
    if painted[3] <= 0:
        return True
    if ink.backdrop is None:
        return False  # white text with no background said: the page may well be dark
    seen = _over(painted, ink.backdrop)
    return all(abs(seen[i] - ink.backdrop[i]) <= SAME_COLOUR for i in range(3))
