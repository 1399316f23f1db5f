"""The ioBroker realdocs benchmark: its corpus selection rule, its gold-set checker and its
"verified but wrong" count, on a tiny git repository built here (no network, no model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "realdocs"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import check_gold  # noqa: E402
import fetch_contao  # noqa: E402
import fetch_iobroker  # noqa: E402
import fetch_mailcow  # noqa: E402
import fetch_paperless  # noqa: E402
import pinned_git  # noqa: E402
import realdocs_quality  # noqa: E402

LONG = "Text über ioBroker. " * 20  # well over MIN_BODY_CHARS
STUB = "# Blockly\n\n?> ***Dies ist ein Platzhalter***.\n   Hilf mit bei ioBroker und erweitere diesen Artikel.\n"
UPSTREAM = {
    "docs/de/README.md": f"---\ntitle: Start\n---\n# ioBroker\n\n{LONG}\n",
    "docs/en/README.md": f"---\ntitle: Start\ntranslatedFrom: de\nhash: abc\n---\n# ioBroker\n\n{LONG}\n",
    "docs/de/config/cli.md": f"---\ntitle: CLI\nlastChanged: 16.07.2019\n---\n# Konsole\n\n## iobroker upload\n{LONG}\n",
    "docs/de/logic/blockly.md": f"---\ntitle: Logik\n---\n{STUB}",
    # A long page with a placeholder box in it is kept.
    "docs/de/install/nodejs.md": f"---\ntitle: Node\n---\n{STUB}\n## Debian\n{LONG * 3}\n",
    "docs/de/dev2/other.md": f"---\ntitle: not a core section\n---\n# X\n{LONG}\n",
    # Adapter written in English, machine-translated to German (bot front matter is not YAML).
    "docs/en/adapterref/iobroker.ping/README.md": (
        f"---\ntitle: ioBroker.ping\n---\n# PING Adapter\n{LONG}\n## Known Issues\n* install `iputils-ping`\n\n"
        "## Changelog\n### 1.5.0\n* fixed everything\n```\n# not a heading\n```\n### 1.4.0\n* more\n\n"
        "## License\nMIT\n"),
    "docs/de/adapterref/iobroker.ping/README.md": f"---\ntranslatedFrom: en\ntitle: TR: ioBroker.ping\n---\n# PING\n{LONG}\n",
    "docs/en/adapterref/iobroker.notlisted/README.md": f"---\ntitle: x\n---\n# X\n{LONG}\n",
    "docs/en/adapterref/iobroker.ping/docs/extra.md": f"---\ntitle: x\n---\n# X\n{LONG}\n",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str]) -> str:
    """A git repository at ``repo`` holding ``files`` in one commit; that commit's id."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture()
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(fetch_iobroker, "COMMIT", _commit(tmp_path / "upstream", UPSTREAM))
    return tmp_path / "upstream" / ".git"


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_selection_rule(upstream: Path, tmp_path: Path):
    out = tmp_path / "corpus"
    manifest = fetch_iobroker.materialise(upstream, out)
    files = sorted(p["path"] for p in manifest["pages"])
    assert files == ["de/README.md", "de/config/cli.md", "de/install/nodejs.md", "en/README.md",
                     "en/adapterref/iobroker.ping/README.md"]
    skipped = manifest["skipped"]
    assert skipped["docs/de/logic/blockly.md"] == "placeholder page"
    assert skipped["docs/de/adapterref/iobroker.ping/README.md"] == "machine translation from en"
    assert manifest["commit"] == fetch_iobroker.COMMIT


