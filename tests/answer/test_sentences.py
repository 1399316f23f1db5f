from __future__ import annotations

import json
from pathlib import Path

import pytest

from beleg.sentences import Span, sentence_containing, split_sentences

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "demo" / "corpus"
XQUAD = Path(__file__).resolve().parents[1] / "data" / "xquad"


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def assert_exact(text: str, spans: list[Span]) -> None:
    last_end = 0
    for s in spans:
        assert text[s.start : s.end] == s.text, s
        assert s.text == s.text.strip() and s.text, s
        assert s.start >= last_end, "spans overlap or are out of order"
        assert s.kind in {"sentence", "heading", "list-item", "table-row", "code"}
        last_end = s.end


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Retries last 72 hours. After that, messages move.", ["Retries last 72 hours.", "After that, messages move."]),
        ("Use e.g. the batch API. It is faster.", ["Use e.g. the batch API.", "It is faster."]),
        ("See i.e. Dr. Smith vs. Mr. Jones etc. for details.", ["See i.e. Dr. Smith vs. Mr. Jones etc. for details."]),
        ("Refer to No. 5 of the list. Done.", ["Refer to No. 5 of the list.", "Done."]),
        ("The answer is no. Then we stop.", ["The answer is no.", "Then we stop."]),
        ("Ferrolink 1.8 was released. Uptime was 99.95 percent.", ["Ferrolink 1.8 was released.", "Uptime was 99.95 percent."]),
        ("Der Preis beträgt 3,50 €. Danach gilt die Liste.", ["Der Preis beträgt 3,50 €.", "Danach gilt die Liste."]),
        ("Gültig ab dem 15. Januar 2026. Sie ersetzt Fassung 1.", ["Gültig ab dem 15. Januar 2026.", "Sie ersetzt Fassung 1."]),
        ("Die Rechnung kommt am 3. Werktag des Monats.", ["Die Rechnung kommt am 3. Werktag des Monats."]),
        ("Im 19. Jahrhundert wuchs die Stadt. Dann kam der Krieg.", ["Im 19. Jahrhundert wuchs die Stadt.", "Dann kam der Krieg."]),
        ("Die 2., 3. und 4. Zeitachse fehlen.", ["Die 2., 3. und 4. Zeitachse fehlen."]),
        ("Das gilt z. B. für Lublin. Auch z.B. Krakau, d. h. alle.", ["Das gilt z. B. für Lublin.", "Auch z.B. Krakau, d. h. alle."]),
        ("Preise gelten bzw. ca. 5 Tage usw. und Nr. 4 inkl. Steuer, ggf. u. a. nach Abs. 2 auf S. 7.",
         ["Preise gelten bzw. ca. 5 Tage usw. und Nr. 4 inkl. Steuer, ggf. u. a. nach Abs. 2 auf S. 7."]),
        ("Call `client.send(). Then` twice. Next sentence.", ["Call `client.send(). Then` twice.", "Next sentence."]),
        ("Open https://api.ferrolink.example/api/v3. Then call /api/v3/queues. Done.",
         ["Open https://api.ferrolink.example/api/v3.", "Then call /api/v3/queues.", "Done."]),
        ("Edit config.yaml in /etc/beleg. Restart.", ["Edit config.yaml in /etc/beleg.", "Restart."]),
        ("Wait... Then go. Really?! Yes!", ["Wait... Then go.", "Really?!", "Yes!"]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("Set it to **72 hours.** The default is 24.", ["Set it to **72 hours.**", "The default is 24."]),
        ("Born in 1870. The theatre closed.", ["Born in 1870.", "The theatre closed."]),
        ("J. R. R. Tolkien wrote it. It sold well.", ["J. R. R. Tolkien wrote it.", "It sold well."]),
        ('It is 72 hours: "Retries last 72 hours." [S1] Next one. [S2, S3]',
         ['It is 72 hours: "Retries last 72 hours." [S1]', "Next one. [S2, S3]"]),
        ("Founded in 1870.[1] It grew.", ["Founded in 1870.[1]", "It grew."]),
    ],
)
def test_tricky_sentences(text: str, expected: list[str]) -> None:
    spans = split_sentences(text)
    assert_exact(text, spans)
    assert [s.text for s in spans] == expected


