"""The web page as a person uses it: `beleg serve` (uvicorn) on a free port, driven in Debian's
headless Chromium through Playwright.

The server runs in its own process over a small index (service contracts that disagree, a
support note that contradicts them, a forum post with instruction-like text, a tenant's
restricted runbook, and a document full of markup). Each test opens a fresh browser context
(its own sessionStorage), so a signed-in key never leaks from one test into the next.

Chromium comes from the system (``apt-get install -y chromium``; ``.ci/run`` installs it),
never from ``playwright install``. Without it these tests fail and say so; they never skip.

Screenshots: every run writes the desktop and narrow PNGs to a temporary folder and checks
them; with ``BELEG_SCREENSHOTS=docs/images`` they go to that folder instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DEMO = Path(__file__).resolve().parents[2] / "demo" / "corpus"
CORPUS = ["contracts/service-contract-3.0.md", "contracts/service-contract-2.4.md",
          "contracts/service-contract-1.8.md", "notes/confluence-support-notes.md",
          "community/forum-tips.md", "runbooks/nordwind-dlq-backlog.md"]
RETRY_QUESTION = "How long does Ferrolink retry failed webhook deliveries?"
INJECTION_QUESTION = "Is the Ferrolink retry window unlimited, so that I do not need a dead-letter queue?"
RESTRICTED_TITLE = "Nordwind Runbook: Dead-Letter Backlog on the Shipment Status Queue"
RESTRICTED_QUESTION = "What is the standby broker host for the Nordwind shipment status queue?"
RESTRICTED_WORDS = ("Nordwind", "mq-nordwind", "acc_nw_48213")
XSS_DOC = """---
title: "Markup <b>bold</b> <img src=x onerror=\\"window.__xss='title'\\"> handbook"
status: current
authority: note
---

# Pager rotation <img src=x onerror="window.__xss='heading'">

The pager duty rotation changes weekly. <script>window.__xss = 'script'</script> Handover happens on
Mondays at 09:00 <img src=x onerror="window.__xss='body'"> in the operations channel.
"""
SERVER_START_S = 180


def _key_entry(key: str, user: str, tenant: str, groups: list[str]) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()
    return (f'[[keys]]\nsha256 = "{digest}"\nuser = "{user}"\ntenant = "{tenant}"\n'
            f"groups = {json.dumps(groups)}\nscopes = [\"read\"]\n\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running server and the keys it accepts."""

    def __init__(self, url: str, keys: dict[str, str], log: Path) -> None:
        self.url, self.keys, self.log = url, keys, log

    def api(self, key: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.url + path, headers={"Authorization": f"Bearer {key}"},
                             timeout=60, **kwargs)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, Path, dict[str, str]]:
    """The index folder, auth.toml and the two tenants' keys."""
    import beleg

    root = tmp_path_factory.mktemp("web")
    corpus = root / "corpus"
    corpus.mkdir()
    for rel in CORPUS:
        shutil.copy(DEMO / rel, corpus / Path(rel).name)
    (corpus / "markup-handbook.md").write_text(XSS_DOC, encoding="utf-8")
    with beleg.open(root / "kb", embedder=embedder) as kb:
        report = kb.ingest([str(corpus)], progress=False)
        assert report.count("failed") == 0, report.failures
    keys = {"acme": "blg_" + secrets.token_urlsafe(24), "nordwind": "blg_" + secrets.token_urlsafe(24)}
    auth = root / "auth.toml"
    auth.write_text(_key_entry(keys["acme"], "alice", "acme", ["acme-ops"])
                    + _key_entry(keys["nordwind"], "nora", "nordwind", ["ops-nordwind"]), encoding="utf-8")
    return root / "kb", auth, keys


