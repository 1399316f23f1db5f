"""Anchors: the words of a question that any text answering it must contain.

A question about "MQTT", "js-controller 5", "GraphQL" or "version 3.4.0" is not answered
by a text that never names them, however similar it is in meaning: an embedder puts
"Does Ferrolink support MQTT?" right next to "Ferrolink supports AMQP clients". Such words
are recognisable by form, in any language, so they hold across languages too (a German
question's "iCalReadTrigger" is the English page's as well):

* numbers and versions ("5", "2021", "3.4.0", "99,95");
* identifiers: code spans, tokens with inner ``. _ /`` (``Node.js``, ``/api/v3``), or an
  inner ``-`` and a digit (``E-4012``), camelCase (``ioBroker``, ``GraphQL``,
  ``iCalReadTrigger``), letters with digits (``CCU3``);
* lower-case compounds (``js-controller``, ``docker-compose``, but also ``sign-on``);
* acronyms (``MQTT``, ``SAML``, ``SOC``, ``SDK``; a plural "s" is dropped);
* in English questions only, capitalised words that do not open the sentence: proper
  names ("Terraform", "Raspberry"). German capitalises every noun, so there this form
  says nothing.

Not anchors: abbreviations ("i.e.", "e.g.", "z. B.", "d.h."), and the placeholders the
asker puts in for their own setup, which no documentation can name: the reserved example
domains (``example.org``, ``*.example``, ``*.test``, ``*.invalid``, ``localhost``; RFC 2606)
and the private and documentation IP ranges (``192.168.2.0/24``, ``10.0.0.1``,
``203.0.113.5``; RFC 1918 and 5737), unless written as a version ("version 10.0.3.1"). In "x86-Server" or "ARM64-Maschine" the anchor is the
name, not the German noun it is compounded with.

Matching ignores case and separators ("Node.js" = "NodeJS", "docker-compose" = "docker
compose"), never crosses a word boundary ("SOC" is not in "socket"), and a number only
matches the same number ("5" is not in "15" or "5.1"). A compound's last word may be
inflected differently ("re-created" is found as "recreate").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from beleg.index.analyzer import analyze

_CODE = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[\w][\w./\-]*[\w]|[\w]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ACRONYM = re.compile(r"([A-ZÄÖÜ]{3,}\d*|[A-ZÄÖÜ]{2}\d+)s?")  # two letters alone: "ID", "IT", "OK" are words
_CAMEL = re.compile(r"[a-z]+[A-Z][\w]*|[A-Z][a-z]+[A-Z][\w]*")
_CAPITALISED = re.compile(r"[A-ZÄÖÜ][a-zäöüß]{2,}")
# "i.e", "e.g", "z.B", "d.h", "u.a" (the final dot is stripped): single letters with dots.
_ABBREVIATION = re.compile(r"(?:[A-Za-zÄÖÜäöü]\.)+[A-Za-zÄÖÜäöü]")
# The asker's own setup, which no page names (RFC 2606 and 6761 names, RFC 1918 and 5737 addresses).
_PLACEHOLDER = re.compile(
    r"(?:[\w-]+\.)*(?:example\.(?:com|org|net)|[\w-]+\.(?:example|test|invalid|localhost)|localhost)"
    r"(?::\d+)?(?:/[\w.~%/-]*)?"  # with its port and path: "www.example.com/de/"
    # An address stands alone: "v10.2.0.4", "version 10.0.3.1" and "1.10.0.0.1" are versions.
    r"|(?<![\w.])(?<!version )(?:(?:10|127)(?:\.\d{1,3}){3}|192\.168(?:\.\d{1,3}){2}"
    r"|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}"
    r"|(?:192\.0\.2|198\.51\.100|203\.0\.113)\.\d{1,3})(?:/\d{1,2})?(?!\.?\w)", re.IGNORECASE)
# A German compound of a name and a noun ("x86-Server", "ARM64-Maschine", "IPv6-Adresse").
_NOUN_TAIL = re.compile(r"-[A-ZÄÖÜ][a-zäöüß]{2,}$")
#: Anchors that name exactly one thing: a text that answers must contain them.
STRONG = ("number", "identifier", "acronym")
#: Capitalised words that are question or sentence furniture, not names.
_NOT_NAMES = frozenset("""i if is are was were do does did can could how what which who whom whose when where why
will would should shall may might must has have had the a an and or in on at of for to by with from as that this
these those there it its my our your their please
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday today tomorrow""".split())  # dates are written many ways


@dataclass(frozen=True, slots=True)
class Anchor:
    """One anchor: the text as asked, its kind (number, identifier, acronym, name), and a
    pattern that finds it in case-folded text."""

    text: str
    kind: str
    pattern: re.Pattern[str]

    def found_in(self, folded: str, compact: str | None = None) -> bool:
        """Whether the case-folded text holds this anchor; ``compact`` is that text without
        separators (computed here when not given: callers testing many anchors pass it once)."""
        if self.kind in STRONG:
            return self.pattern.search(folded) is not None
        # Names and compounds: inside a longer word and across spaces ("Super Bowl" for "Superbowl").
        return self.pattern.search(compact if compact is not None else _compact(folded)) is not None

    @property
    def year(self) -> bool:
        """A year ("in 2015"): questions add it as context that the answering text need not repeat."""
        return self.kind == "number" and is_year(self.text)


def is_year(number: str) -> bool:
    """A four-digit number from 1500 to 2099."""
    return re.fullmatch(r"(?:1[5-9]|20)\d\d", number) is not None


def _compact(folded: str) -> str:
    return re.sub(r"[\W_]+", "", folded)


def _word_pattern(text: str, bounded: bool = True) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.split(r"[\W_]+", text.casefold()) if p]
    body = r"[\W_]*".join(parts) if bounded else "".join(parts)
    # Names and compounds are searched in text without separators (Anchor.found_in).
    return re.compile(r"(?<![^\W_])" + body + r"s?(?![^\W_])" if bounded else body)


def _compound_pattern(compound: str) -> re.Pattern[str]:
    """A lower-case compound in text without separators, its last word by its stem: "re-created"
    is in "recreate", "sign-ons" in "signon"."""
    parts = [p for p in re.split(r"[\W_]+", compound.casefold()) if p]
    stems = analyze(parts[-1], "en", keep_stopwords=True) if parts else []
    last = stems[0] if stems and parts[-1].startswith(stems[0]) else parts[-1] if parts else ""
    return re.compile(re.escape("".join(parts[:-1]) + last))


def _number_pattern(number: str) -> re.Pattern[str]:
    body = r"[.,]".join(re.escape(p) for p in re.split(r"[.,]", number))
    # A year also matches inside a compact date ("2019" in "20190730").
    tail = r"(?!\d|[.,]\d)" if not re.fullmatch(r"(?:19|20)\d\d", number) else r"(?!\d(?!\d{3}))"
    return re.compile(r"(?<!\d)(?<!\d[.,])" + body + tail)


def question_anchors(question: str, language: str) -> list[Anchor]:
    """The anchors of ``question`` (``language``: its detected language, "en"/"de"/"?").

    Kinds: "number", "identifier", "acronym" (the strong ones: they name exactly one thing)
    and "compound", "name" (weaker: ordinary words can take these forms too)."""
    out: dict[str, Anchor] = {}

    def add(text: str, kind: str) -> None:
        key = re.sub(r"[\W_]+", "", text.casefold())
        if key and key not in out:
            if kind == "name" and len(text) > 3 and text.endswith("s") and not text.endswith("ss"):
                text = text[:-1]  # "Grammys" is found as "Grammy"
            if kind == "acronym" and text.endswith("s") and text[:-1].isupper():
                text = text[:-1]  # "URLs" is found as "URL"
            pattern = (_number_pattern(text) if kind == "number" else _compound_pattern(text) if kind == "compound"
                       else _word_pattern(text, kind in STRONG))
            out[key] = Anchor(text, kind, pattern)

    for m in _CODE.finditer(question):
        if not _PLACEHOLDER.fullmatch(m.group(1).strip()):
            add(m.group(1).strip(), "identifier")
    rest = without_placeholders(_CODE.sub(" ", question))
    for m in _TOKEN.finditer(rest):
        opens = not rest[:m.start()].strip() or re.search(r"[.!?:]\s*$", rest[:m.start()]) is not None
        token = m.group(0).strip("./-")
        if _ABBREVIATION.fullmatch(token):
            continue
        if re.fullmatch(r"[vV]\d+(?:\.\d+)+", token):
            token = token[1:]  # "v2.0" is the version 2.0, which pages write without the "v"
        # "GraphQL-Endpunkt", "iCal-Adapter": a compound of a name and a word is judged by its parts;
        # so is a name with digits and a German noun ("x86-Server"). A one-letter head
        # ("X-Request-Id", "E-Mail") marks a header or a fixed term: kept whole.
        compound = ("-" in token and (not re.search(r"\d", token) or language == "de" and _NOUN_TAIL.search(token))
                    and token != token.lower() and not re.match(r"[A-Za-z]-", token))
        for i, part in enumerate(token.split("-") if compound else [token]):
            kind = _kind(part, language, opens and i == 0)
            if kind is not None:
                add(part, kind)
    return list(out.values())


def without_placeholders(text: str) -> str:
    """``text`` with the asker's placeholders (example domains, private and documentation
    addresses; see the module docstring) blanked out."""
    return _PLACEHOLDER.sub(" ", text)


def _kind(token: str, language: str, opens: bool) -> str | None:
    if not token:
        return None
    if _NUMBER.fullmatch(token):
        return "number"
    if re.match(r"[A-Za-z]-\w", token):
        return "identifier"
    if re.search(r"\w[./_]\w", token) or ("-" in token and (re.search(r"\d", token) or _CAMEL.search(token))):
        return "identifier"  # "Node.js", "max_delivery_attempts", "/api/v3", "E-4012"
    if "-" in token and token == token.lower():
        return "compound"  # "js-controller", "docker-compose", but also "sign-on", "real-time"
    if _CAMEL.fullmatch(token) or re.fullmatch(r"[A-Za-z]+\d+\w*|\d+[A-Za-z]+\w*", token):
        return "identifier"  # "GraphQL", "iCalReadTrigger", "CCU3", "v2", "4K"
    if _ACRONYM.fullmatch(token):
        return "acronym"
    if language == "en" and not opens and _CAPITALISED.fullmatch(token) and token.lower() not in _NOT_NAMES:
        return "name"
    return None


def missing_anchors(anchors: list[Anchor], text: str, kinds: tuple[str, ...] | None = None) -> list[Anchor]:
    """The anchors (of ``kinds``, None: all) that ``text`` does not contain."""
    folded = text.casefold()
    compact = _compact(folded) if any(a.kind not in STRONG for a in anchors) else None
    return [a for a in anchors if (kinds is None or a.kind in kinds) and not a.found_in(folded, compact)]


# "js-controller 5", "Node.js 12", "Raspberry Pi 5", "Ferrolink 3.0": a number right after a
# name says which one. A source that names js-controller and, elsewhere, a 5 does not name
# js-controller 5.
_NUMBERED = re.compile(r"(?<![\w.-])([A-Za-zÄÖÜäöüß][\w.-]*\w)\s+v?(\d+(?:\.\d+)*)(?:\.x)?(?![\w-]|\.\w)")
#: Words before a number that are not the name it numbers ("version 5", "Kapitel 5" is fine).
_NOT_NUMBERED = frozenset("""version versions release releases ver v ab bis seit since from to up than als and und or
oder in im am at on of the der die das den dem top nr no number nummer jahr jahre jahres year years anno""".split())
# A number followed by a unit counts something ("Super Bowl XXXIII 38 Jahre alt"): not a numbered name.
_UNIT_AFTER = re.compile(r"\s*(?:%|[a-zäöüß]*(?:jahr|year|tag|day|stunde|hour|minute|sekunde|second|monat|month|woche|"
                         r"week|prozent|percent|mal\b|times|menschen|people|[kmgt]i?b\b|bytes?))", re.IGNORECASE)
# Between the name and its number in the text: separators, "version"/"v", and up to three short
# words ("Node.js in der Version 12", "js-controller ab v5"). Lenient on purpose: a miss here
# refuses an answerable question.
_PAIR_GAP = r"(?:[\W_]+[a-zäöüß]{1,9}){0,3}[\W_]*v?"


def numbered_names(question: str) -> list[tuple[str, str]]:
    """The (name, number) pairs of ``question`` ("js-controller", "5"); not years, not "version 5"."""
    out = []
    text = _CODE.sub(" ", question)
    for m in _NUMBERED.finditer(text):
        name, number = m.group(1), m.group(2)
        low = name.casefold()
        if low in _NOT_NUMBERED or low in _NOT_NAMES or is_year(number):
            continue
        if low.endswith(("version", "versionen", "release")):
            continue  # "Adapterversion 3.4.0", "Firmware-Version 1.8": a version, as "version 5" is
        if _UNIT_AFTER.match(text, m.end()):
            continue
        if name == low and not re.search(r"[-.]", name):
            continue  # a plain lower-case word ("page 5", "step 2") names nothing
        out.append((name, number))
    return out


def pair_found(name: str, number: str, folded: str) -> bool:
    """Whether the case-folded text names ``name`` followed closely by ``number`` (5 also as 5.x, v5)."""
    loose = r"[\W_]*".join(re.escape(c) for c in _compact(name.casefold()))
    digits = r"\.".join(re.escape(p) for p in number.split("."))
    return re.search(r"(?<![^\W_])" + loose + _PAIR_GAP + r"(?<!\d)" + digits + r"(?!\d)", folded) is not None