def test_markdown_structure() -> None:
    text = (
        "---\ntitle: X\n---\n\n"
        "# Limits *and* plans #\n\n"
        "Intro sentence one. Intro two\ncontinues here.\n\n"
        "- first item. Second sentence in item\n"
        "  continued on the next line.\n"
        "* star item\n"
        "1. numbered item\n"
        "> Posted by **someone**\n\n"
        "> Quoted line one.\n> Quoted line two.\n\n"
        "| Plan | Rate |\n|---|:---:|\n| Team | 250 |\n\n"
        "```bash\ncurl -X POST https://x. Example\n```\n\n"
        "***\n\nLast line.\n"
    )
    spans = split_sentences(text)
    assert_exact(text, spans)
    got = [(s.kind, s.text) for s in spans]
    assert got == [
        ("heading", "Limits *and* plans"),
        ("sentence", "Intro sentence one."),
        ("sentence", "Intro two\ncontinues here."),
        ("list-item", "first item."),
        ("list-item", "Second sentence in item\n  continued on the next line."),
        ("list-item", "star item"),
        ("list-item", "numbered item"),
        ("sentence", "Posted by **someone**"),
        ("sentence", "Quoted line one."),
        ("sentence", "Quoted line two."),
        ("table-row", "| Plan | Rate |"),
        ("table-row", "| Team | 250 |"),
        ("code", "```bash\ncurl -X POST https://x. Example\n```"),
        ("sentence", "Last line."),
    ]


def test_blank_line_ends_sentence_and_date_line_is_not_a_list() -> None:
    text = "No full stop here\n\nNew paragraph\n15. Januar 2026 ist der Stichtag."
    assert texts(text) == ["No full stop here", "New paragraph\n15. Januar 2026 ist der Stichtag."]


def test_crlf_line_endings() -> None:
    text = "# Title\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n\r\nOne. Two.\r\n"
    spans = split_sentences(text)
    assert_exact(text, spans)
    assert [s.text for s in spans] == ["Title", "| a | b |", "| 1 | 2 |", "One.", "Two."]


def test_unclosed_fence_runs_to_end() -> None:
    text = "Before.\n\n```\ncode line. Another\nmore"
    spans = split_sentences(text)
    assert_exact(text, spans)
    assert spans[-1].kind == "code" and spans[-1].text.endswith("more")


def test_empty_and_whitespace() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n\t ") == []


def test_sentence_containing() -> None:
    text = "- First item. Second one.\n\nPara here."
    s = sentence_containing(text, text.index("Second"))
    assert s is not None and s.text == "Second one." and s.kind == "list-item"
    assert sentence_containing(text, 0) is None  # the list marker
    assert sentence_containing(text, len(text)) is None
    last = sentence_containing(text, len(text) - 1)
    assert last is not None and last.text == "Para here."


@pytest.mark.parametrize("path", sorted(p for p in CORPUS.rglob("*") if p.is_file()), ids=lambda p: p.name)
def test_offsets_exact_over_demo_corpus(path: Path) -> None:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    spans = split_sentences(text)
    assert spans
    assert_exact(text, spans)


def test_demo_contract_sentences() -> None:
    with open(CORPUS / "contracts" / "servicevertrag-3.0.md", encoding="utf-8") as fh:
        text = fh.read()
    found = texts(text)
    assert "Dies ist Fassung 2 des Vertrags, gültig ab dem 15. Januar 2026." in found
    assert "In Ferrolink 2.4 lag die Grenze bei 256 KB." in found
    assert "| Team | 250 |" in found
    assert not any(t.startswith("|---") for t in found)
    assert "5.2 Anfrageraten" in found


@pytest.mark.parametrize("language", ["en", "de"])
def test_xquad_offsets_and_answer_containment(language: str) -> None:
    path = XQUAD / f"xquad.dev.{language}.json"
    assert path.exists(), f"XQuAD dev data is expected at {path} (shipped in the repository under tests/data/xquad)"
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    inside = total = 0
    for article in data["data"]:
        for para in article["paragraphs"]:
            context = para["context"]
            spans = split_sentences(context)
            assert_exact(context, spans)
            for qa in para["qas"]:
                for answer in qa["answers"]:
                    start = answer["answer_start"]
                    end = start + len(answer["text"])
                    assert context[start:end] == answer["text"]
                    total += 1
                    inside += any(s.start <= start and end <= s.end for s in spans)
    share = inside / total
    assert share >= 0.97, f"{language}: {inside}/{total} = {share:.4f} of gold answers inside one sentence"