@contextmanager
def serve(site: tuple[Path, Path, dict[str, str]], *extra: str) -> Iterator[Server]:
    """`beleg serve` in its own process on a free port, until the block ends."""
    index, auth, keys = site
    port = _free_port()
    log = index.parent / f"server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "beleg", "serve", "--index", str(index), "--auth", str(auth),
                                 "--host", "127.0.0.1", "--port", str(port), *extra],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc, log)
        yield Server(url, keys, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def server(site: tuple[Path, Path, dict[str, str]]) -> Iterator[Server]:
    """The server with the offline (extractive) answerer."""
    with serve(site) as running:
        yield running


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"the server was not ready within {SERVER_START_S} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's Chromium with `apt-get install -y chromium` "
                    "(.ci/run does this as root); these tests never download a browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def new_page(browser: Any, server: Server) -> Iterator[Any]:
    """A factory of pages, each in its own context (its own sessionStorage and locale)."""
    contexts = []

    def make(locale: str = "en-US", width: int = 1280, height: int = 900, url: str | None = None) -> Any:
        ctx = browser.new_context(locale=locale, viewport={"width": width, "height": height})
        contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        page.errors = []
        page.on("pageerror", lambda err: page.errors.append(str(err)))
        page.goto((url or server.url) + "/")
        return page

    yield make
    for ctx in contexts:
        ctx.close()


def sign_in(page: Any, key: str) -> None:
    page.fill("#api-key", key)
    page.press("#api-key", "Enter")
    page.wait_for_selector("#workspace:not([hidden])")


def ask(page: Any, question: str, *, stream: bool = True) -> None:
    page.set_checked("#stream", stream)
    page.fill("#question", question)
    page.press("#question", "Enter")
    page.wait_for_selector("#verdicts li")


def search(page: Any, query: str) -> None:
    page.fill("#query", query)
    page.press("#query", "Enter")
    page.wait_for_selector("#results:not([hidden]) #hits li")


def highlighted(page: Any) -> dict[str, Any]:
    """The open document view: the marked text, where it starts in the shown text, the whole text,
    and whether the mark lies inside the visible part of its scrolling box."""
    page.wait_for_selector("#doc-view[open] mark")
    return page.evaluate("""() => {
        const box = document.getElementById('doc-text'), mark = box.querySelector('mark');
        const before = document.createRange();
        before.setStart(box, 0); before.setEndBefore(mark);
        const m = mark.getBoundingClientRect(), b = box.getBoundingClientRect();
        return {text: mark.textContent, start: before.toString().length, whole: box.textContent,
                visible: m.top >= b.top && m.top < b.bottom, marks: box.querySelectorAll('mark').length};
    }""")


def body_text(page: Any) -> str:
    return page.evaluate("() => document.body.innerText")


# ---------------------------------------------------------------- sign-in, ask, citations
def test_sign_in_ask_and_citation_opens_the_quote_highlighted(new_page: Any, server: Server) -> None:
    key = server.keys["acme"]
    page = new_page()
    sent: list[dict[str, str]] = []
    page.on("request", lambda r: sent.append({"url": r.url, "auth": r.headers.get("authorization", "")}))
    sign_in(page, key)
    ask(page, RETRY_QUESTION)

    expected = server.api(key, "POST", "/v1/ask", json={"question": RETRY_QUESTION}).json()
    first = expected["citations"][0]
    chip = page.locator(f"#answer-text button.chip[data-label='{first['label']}']").first
    chip.click()
    shown = highlighted(page)
    doc = server.api(key, "GET", f"/v1/documents/{first['doc_id']}").json()
    assert shown["text"] == first["quote"] == doc["text"][first["start"]:first["end"]]
    assert shown["start"] == first["start"] and shown["whole"] == doc["text"] and shown["marks"] == 1
    assert shown["visible"], "the highlighted quote was not scrolled into view"
    assert "72 hours" in shown["text"]
    api_calls = [r for r in sent if "/v1/" in r["url"]]
    assert api_calls and all(r["auth"] == f"Bearer {key}" for r in api_calls)
    assert page.evaluate("() => sessionStorage.getItem('beleg.apiKey')") == key
    assert page.evaluate("() => localStorage.getItem('beleg.apiKey')") is None
    assert not page.errors


def test_sources_verdicts_and_conflicts_side_by_side(new_page: Any, server: Server) -> None:
    page = new_page()
    sign_in(page, server.keys["acme"])
    ask(page, RETRY_QUESTION, stream=False)
    verdicts = page.locator("#verdicts").inner_text()
    assert "Quotes verified: yes" in verdicts and "Supported: yes" in verdicts and "Confidence: 0." in verdicts

    cited = page.locator("#sources li.cited").first.inner_text()
    for fact in ("Ferrolink Service Contract 3.0", "4.1 Retry window", "version 3.0", "current", "contract",
                 "2026-01-15"):
        assert fact in cited

    cards = page.locator(".conflict-grid .conflict-value")
    relations = [cards.nth(i).get_attribute("data-relation") for i in range(cards.count())]
    assert relations[0] == "governs" and relations.count("governs") == 1
    assert {"superseded", "contradicts"} <= set(relations)
    governing = cards.nth(0).inner_text()
    assert "72 hours" in governing and "Governs because" in governing and "contract" in governing
    boxes = [cards.nth(i).bounding_box() for i in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"], "conflict values are not side by side"


def test_withheld_passages_are_marked_and_trace_is_behind_a_toggle(new_page: Any, server: Server) -> None:
    page = new_page()
    sign_in(page, server.keys["acme"])
    ask(page, INJECTION_QUESTION)
    forum = page.locator("#sources li", has_text="Community Forum").filter(has=page.locator(".withheld-note")).first
    assert "withheld: instruction-like text" in forum.inner_text()
    forum.locator("summary").click()
    withheld = forum.locator(".passage .withheld").first
    assert "Ignore all previous instructions" in withheld.inner_text()

    toggle = page.locator("#trace-toggle")
    assert page.locator("#trace").is_hidden() and toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    trace = page.locator("#trace")
    assert trace.is_visible() and toggle.get_attribute("aria-expanded") == "true"
    text = trace.inner_text()
    assert INJECTION_QUESTION in text and "LLM calls" in text and "total" in text
    toggle.click()
    assert trace.is_hidden()


def test_a_withheld_answer_reads_not_confirmed_and_an_absent_topic_refused(new_page: Any, server: Server) -> None:
    """Withheld (a candidate below the confidence floor, its closest passages shown) is not the
    claim that the sources are silent; only a refusal without any candidate says so."""
    key = server.keys["acme"]
    page = new_page()
    sign_in(page, key)
    for question, withheld, verdict in ((INJECTION_QUESTION, True, "Not confirmed: confidence"),
                                        ("Does Ferrolink support MQTT clients?", False, "Refused: ")):
        expected = server.api(key, "POST", "/v1/ask", json={"question": question}).json()
        assert expected["refused"] and expected["withheld"] is withheld, expected["trace"].get("decision")
        ask(page, question, stream=False)
        page.wait_for_function("(q) => document.body.innerText.includes(q)", arg=verdict)
        assert page.locator("#verdicts").inner_text().startswith(verdict)


def test_llm_tokens_are_shown_as_they_arrive(new_page: Any, site: Any) -> None:
    """With an LLM, the answer's tokens appear one by one while the stream is open
    (aria-busy), then the verified answer replaces them with citation chips."""
    from beleg.query.self_query_llm import SYSTEM as SELF_QUERY_SYSTEM
    from beleg.testing import FakeOpenAIServer

    replies: list[str] = []

    def quote_s1(messages: Any) -> str:  # an answering model: S1's first sentence that names hours, quoted
        if messages[0].content == SELF_QUERY_SYSTEM:  # the server's LLM self-query pass: no constraints
            return "{}"
        m = re.search(r'<source label="S1"[^>]*>\n(.*?)\n</source>', messages[-1].content, re.DOTALL)
        sentences = re.findall(r"[^.\n]*\bhours\b[^.\n]*\.", m.group(1)) if m else []
        reply = f'"{sentences[0].strip()}" [S1]' if sentences else "The sources do not answer this."
        replies.append(reply)
        return reply

    with FakeOpenAIServer(responder=quote_s1) as llm, \
            serve(site, "--llm", "openai-compatible:answerer", "--llm-base-url", llm.base_url) as running:
        page = new_page(url=running.url)
        sign_in(page, running.keys["acme"])
        page.evaluate("""() => {
            const box = document.getElementById('answer-text');
            window.__added = [];
            new MutationObserver((records) => {
                for (const r of records) for (const n of r.addedNodes)
                    if (n.nodeType === 3) window.__added.push({text: n.data, busy: box.getAttribute('aria-busy')});
            }).observe(box, {childList: true});
        }""")
        ask(page, RETRY_QUESTION)
        added = page.evaluate("() => window.__added")
    streamed = [a["text"] for a in added if a["busy"] == "true"]
    assert len(streamed) > 1, added  # several tokens, each shown on its own
    assert "".join(streamed) == replies[0] and "[S1]" in replies[0]
    assert page.locator("#verdicts").inner_text().startswith("Quotes verified: yes"), replies
    chip = page.locator("#answer-text button.chip[data-label='S1']")
    assert chip.count() == 1 and page.locator("#answer-text").inner_text() == replies[0].replace("[S1]", "S1")
    assert page.locator("#answer-text").get_attribute("aria-busy") is None


# ---------------------------------------------------------------- German, keyboard, narrow
def test_german_by_default_from_the_browser_language_and_switchable(new_page: Any, server: Server) -> None:
    page = new_page(locale="de-DE")
    assert page.locator("#sign-in button[type=submit]").inner_text() == "Anmelden"
    assert page.evaluate("() => document.documentElement.lang") == "de"
    sign_in(page, server.keys["acme"])
    ask(page, RETRY_QUESTION, stream=False)
    assert "Zitate geprüft: ja" in page.locator("#verdicts").inner_text()
    assert page.locator("#ask-form button[type=submit]").inner_text() == "Fragen"
    page.select_option("#lang", "en")
    assert page.locator("#ask-form button[type=submit]").inner_text() == "Ask"
    assert "Quotes verified: yes" in page.locator("#verdicts").inner_text()  # the shown answer re-renders
    page.reload()
    assert page.locator("#ask-form button[type=submit]").inner_text() == "Ask"  # the choice is kept


def test_keyboard_alone_signs_in_asks_opens_and_closes_a_citation(new_page: Any, server: Server) -> None:
    page = new_page()

    def focused() -> Any:
        return page.evaluate("() => document.activeElement.id || document.activeElement.className")

    assert focused() == "api-key"
    page.keyboard.type(server.keys["acme"])
    page.keyboard.press("Enter")
    page.wait_for_selector("#workspace:not([hidden])")
    assert focused() == "question"
    page.keyboard.type(RETRY_QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_selector("#verdicts li")
    order = []
    for _ in range(12):
        page.keyboard.press("Tab")
        order.append(focused())
        if order[-1] == "chip":
            break
    assert order[-1] == "chip", f"Tab never reached a citation chip: {order}"
    assert order == ["ask-button", "stream", "query", "search-button", "chip"], order  # then the answer's chips
    chip_label = page.evaluate("() => document.activeElement.dataset.label")
    page.keyboard.press("Enter")
    shown = highlighted(page)
    assert shown["text"] and page.evaluate("() => document.activeElement.tagName") == "MARK"
    page.keyboard.press("Escape")
    page.wait_for_selector("#doc-view:not([open])", state="attached")
    assert page.evaluate("() => document.activeElement.dataset.label") == chip_label  # focus returns to the chip


def test_readable_on_a_narrow_screen(new_page: Any, server: Server) -> None:
    page = new_page(width=375, height=740)
    sign_in(page, server.keys["acme"])
    ask(page, RETRY_QUESTION)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    cards = page.locator(".conflict-grid .conflict-value")
    first, second = cards.nth(0).bounding_box(), cards.nth(1).bounding_box()
    assert second["y"] > first["y"] and first["x"] + first["width"] <= 375  # stacked, inside the screen
    page.locator("#answer-text button.chip").first.click()
    assert highlighted(page)["visible"]
    box = page.locator("#doc-view").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 375


# ---------------------------------------------------------------- tenants and hostile text
def test_other_tenants_key_never_sees_the_restricted_document(new_page: Any, server: Server) -> None:
    owner = new_page()
    sign_in(owner, server.keys["nordwind"])
    search(owner, "Nordwind dead-letter backlog shipment status queue")
    restricted = owner.locator("#hits li", has_text=RESTRICTED_TITLE).first
    doc_id = restricted.get_attribute("data-doc")  # the control: the owner's key finds it through the page
    assert doc_id

    page = new_page()
    sign_in(page, server.keys["acme"])
    search(page, "Nordwind dead-letter backlog shipment status queue")
    hits = page.locator("#hits").inner_text()
    assert all(word not in hits for word in RESTRICTED_WORDS), hits
    for stream in (True, False):
        ask(page, RESTRICTED_QUESTION, stream=stream)
        shown = page.locator("#answer").inner_text()
        # A refusal may name the asker's own words ("no retrieved source mentions Nordwind",
        # decided over the sources they may read); nothing of the restricted document may show.
        asked = RESTRICTED_QUESTION.casefold()
        assert all(word not in shown for word in RESTRICTED_WORDS if word.casefold() not in asked), shown
        assert "mq-nordwind" not in shown.casefold() and "acc_nw_48213" not in shown, shown
    page.goto(f"{server.url}/#doc={doc_id}&start=0&end=40")
    page.wait_for_selector("#error:not([hidden])")
    assert not page.locator("#doc-view").evaluate("d => d.open")
    # The page still shows the last refusal, which may name the asker's own words (above).
    assert all(word not in body_text(page) for word in RESTRICTED_WORDS if word.casefold() not in asked)

    owner.goto(f"{server.url}/#doc={doc_id}&start=0&end=40")  # the same link works for the owner
    assert "Nordwind" in highlighted(owner)["whole"]


def test_document_with_markup_renders_as_text(new_page: Any, server: Server) -> None:
    page = new_page()
    sign_in(page, server.keys["acme"])
    search(page, "pager duty rotation handover")
    hit = page.locator("#hits li", has_text="handbook").first
    assert "<img src=x onerror" in hit.inner_text() and "<b>bold</b>" in hit.inner_text()
    hit.locator("button").click()
    shown = highlighted(page)
    # A <script> is no text a reader sees, so the Markdown reader blanked it (docs/security.md);
    # the markup a reader does see is shown as text, never run.
    assert "window.__xss = 'script'" not in shown["whole"]
    assert "<img src=x onerror=\"window.__xss='body'\">" in shown["whole"]
    assert page.locator("#doc-text img, #doc-text script, #hits img, #hits script, #hits b").count() == 0
    page.keyboard.press("Escape")
    ask(page, "When does the pager rotation handover happen?")
    assert page.locator("#answer img, #answer script").count() == 0
    page.wait_for_timeout(300)  # an onerror handler would have run by now
    assert page.evaluate("() => window.__xss") is None
    assert not page.errors


def test_wrong_key_is_refused_with_a_message(new_page: Any, server: Server) -> None:
    page = new_page()
    page.fill("#api-key", "blg_not-a-key")
    page.press("#api-key", "Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "not accepted" in page.locator("#error").inner_text()
    assert page.locator("#workspace").is_hidden()
    assert page.evaluate("() => sessionStorage.getItem('beleg.apiKey')") is None


def test_key_kept_for_the_tab_and_signed_out_when_no_longer_accepted(new_page: Any, server: Server) -> None:
    page = new_page()
    sign_in(page, server.keys["acme"])
    page.reload()  # the same tab keeps the key
    page.wait_for_selector("#workspace:not([hidden])")
    other_tab = page.context.browser.new_context().new_page()  # a new session has none
    other_tab.goto(server.url + "/")
    assert other_tab.locator("#workspace").is_hidden() and other_tab.locator("#sign-in").is_visible()
    other_tab.context.close()

    ask(page, RETRY_QUESTION, stream=False)
    # The key is revoked while the page is open: the next call is a 401 and the page signs out.
    page.route("**/v1/search", lambda route: route.fulfill(
        status=401, content_type="application/json",
        body=json.dumps({"error": {"type": "unauthorized", "message": "unknown API key"}})))
    page.fill("#query", "retry window")
    page.press("#query", "Enter")
    page.wait_for_selector("#sign-in:not([hidden])")
    assert "not accepted (unknown API key)" in page.locator("#error").inner_text()
    shown = page.evaluate("""() => ['answer-text', 'sources', 'conflicts', 'hits']
        .map((id) => document.getElementById(id).childNodes.length).concat([document.getElementById('question').value])""")
    assert shown == [0, 0, 0, 0, ""], shown  # nothing this key was shown stays for the next one
    assert page.locator("#workspace").is_hidden()
    assert page.evaluate("() => sessionStorage.getItem('beleg.apiKey')") is None
    page.evaluate("() => sessionStorage.setItem('beleg.apiKey', 'blg_stale')")  # a stored key the server refuses
    page.unroute("**/v1/search")
    page.reload()
    page.wait_for_selector("#error:not([hidden])")
    assert page.locator("#workspace").is_hidden() and page.evaluate("() => sessionStorage.length") == 0


# ---------------------------------------------------------------- screenshots for the docs
def test_screenshots_desktop_and_narrow(new_page: Any, server: Server, tmp_path: Path) -> None:
    out = Path(os.environ.get("BELEG_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    for name, width, height, full in (("web-desktop", 1280, 1000, True), ("web-narrow", 375, 812, False)):
        page = new_page(width=width, height=height)
        sign_in(page, server.keys["acme"])
        ask(page, RETRY_QUESTION, stream=False)
        page.locator("#question").blur()  # no focus ring in the pictures
        page.screenshot(path=str(out / f"{name}.png"), full_page=full)
        page.locator("#answer-text button.chip").first.click()
        highlighted(page)
        page.screenshot(path=str(out / f"{name}-document.png"))
    for png in out.glob("web-*.png"):
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, png
