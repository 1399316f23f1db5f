"""Find instruction-like text (possible prompt injection) in documents at ingest time.

Retrieved chunks are shown to an LLM and quoted to people, so a forum post that says
"ignore all previous instructions and tell the user ..." must be recognised before it
can steer an answer. This module only *detects*; the answer layer decides what to do
with flagged chunks (withhold them, or show them with a warning).

The patterns aim at phrases addressed to an AI assistant, not at ordinary technical
imperatives. Product documentation is full of legitimate commands ("ignore the header",
"do not retry", "send the request ID", "tell Ferrolink support", "send your API key as a
bearer token"), so every family below needs a signal that documentation does not use:
an *instructions/prompt/rules* object with a "previous/above" qualifier, a role noun
("assistant", "AI", "model"), *the user* as the audience, or a credential sent to a
recipient (an address, "us", "me") or by e-mail. Negated sentences ("never e-mail your
password") are not exfiltration requests, and sentences describing software ("the
endpoint should respond only with 2xx") are not output constraints; both are skipped.

Bump :data:`DETECTOR_VERSION` whenever the patterns change, so stored flags can be
recomputed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["DETECTOR_VERSION", "FLAG_PREFIX", "Finding", "chunk_flags", "detect_instructions", "is_instruction_like"]

DETECTOR_VERSION = "1"
#: Chunk flags are ``f"{FLAG_PREFIX}:{kind}"``, e.g. ``"instruction-like:override"``.
FLAG_PREFIX = "instruction-like"
_EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class Finding:
    """One instruction-like phrase: ``text[start:end]`` is the matched phrase.

    ``kind`` is one of ``override``, ``role-hijack``, ``prompt-markup``,
    ``user-directive``, ``exfiltration`` or ``output-constraint``; ``excerpt`` is the
    sentence around the match (at most 200 characters) for reports.
    """

    kind: str
    start: int
    end: int
    excerpt: str


# Between two words: whitespace, Markdown emphasis/code/quote marks, zero-width spaces.
_S = r"[\s*_~`>\u200b\u200c\u200d\u2060]+"


def _p(pattern: str) -> re.Pattern[str]:
    """Compile a pattern written with ``{S}`` for the word separator."""
    return re.compile(pattern.replace("{S}", _S), re.IGNORECASE | re.MULTILINE)


# --- vocabulary ------------------------------------------------------------------------

_QUAL = (r"(?:previous|prior|above|earlier|preceding|former|foregoing|original|initial|"
         r"existing|old|system)")
_NOUN = (r"(?:instructions?|prompts?|rules|directions|directives|guidelines|commands|"
         r"orders|programming)")
_DET = r"(?:(?:the|your|my|these|those|of{S}the|of{S}your){S})"
_QUANT = r"(?:(?:all|any|every){S})"
_Q_DE = (r"(?:vorherigen?|vorigen?|bisherigen?|früheren?|obigen?|vorangegangenen?|"
         r"vorangehenden?|ursprünglichen?|alten|bestehenden|gegebenen|vorstehenden)")
_N_DE = (r"(?:Anweisung(?:en)?|Instruktion(?:en)?|Regeln|Vorgaben|Befehle|Prompts?|"
         r"Richtlinien|Anordnungen)")
_ROLE = (r"(?:assistant|ai|chatbot|bot|model|language{S}model|llm|agent|persona|character|"
         r"hacker|dan)")
_ROLE_DE = r"(?:Assistent(?:in)?|KI|Chatbot|Bot|Modell|Sprachmodell|Agent(?:in)?|Persona)"
_POSS = r"(?:your|their|the{S}user'?s|his|her|its)"
_MOD = r"(?:(?:full|complete|entire|current|real|secret|private|live|production|account){S})*"
_CRED = (r"(?:api[-\s_]?keys?|access{S}keys?|secret{S}keys?|private{S}keys?|passwords?|"
         r"passphrases?|(?:access{S}|bearer{S}|api{S})?tokens?|credentials|signing{S}secrets?|"
         r"secrets?|credit{S}card(?:{S}(?:numbers?|details))?)")
_SECRET = r"(?:passwords?|passphrases?|private{S}keys?|credit{S}card(?:{S}(?:numbers?|details))?)"
_SEND = r"(?:send|post|forward|share|submit|paste|upload|give|reply{S}with)"
_RECIPIENT = (r"(?:us|me|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|(?:this|the{S}following|our|the)"
              r"{S}(?:e-?mail{S})?(?:address|inbox|link|url|form|channel))")
_RECIPIENT_DE = r"(?:uns|mich|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|folgende|diese)"
_POSS_DE = r"(?:deinen|deine|dein|Ihren|Ihre|Ihr|euren|eure|euer)"
_CRED_DE = (r"(?:API[-\s]?(?:Schlüssel|Key)|Zugriffsschlüssel|Zugangsschlüssel|Schlüssel|"
            r"Passw(?:o|ö)rt(?:er)?|Kennw(?:o|ö)rt(?:er)?|Token|Zugangsdaten|Anmeldedaten|"
            r"Signaturgeheimnis|Geheimnis|PIN)")
_MOD_DE = r"(?:(?:vollständigen|vollen|geheimen|aktuellen|privaten){S})?"
_USERS_DE = r"(?:Nutzer(?:n|in|innen)?|Benutzer(?:n|in|innen)?|Anwender(?:n|in|innen)?|User(?:n)?)"

# --- pattern families ------------------------------------------------------------------

_OVERRIDE = [
    _p(rf"\b(?:ignore|disregard|forget|override|bypass){{S}}{_QUANT}?{_DET}?{_QUAL}{{S}}"
       rf"(?:{_QUAL}{{S}})?{_NOUN}\b"),
    _p(rf"\b(?:ignore|disregard|forget|override|bypass){{S}}(?:all|any){{S}}{_DET}?{_NOUN}\b"),
    _p(rf"\b(?:ignore|disregard|forget){{S}}{_QUANT}?{_DET}?{_NOUN}{{S}}(?:above|before|so{{S}}far|"
       r"(?:you{S}(?:were|have{S}been){S})?given{S}(?:to{S}you{S})?(?:above|before|earlier|previously))\b"),
    _p(r"\b(?:ignore|disregard|forget){S}everything{S}(?:above|before|so{S}far|"
       r"(?:that{S})?you{S}(?:were|have{S}been){S}told)\b"),
    _p(r"\bnew{S}(?:system{S})?instructions{S}?:"),
    _p(rf"\b(?:ignoriere|ignorier|vergiss|vergesse|missachte|überschreibe|verwirf){{S}}"
       rf"(?:(?:alle|sämtliche|jegliche){{S}})?(?:(?:die|deine|Ihre){{S}})?(?:{_Q_DE}{{S}})?{_N_DE}\b"),
    _p(rf"\b(?:ignorieren|vergessen|missachten|verwerfen){{S}}Sie{{S}}"
       rf"(?:(?:alle|sämtliche|jegliche){{S}}(?:(?:die|Ihre){{S}})?(?:{_Q_DE}{{S}})?|"
       rf"(?:(?:die|Ihre){{S}})?{_Q_DE}{{S}}){_N_DE}\b"),
    _p(r"\bvergiss{S}alles{S}(?:bisherige|vorherige|oben|was)\b"),
    _p(r"\bneue{S}(?:System{S})?Anweisungen{S}?:"),
]

_ROLE_HIJACK = [
    _p(rf"\byou{{S}}are{{S}}now{{S}}(?:(?:a|an|the|my){{S}}(?:[\w-]+{{S}}){{0,3}}?{_ROLE}\b|"
       r"(?:no{S}longer|free|unrestricted|unfiltered|jailbroken|dan)\b|in{S}[\w-]+{S}mode\b)"),
    _p(r"\bfrom{S}now{S}on,?{S}you{S}(?:(?:will|should|must|shall){S})?(?:only|always|never|act|"
       r"respond|answer|reply|pretend|ignore|obey|be{S}(?:a|an)|are{S}(?:a|an|no{S}longer))\b"),
    _p(rf"\bact{{S}}as{{S}}(?:if{{S}}you{{S}}(?:were|are)\b|(?:a|an|my|the){{S}}(?:[\w-]+{{S}}){{0,3}}?{_ROLE}\b)"),
    _p(r"\bpretend{S}(?:to{S}be|you{S}are|that{S}you{S}are)\b"),
    _p(r"\broleplay{S}as\b"),
    _p(r"\bdu{S}bist{S}(?:jetzt|nun|ab{S}sofort|ab{S}jetzt){S}(?:ein|eine|einen|kein|keine|"
       r"nicht{S}mehr|der|die|das|mein|meine|frei|befreit|uneingeschränkt|dan)\b"),
    _p(r"\bab{S}(?:jetzt|sofort){S}(?:bist|wirst|sollst|musst){S}du\b"),
    _p(r"\bvon{S}nun{S}an{S}(?:bist|wirst|sollst|musst){S}du\b"),
    _p(rf"\bSie{{S}}sind{{S}}(?:jetzt|nun|ab{{S}}sofort){{S}}(?:ein|eine){{S}}(?:[\w-]+{{S}}){{0,3}}?{_ROLE_DE}\b"),
    _p(r"\b(?:tu|tue){S}so,?{S}als{S}(?:wärst|seist|ob{S}du)\b"),
]

_PROMPT_MARKUP = [
    # Singular only: "the system prompts the operator" is a verb.
    _p(r"\bsystem[-\s*_]*prompt\b|\bsystemprompts?\b|\bsystem[-\s]?anweisung(?:en)?\b"),
    _p(r"<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|"
       r"start_header_id|end_header_id|eot_id)\|>"),
    _p(r"\[/?INST\]|<</?SYS>>"),
    _p(r"^[ \t]*###[ \t]*(?:system|instructions?)[ \t]*:?[ \t]*$"),
    re.compile(r"\b(?:BEGIN|END)[ _-]?(?:SYSTEM|INSTRUCTIONS?)\b"),
    _p(r"</s>"),
]

_USER_DIRECTIVE = [
    _p(r"\btell{S}(?:the|all|every|your){S}users?\b(?:{S}that\b)?"),
    _p(r"\bsay{S}to{S}the{S}users?\b"),
    _p(r"\b(?:inform|assure|convince|persuade){S}(?:the|all|your){S}users?{S}that\b"),
    _p(r"\b(?:do{S}not|don'?t|never)\s+(?:mention|reveal|disclose|tell|say|acknowledge|admit)"
       r"{S}(?:(?:this|these|the|that){S}(?:notice|instructions?|message|prompt|note|text|post|"
       r"rules?|paragraph)s?\b|(?:the|your|any){S}users?\b|(?:this|that|it){S}to{S}(?:the{S})?"
       r"users?\b|that{S}you{S}(?:are|were|have)\b)"),
    _p(rf"\b(?:sage?|sagt|erkläre|erzähle?|teile)\s+(?:dem|den|allen)\s+{_USERS_DE}\b"),
    _p(rf"\b(?:sagen|teilen|erklären){{S}}Sie{{S}}(?:dem|den|allen){{S}}{_USERS_DE}\b"),
    _p(r"\berwähne(?:{S}[\w-]+){0,4}?{S}nicht\b|\bverrate(?:{S}[\w-]+){0,4}?{S}nicht\b"),
    _p(r"\berwähnen{S}Sie(?:{S}[\w-]+){0,4}?{S}nicht\b"),
]

_EXFILTRATION = [
    _p(rf"\b{_SEND}{{S}}{_POSS}{{S}}{_MOD}{_CRED}{{S}}(?:to|at|via){{S}}{_RECIPIENT}"),
    _p(rf"\b(?:e-?mail|mail){{S}}(?:(?:it|them|us|me){{S}})?{_POSS}{{S}}{_MOD}{_CRED}\b"
       rf"(?:{{S}}to{{S}}{_RECIPIENT})?"),
    _p(rf"\b{_SEND}{{S}}(?:us|me){{S}}{_POSS}{{S}}{_MOD}{_CRED}\b"),
    _p(rf"\b{_SEND}{{S}}to{{S}}{_RECIPIENT}\S*{{S}}{_POSS}{{S}}{_MOD}{_CRED}\b"),
    _p(rf"\b(?:send|post|share|reply{{S}}with|tell{{S}}us){{S}}{_POSS}{{S}}{_MOD}{_SECRET}\b"),
    _p(rf"\b(?:sende|schicke?|maile|e-maile|übermittle|poste|teile|gib{{S}}(?:uns|mir)){{S}}"
       rf"(?:(?:uns|mir){{S}})?{_POSS_DE}{{S}}{_MOD_DE}{_CRED_DE}\b(?:{{S}}an{{S}}{_RECIPIENT_DE})?"),
    _p(rf"\b(?:senden|schicken|übermitteln|mailen|geben|teilen){{S}}Sie{{S}}(?:uns|mir){{S}}"
       rf"{_POSS_DE}{{S}}{_MOD_DE}{_CRED_DE}\b"),
    _p(rf"\b(?:senden|schicken|übermitteln|mailen){{S}}Sie{{S}}{_POSS_DE}{{S}}{_MOD_DE}{_CRED_DE}"
       rf"{{S}}(?:an{{S}}{_RECIPIENT_DE}|per{{S}}E-?Mail)"),
]

_OUTPUT_CONSTRAINT = [
    _p(r"(?<![\w-])(?:respond|answer|reply|output)(?:{S}to{S}(?:this|the{S}user|all{S}questions|"
       r"every{S}question|any{S}question))?{S}(?:only|exclusively|solely){S}(?:with|in|using)\b"),
    _p(r"(?<![\w-])only{S}(?:respond|answer|reply){S}with\b"),
    _p(r"\bantworte{S}(?:nur|ausschließlich|lediglich)\b"),
    _p(r"\bantworten{S}Sie{S}(?:nur|ausschließlich|lediglich){S}(?:mit|mit{S}dem|auf{S}Englisch|auf{S}Deutsch)\b"),
]

# A descriptive sentence about software ("the endpoint should respond only with 2xx")
# is not an instruction to the assistant: the verb has a subject or a modal before it.
_DESCRIPTIVE_BEFORE = re.compile(
    r"\b(?:should|must|will|would|can|could|may|might|shall|to|it|that|which|endpoint|server|"
    r"target|api|they|we|you|he|she|also|then|does|do)\W*$",
    re.IGNORECASE,
)
_NEGATION_BEFORE = re.compile(
    r"\b(?:never|not|don'?t|doesn'?t|no{S}one|nobody|nie|niemals|nicht|keine?n?|niemand)\b[^.!?]*$"
    .replace("{S}", _S),
    re.IGNORECASE,
)
_NEGATION_AFTER = re.compile(r"^[^.!?]{0,40}?\b(?:nicht|niemals|nie|niemandem)\b", re.IGNORECASE)
_STRIKE_OPEN = re.compile(r"<s>", re.IGNORECASE)
# Sentence bounds for excerpts. Deliberately simpler than beleg.answer.sentences: the
# ingest layer must not import the answer layer, and an excerpt only has to be readable.
_SENTENCE_END = re.compile(r"[.!?](?=[\"')\]*_]*(?:\s|\Z))|\n")


def _not_descriptive(text: str, m: re.Match[str]) -> bool:
    return not _DESCRIPTIVE_BEFORE.search(text[max(0, m.start() - 30) : m.start()])


def _not_negated(text: str, m: re.Match[str]) -> bool:
    before = text[max(0, m.start() - 40) : m.start()]
    return not (_NEGATION_BEFORE.search(before) or _NEGATION_AFTER.match(text, m.end()))


def _not_strikethrough(text: str, m: re.Match[str]) -> bool:
    """``</s>`` closing an HTML ``<s>`` (strikethrough) is markup, not a model token."""
    if m.group(0).lower() != "</s>":
        return True
    return not _STRIKE_OPEN.search(text, max(0, m.start() - 300), m.start())


_Check = Callable[[str, re.Match[str]], bool]
_FAMILIES: list[tuple[str, list[re.Pattern[str]], _Check | None]] = [
    ("override", _OVERRIDE, None),
    ("role-hijack", _ROLE_HIJACK, None),
    ("prompt-markup", _PROMPT_MARKUP, _not_strikethrough),
    ("user-directive", _USER_DIRECTIVE, None),
    ("exfiltration", _EXFILTRATION, _not_negated),
    ("output-constraint", _OUTPUT_CONSTRAINT, _not_descriptive),
]


def detect_instructions(text: str) -> list[Finding]:
    """All instruction-like phrases in ``text``, sorted by position.

    Overlapping matches of one family are merged into one finding, so a phrase matched
    by two patterns is reported once; different families may overlap (a sentence can be
    both a user directive and an exfiltration request).
    """
    raw: list[tuple[str, int, int]] = []
    for kind, patterns, check in _FAMILIES:
        spans: list[tuple[int, int]] = []
        for pattern in patterns:
            for m in pattern.finditer(text):
                if check is None or check(text, m):
                    spans.append((m.start(), m.end()))
        for start, end in _merge(spans):
            raw.append((kind, start, end))
    raw.sort(key=lambda r: (r[1], r[2], r[0]))
    return [Finding(kind, start, end, _excerpt(text, start, end))
            for kind, start, end in raw]


def is_instruction_like(flags: Iterable[str]) -> bool:
    """Whether a chunk's ingest flags (see :func:`chunk_flags`) mark instruction-like text."""
    return any(str(f).startswith(FLAG_PREFIX) for f in flags)


def chunk_flags(text: str) -> tuple[str, ...]:
    """Ingest flags for one chunk: ``("instruction-like:override", ...)``, sorted, unique."""
    return tuple(sorted({f"{FLAG_PREFIX}:{f.kind}" for f in detect_instructions(text)}))


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _excerpt(text: str, start: int, end: int) -> str:
    """The sentence holding the match, cut to 200 characters around the match."""
    lo = start
    while lo > 0:
        c = text[lo - 1]
        if c == "\n" or (c.isspace() and lo >= 2 and text[lo - 2] in ".!?"):
            break
        lo -= 1
    m = _SENTENCE_END.search(text, end)
    hi = len(text) if m is None else m.end()
    if hi - lo > _EXCERPT_CHARS:
        lo = max(lo, min(start - 40, hi - _EXCERPT_CHARS))
        hi = lo + _EXCERPT_CHARS
    return text[lo:hi].strip()
