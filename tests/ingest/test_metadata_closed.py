"""Metadata fails closed and means what it says: no value makes a document more visible
than written, a re-ingest cannot widen access silently, and ids belong to one file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import beleg
from beleg.ingest.metadata import load_rule_statuses, load_rules, status_vocabulary
from beleg.ingest.pipeline import TextSource, legacy_id
from beleg.types import Principal


def doc(front: str, body: str) -> str:
    return f"---\n{front}\nlanguage: en\n---\n# Title\n\n{body}\n"


def statuses(report) -> dict[str, tuple[str, str | None]]:
    return {Path(f.source).name: (f.status, f.reason) for f in report.files}


@pytest.mark.parametrize("front, word", [
    ("acl:", "acl"), ("acl: []", "acl"), ('acl: ""', "acl"), ("acl: {ops: true}", "acl"), ("acl: [[ops]]", "acl"),
    ("tenant:", "tenant"), ("tenant: [alpha, beta]", "tenant"), ("tenant: {name: alpha}", "tenant"),
    ("product: [a, b]", "product"), ("version: [2.4, 3.0]", "version"),
])
def test_ambiguous_access_metadata_rejects_the_file(kb, tmp_path: Path, front: str, word: str) -> None:
    (tmp_path / "secret.md").write_text(doc(front, "Vault code V-8001."), encoding="utf-8")
    (tmp_path / "fine.md").write_text(doc("acl: [ops]", "Public note."), encoding="utf-8")
    report = kb.ingest([str(tmp_path / "secret.md"), str(tmp_path / "fine.md")], progress=False)
    status, reason = statuses(report)["secret.md"]
    assert status == "failed" and f"'{word}'" in reason, reason
    assert statuses(report)["fine.md"][0] == "added"
    assert kb.search("V-8001", mode="bm25", k=5) == []
    assert kb.search("V-8001", mode="bm25", k=5, principal=Principal(tenant="alpha", groups=("ops",))) == []


def test_tenants_and_acl_names_compare_case_folded(kb, tmp_path: Path) -> None:
    (tmp_path / "acme.md").write_text(doc("tenant: ACME\nacl: [Ops-Team, 'User: Alice']", "Runbook R-8002."),
                                      encoding="utf-8")
    kb.ingest([str(tmp_path / "acme.md")], progress=False)
    for who in (Principal(tenant="acme", groups=("ops-team",)), Principal(tenant=" Acme ", groups=("OPS-TEAM",)),
                Principal(tenant="ACME", user="alice")):
        assert len(kb.search("R-8002", mode="bm25", k=1, principal=who)) == 1, who
    assert kb.search("R-8002", mode="bm25", k=1, principal=Principal(tenant="acme2", groups=("ops-team",))) == []
    assert kb.search("R-8002", mode="bm25", k=1, principal=Principal(tenant="acme")) == []


def test_users_and_groups_are_separate_namespaces() -> None:
    meta = {"acl": ["ops", "user:alice"]}
    assert Principal(groups=("ops",)).may_read(meta)
    assert Principal(groups=("group:ops",)).may_read(meta)
    assert Principal(user="alice").may_read(meta)
    assert not Principal(user="ops").may_read(meta)  # a user named like the group
    assert not Principal(groups=("alice",)).may_read(meta)  # a group named like the user
    assert not Principal(groups=("user:alice",)).may_read(meta)  # a group spelled as a user entry
    assert Principal(user="ops").access_key != Principal(groups=("ops",)).access_key


def test_status_synonyms_keep_the_declared_value(kb, tmp_path: Path) -> None:
    for name, status in (("old.md", "deprecated"), ("veraltet.md", "Veraltet"), ("beta.md", "preview"),
                         ("now.md", "aktuell"), ("custom.md", "abgekündigt"), ("odd.md", "sometimes")):
        (tmp_path / name).write_text(doc(f"status: {status}", f"Status note S-{name}."), encoding="utf-8")
    rules = tmp_path / "rules.yaml"
    rules.write_text("statuses: {abgekündigt: historical}\nrules: []\n", encoding="utf-8")
    vocab = status_vocabulary(load_rule_statuses(rules))
    kb.ingest([str(tmp_path / "*.md")], progress=False, statuses=vocab)
    meta = {Path(s).name: m for _, s, m in kb.catalog.documents_meta()}
    assert {n: (m["status"], m.get("declared_status")) for n, m in meta.items()} == {
        "old.md": ("historical", "deprecated"), "veraltet.md": ("historical", "veraltet"),
        "beta.md": ("draft", "preview"), "now.md": ("current", "aktuell"),
        "custom.md": ("historical", "abgekündigt"), "odd.md": ("unknown", "sometimes")}
    with pytest.raises(beleg.errors.ConfigError, match="current, historical or draft"):
        status_vocabulary({"deprecated": "gone"})


def test_rules_keep_versions_as_written(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - match: '*.txt'\n    metadata: {version: 2.10, tenant: ' Nord '}\n", encoding="utf-8")
    assert load_rules(rules)[0].metadata == {"version": "2.10", "tenant": "nord"}


def test_reingest_that_widens_access_is_refused(kb, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("Tenant note T-8003 about the relay.", encoding="utf-8")
    kb.ingest([str(note)], metadata={"tenant": "alpha", "acl": "ops"}, progress=False)
    alpha = Principal(tenant="alpha", groups=("ops",))

    for meta, what in ((None, "tenant 'alpha' would be removed"), ({"tenant": "alpha", "acl": "ops,staff"},
                                                                   "acl would gain staff")):
        report = kb.ingest([str(note)], metadata=meta, progress=False)
        status, reason = statuses(report)["note.txt"]
        assert status == "failed" and what in reason and "--allow-widen" in reason, reason
        assert kb.search("T-8003", mode="bm25", k=1) == []  # still not public
        assert kb.search("T-8003", mode="bm25", k=1, principal=Principal(tenant="alpha", groups=("staff",))) == []
    # Narrowing needs no flag; widening with it is reported.
    assert statuses(kb.ingest([str(note)], metadata={"tenant": "alpha", "acl": "ops", "x": "1"},
                              progress=False))["note.txt"][0] == "updated"
    report = kb.ingest([str(note)], progress=False, allow_widen=True)
    assert report.files[0].status == "updated"
    assert report.to_json()["widened"] == [{"source": str(note), "widened": [
        "tenant 'alpha' would be removed", "acl would be removed"]}]
    assert len(kb.search("T-8003", mode="bm25", k=1)) == 1
    assert alpha.may_read({})


def test_an_id_cannot_take_over_another_files_document(kb, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(doc("id: shared", "Original A-8004."), encoding="utf-8")
    (tmp_path / "b.md").write_text(doc("id: shared", "Intruder B-8004."), encoding="utf-8")
    report = kb.ingest([str(tmp_path / "a.md"), str(tmp_path / "b.md")], progress=False)
    assert statuses(report)["a.md"][0] == "added"
    status, reason = statuses(report)["b.md"]
    assert status == "failed" and "earlier in this run" in reason
    later = kb.ingest([str(tmp_path / "b.md")], progress=False)  # a later run
    assert later.files[0].status == "failed" and "belongs to" in later.files[0].reason
    stored = kb.document("shared")
    assert stored.source.endswith("a.md") and "Original" in stored.text and "Intruder" not in stored.text


def test_ids_survive_moving_the_corpus_folder(kb, tmp_path: Path) -> None:
    first = tmp_path / "one" / "corpus"
    (first / "sub").mkdir(parents=True)
    (first / "sub" / "x.md").write_text(doc("title: X", "Moved doc M-8005."), encoding="utf-8")
    (first / "y.md").write_text(doc("id: fixed-y", "Moved doc M-8006."), encoding="utf-8")
    before = {f.source: f.doc_id for f in kb.ingest([str(first)], progress=False).files}
    second = tmp_path / "two" / "corpus"
    second.parent.mkdir()
    shutil.move(str(first), str(second))
    report = kb.ingest([str(second)], progress=False, sync=True)
    assert sorted(f.doc_id for f in report.files) == sorted(before.values())
    assert report.embedded == 0 and report.deleted == 0 and kb.status()["documents"] == 2
    # The same file through a glob from the corpus folder gets the same id.
    glob_report = kb.ingest([str(second / "**" / "*.md")], progress=False)
    assert {f.doc_id for f in glob_report.files} == set(before.values())


def test_index_with_old_absolute_path_ids_is_rekeyed_without_embedding(kb, tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    note = folder / "old.txt"
    note.write_text("Legacy note L-8007 about relays.", encoding="utf-8")
    fresh = beleg.open(tmp_path / "probe", embedder=kb._embedder)
    new_id = fresh.ingest([str(folder)], progress=False).files[0].doc_id
    fresh.close()
    old_id = legacy_id(note)
    # What an older Beleg stored: the same file under sha256(absolute path).
    kb.ingest_texts([TextSource(str(note), note.read_text(encoding="utf-8"), {}, None, old_id)], progress=False)
    report = kb.ingest([str(folder)], progress=False)
    entry = report.files[0]
    assert (entry.status, entry.doc_id, entry.previous_id) == ("updated", new_id, old_id)
    assert report.embedded == 0
    assert kb.document(old_id) is None and kb.document(new_id) is not None
    assert kb.status()["documents"] == 1
    assert kb.ingest([str(folder)], progress=False).files[0].status == "unchanged"


def test_symlink_out_of_the_folder_is_skipped_unless_followed(kb, tmp_path: Path) -> None:
    from beleg.cli.main import main

    outside = tmp_path / "outside.md"
    outside.write_text(doc("title: Out", "Outside secret O-8008."), encoding="utf-8")
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "in.md").write_text(doc("title: In", "Inside I-8008."), encoding="utf-8")
    (folder / "link.md").symlink_to(outside)
    index = str(tmp_path / "cli-kb")
    assert main(["ingest", str(folder), "--index", index, "--json", "--no-progress"]) == 0
    report = kb.ingest([str(folder)], progress=False)
    link = statuses(report)["link.md"]
    assert link[0] == "skipped" and "--follow-symlinks" in link[1]
    assert report.to_json()["skipped"] == 1
    followed = kb.ingest([str(folder)], progress=False, follow_symlinks=True)
    assert statuses(followed)["link.md"][0] == "added"


def test_cli_reports_skipped_and_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "empty.md").write_bytes(b"")
    code = main(["ingest", str(folder), "--index", str(tmp_path / "kb"), "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["skipped"] == 1 and out["failed"] == 0
    assert out["skips"][0]["reason"] == "empty file"


def test_html_meta_declares_descriptive_keys_never_access(kb, tmp_path: Path) -> None:
    """<meta name="version|status|product|date|authority"> is the page's own metadata, normalised
    like front matter; tenant, acl and id in <meta> stay ignored: a page may not choose its readers."""
    page = tmp_path / "page.html"
    page.write_text(
        '<html lang="en"><head><title>Retries</title>'
        '<meta name="Version" content="2.10"><meta name="status" content="Deprecated">'
        '<meta name="product" content="Ferrolink"><meta name="date" content="2024-03-01">'
        '<meta name="authority" content="Reference"><meta name="tenant" content="acme">'
        '<meta name="acl" content="ops"><meta name="id" content="other-doc"><meta name="user" content="bob">'
        '<meta name="group" content="admins"></head><body><p>Webhooks are retried for 72 hours.</p></body></html>',
        encoding="utf-8")
    report = kb.ingest([str(page)], progress=False)
    assert report.files[0].status == "added" and report.files[0].doc_id != "other-doc"
    [hit] = kb.search("webhooks retried", mode="bm25", k=5)  # public: no tenant or acl taken from <meta>
    meta = hit.metadata
    assert (meta["version"], meta["status"], meta["declared_status"]) == ("2.10", "historical", "deprecated")
    assert (meta["product"], meta["date"], meta["authority"]) == ("ferrolink", "2024-03-01", "reference")
    assert not {"tenant", "acl", "id", "user", "group"} & set(meta)