def test_front_matter_tags_language_and_keeps_the_body(upstream: Path, tmp_path: Path):
    out = tmp_path / "corpus"
    fetch_iobroker.materialise(upstream, out)
    meta = _front_matter(out / "en/README.md")
    assert meta["language"] == "en" and meta["product"] == "iobroker" and meta["translatedFrom"] == "de"
    assert "hash" not in meta and meta["upstream_path"] == "docs/en/README.md"
    cli = _front_matter(out / "de/config/cli.md")
    assert cli["lastChanged"] == "16.07.2019" and cli["language"] == "de" and cli["section"] == "config"
    body = (out / "de/config/cli.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body.lstrip("\n") == UPSTREAM["docs/de/config/cli.md"].split("---\n", 2)[2]


def test_adapter_page_loses_its_changelog_but_not_what_follows(upstream: Path, tmp_path: Path):
    out = tmp_path / "corpus"
    fetch_iobroker.materialise(upstream, out)
    page = (out / "en/adapterref/iobroker.ping/README.md").read_text(encoding="utf-8")
    assert _front_matter(out / "en/adapterref/iobroker.ping/README.md")["adapter"] == "ping"
    assert "iputils-ping" in page and "## License\nMIT" in page
    assert "Changelog" not in page and "fixed everything" not in page and "# not a heading" not in page


def test_bot_front_matter_that_is_not_yaml_is_read_line_by_line():
    meta, body = fetch_iobroker.split_front_matter("---\ntranslatedFrom: en\ntitle: TR: ioBroker.x\n---\n# X\n")
    assert meta == {"translatedFrom": "en", "title": "TR: ioBroker.x"} and body == "# X\n"


def test_ensure_corpus_reuses_a_folder_of_the_same_commit(upstream: Path, tmp_path: Path):
    out = tmp_path / "corpus"
    pinned_git.ensure_corpus(fetch_iobroker, out, upstream)
    marker = out / "de/README.md"
    marker.write_text("edited", encoding="utf-8")
    pinned_git.ensure_corpus(fetch_iobroker, out, upstream)
    assert marker.read_text(encoding="utf-8") == "edited"


def test_a_git_dir_without_the_commit_is_one_clear_error(upstream: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(fetch_iobroker, "COMMIT", "0" * 40)
    with pytest.raises(pinned_git.FetchError, match="does not contain commit 0000"):
        fetch_iobroker.materialise(upstream, tmp_path / "corpus")


def test_contao_selection_rule_keeps_both_languages_of_manual_pages(tmp_path: Path, monkeypatch):
    repo = tmp_path / "contao"
    pages = {
        "docs/manual/installation/_index.de.md": f"---\ntitle: Installation\nweight: 3\n---\n{LONG}\n",
        "docs/manual/installation/_index.en.md": f"---\ntitle: Installation\naliases: [/x/]\n---\n{LONG}\n",
        "docs/manual/layout/_index.en.md": "---\ntitle: Layout\n---\n{{% children %}}\n",  # a bare index
        "docs/dev/reference/hooks.en.md": f"---\ntitle: Hooks\n---\n{LONG}\n",  # developer docs: not the manual
        "docs/manual/README.md": f"{LONG}\n",  # no language in the name
    }
    monkeypatch.setattr(fetch_contao, "COMMIT", _commit(repo, pages))
    out = tmp_path / "corpus"
    manifest = fetch_contao.materialise(repo / ".git", out)
    assert sorted(p["path"] for p in manifest["pages"]) == ["de/installation/_index.md", "en/installation/_index.md"]
    assert manifest["skipped"] == {"docs/manual/layout/_index.en.md": "under 200 characters of text"}
    meta = _front_matter(out / "de/installation/_index.md")
    assert meta == {"title": "Installation", "language": "de", "product": "contao", "section": "installation",
                    "upstream_path": "docs/manual/installation/_index.de.md", "upstream_commit": fetch_contao.COMMIT}
    body = (out / "en/installation/_index.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body.lstrip("\n") == f"{LONG}\n"


def test_paperless_selection_rule_takes_the_docs_pages_but_not_the_changelog(tmp_path: Path, monkeypatch):
    pages = {"docs/setup.md": f"# Setup\n\n{LONG}\n", "docs/changelog.md": f"# Changelog\n\n{LONG}\n",
             "docs/assets/extra.md": f"# Extra\n\n{LONG}\n", "src/README.md": f"{LONG}\n"}
    monkeypatch.setattr(fetch_paperless, "COMMIT", _commit(tmp_path / "paperless", pages))
    manifest = fetch_paperless.materialise(tmp_path / "paperless" / ".git", tmp_path / "corpus")
    assert [p["path"] for p in manifest["pages"]] == ["en/setup.md"]
    meta = _front_matter(tmp_path / "corpus" / "en/setup.md")
    assert meta["title"] == "Setup" and meta["language"] == "en" and meta["product"] == "paperless-ngx"
    body = (tmp_path / "corpus" / "en/setup.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body.lstrip("\n") == pages["docs/setup.md"]


def test_mailcow_selection_rule_takes_both_languages_by_their_suffix(tmp_path: Path, monkeypatch):
    pages = {"docs/getstarted/install.de.md": f"# Installation von mailcow\n\n{LONG}\n",
             "docs/getstarted/install.en.md": f"---\ntitle: Install\n---\n{LONG}\n",
             "docs/manual-guides/Dovecot/u_e-dovecot-fts.en.md": f"{LONG}\n",  # no heading: the file name
             "docs/index.md": f"# No language\n\n{LONG}\n", "includes/abbreviations.md": f"{LONG}\n",
             "docs/assets/notes.fr.md": f"# Pas ici\n\n{LONG}\n"}
    monkeypatch.setattr(fetch_mailcow, "COMMIT", _commit(tmp_path / "mailcow", pages))
    manifest = fetch_mailcow.materialise(tmp_path / "mailcow" / ".git", tmp_path / "corpus")
    assert [p["path"] for p in manifest["pages"]] == [
        "de/getstarted/install.md", "en/getstarted/install.md", "en/manual-guides/Dovecot/u_e-dovecot-fts.md"]
    assert manifest["by_language"] == {"de": 1, "en": 2}
    meta = _front_matter(tmp_path / "corpus" / "de/getstarted/install.md")
    assert meta == {"title": "Installation von mailcow", "language": "de", "product": "mailcow",
                    "upstream_path": "docs/getstarted/install.de.md", "upstream_commit": fetch_mailcow.COMMIT}
    assert _front_matter(tmp_path / "corpus" / "en/getstarted/install.md")["title"] == "Install"
    assert _front_matter(tmp_path / "corpus" / "en/manual-guides/Dovecot/u_e-dovecot-fts.md")["title"] == \
        "u_e-dovecot-fts"
    body = (tmp_path / "corpus" / "de/getstarted/install.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body.lstrip("\n") == pages["docs/getstarted/install.de.md"]


# ---------------------------------------------------------------------- gold checker
def _gold(tmp_path: Path, corpus: Path, questions: list[dict]) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "corpus": str(corpus), "questions": questions},
                                   allow_unicode=True), encoding="utf-8")
    return path


def _padding(n: int) -> list[dict]:
    return [{"id": f"u{i}", "question": f"Is there X{i}?", "language": "en" if i % 2 else "de",
             "type": "unanswerable", "relevant": []} for i in range(n)]


def test_gold_checker_accepts_strings_copied_from_the_page(upstream: Path, tmp_path: Path, monkeypatch):
    corpus = tmp_path / "corpus"
    fetch_iobroker.materialise(upstream, corpus)
    monkeypatch.setattr(check_gold, "MIN_QUESTIONS", 2)
    ok = {"id": "a", "question": "What to install when ping fails?", "language": "de", "type": "cross-lingual",
          "relevant": [{"doc": "en/adapterref/iobroker.ping/README.md", "section": "Known Issues", "grade": 2}],
          "answer": ["iputils-ping"]}
    problems, _ = check_gold.check(_gold(tmp_path, corpus, [ok, *_padding(10)]))
    assert problems == []


def test_gold_checker_finds_wrong_strings_sections_and_false_cross_lingual(upstream: Path, tmp_path: Path,
                                                                          monkeypatch):
    corpus = tmp_path / "corpus"
    fetch_iobroker.materialise(upstream, corpus)
    monkeypatch.setattr(check_gold, "MIN_QUESTIONS", 2)
    typo = {"id": "t", "question": "?", "language": "en", "type": "fact",
            "relevant": [{"doc": "en/adapterref/iobroker.ping/README.md", "grade": 2}], "answer": ["iputil-ping"]}
    section = {"id": "s", "question": "?", "language": "en", "type": "fact",
               "relevant": [{"doc": "en/adapterref/iobroker.ping/README.md", "section": "Nope", "grade": 2}],
               "answer": ["iputils-ping"]}
    same_language = {"id": "c", "question": "?", "language": "en", "type": "cross-lingual",
                     "relevant": [{"doc": "en/adapterref/iobroker.ping/README.md", "grade": 2}],
                     "answer": ["iputils-ping"]}
    answered = {"id": "u", "question": "?", "language": "en", "type": "unanswerable", "relevant": [],
                "answer": ["x"]}
    # The English start page exists too and answers as well: it must be listed.
    one_side = {"id": "o", "question": "Was ist ioBroker?", "language": "en", "type": "cross-lingual",
                "relevant": [{"doc": "de/README.md", "grade": 2}], "answer": ["Text über ioBroker"]}
    problems, _ = check_gold.check(_gold(tmp_path, corpus, [typo, section, same_language, answered, one_side,
                                                            *_padding(3)]))
    text = "\n".join(problems)
    assert "question t: none of ['iputil-ping'] occurs" in text
    assert "question s: section 'Nope' matches no heading" in text
    assert "question c: cross-lingual, but a grade-2 document is in the question's language" in text
    assert "question u: an unanswerable question needs relevant: [] and no answer" in text
    assert "question o: de/README.md is listed but its counterpart en/README.md is not" in text
    assert "question a" not in text and len(problems) == 6
    assert "4 unanswerable questions; at least 10 required" in text


# ---------------------------------------------------------------------- verified but wrong
def _result(qid: str, *, refused=False, verified=True, expected_refusal=False, contains_gold=True, supported=False):
    return SimpleNamespace(qid=qid, refused=refused, verified=verified, expected_refusal=expected_refusal,
                           contains_gold=contains_gold, supported=supported)


def test_verified_but_wrong_counts_only_verified_answers_that_are_wrong():
    results = [
        _result("right"),
        _result("no-gold", contains_gold=False),                      # wrong
        _result("should-refuse", expected_refusal=True, contains_gold=None),  # wrong
        _result("unverified-wrong", verified=False, contains_gold=False),
        _result("refused", refused=True, verified=False, contains_gold=False),
        _result("no-gold-strings", contains_gold=None),              # nothing to check: not wrong
    ]
    out = realdocs_quality.verified_wrong(results)
    assert out["verified_answers"] == 4 and out["verified_wrong"] == 2
    assert out["verified_wrong_ids"] == ["no-gold", "should-refuse"] and out["verified_wrong_rate"] == 0.5
    assert realdocs_quality.verified_wrong([])["verified_wrong_rate"] is None


def test_supported_but_wrong_is_over_answered_questions():
    results = [_result("right", supported=True), _result("wrong", supported=True, contains_gold=False),
               _result("unsupported-wrong", contains_gold=False),
               _result("withheld", refused=True, supported=True, contains_gold=False)]
    out = realdocs_quality.verified_wrong(results)
    assert (out["answered"], out["supported_answers"], out["supported_wrong"]) == (3, 2, 1)
    assert out["supported_wrong_ids"] == ["wrong"]
