"""Names and words in metadata mean one thing at ingest and at query time: an ACL group never
reads as a user, Unicode spellings of one status or tenant are one value, two spellings of an
access key cannot disagree, a binding rule outranks the file, and ids and titles are values."""

from __future__ import annotations

import logging
import unicodedata
from pathlib import Path

import pytest

from beleg.ingest.metadata import (
    DEFAULT_STATUS_SYNONYMS,
    MetadataError,
    MetadataRule,
    declared_tenants,
    fold_word,
    normalize,
    resolve,
)
from beleg.types import Principal


def doc(front: str, body: str) -> str:
    return f"---\n{front}\nlanguage: en\n---\n# Title\n\n{body}\n"


def outcome(report) -> dict[str, tuple[str, str | None]]:
    return {Path(f.source).name: (f.status, f.reason) for f in report.files}


# ---------------------------------------------------------------------- finding 5: group vs user
@pytest.mark.parametrize("entry", ["group:user:alice", "GROUP: User:Alice", "group:group:ops"])
def test_an_acl_group_named_like_a_namespace_is_refused_at_ingest(kb, tmp_path: Path, entry: str) -> None:
    (tmp_path / "g.md").write_text(doc(f'acl: ["{entry}"]', "The secret word is plinkerwomp."), encoding="utf-8")
    status, reason = outcome(kb.ingest([str(tmp_path / "g.md")], progress=False))["g.md"]
    assert status == "failed" and "ambiguous" in reason, reason
    for who in (Principal(user="alice"), Principal(groups=("user:alice",)), Principal(groups=("ops",))):
        assert kb.search("plinkerwomp", mode="bm25", k=5, principal=who) == [], who


def test_an_acl_entry_is_canonical_once_and_a_group_never_reads_as_a_user() -> None:
    for entry in ("user:alice", " User: Alice ", "ops", "group:ops", "group:user:alice", "group:group:ops",
                  "team:ops", "user:", "group:"):
        once = Principal.acl_entry(entry)
        assert Principal.acl_entry(once) == once, entry  # reading a stored entry changes nothing
    # A hand-made (or older) stored entry naming a group "user:alice" stays a group.
    stored = {"acl": ["group:user:alice"]}
    assert not Principal(user="alice").may_read(stored)
    assert not Principal(groups=("user:alice",)).may_read(stored)
    assert Principal(groups=("group:user:alice",)).may_read(stored)
    # What earlier versions stored keeps its meaning: "group:ops" is the group ops.
    assert Principal(groups=("ops",)).may_read({"acl": ["group:ops"]})
    assert Principal(user="alice").may_read({"acl": ["user:alice"]})


# ---------------------------------------------------------------------- finding 7: Unicode
def test_status_words_compare_unicode_normalised(kb, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    written = {"nfc.md": "abgelöst", "nfd.md": unicodedata.normalize("NFD", "abgelöst"),
               "wide.md": "\uff44eprecated", "widecurrent.md": "\uff43\uff55\uff52\uff52\uff45\uff4e\uff54",
               "odd.md": "sometimes"}
    for name, status in written.items():
        (tmp_path / name).write_text(doc(f"status: {status}", f"Status note for {name}."), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="beleg.ingest.metadata"):
        kb.ingest([str(tmp_path / "*.md")], progress=False)
    meta = {Path(s).name: m["status"] for _, s, m in kb.catalog.documents_meta()}
    assert meta == {"nfc.md": "historical", "nfd.md": "historical", "wide.md": "historical",
                    "widecurrent.md": "current", "odd.md": "unknown"}
    warned = [r.getMessage() for r in caplog.records if "'unknown'" in r.getMessage()]
    assert len(warned) == 1 and "odd.md" in warned[0] and "sometimes" in warned[0], warned
    assert all(fold_word(k) == k for k in DEFAULT_STATUS_SYNONYMS)  # the table is in compared form
    assert normalize({"authority": "\uff23ontract"}) == {"authority": "contract"}


def test_tenants_and_names_compare_unicode_normalised(kb, tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "möller-gmbh")
    (tmp_path / "m.md").write_text(doc(f"tenant: {nfd}\nacl: [{nfd}-ops]", "Payroll code Q-7731."),
                                   encoding="utf-8")
    kb.ingest([str(tmp_path / "m.md")], progress=False)
    for who in (Principal(tenant="möller-gmbh", groups=("möller-gmbh-ops",)),
                Principal(tenant="MÖLLER-GMBH", groups=(unicodedata.normalize("NFD", "Möller-GmbH-Ops"),)),
                Principal(tenant="\uff4d\u00f6ller-gmbh", groups=("möller-gmbh-ops",))):
        assert len(kb.search("Q-7731", mode="bm25", k=1, principal=who)) == 1, who
    assert kb.search("Q-7731", mode="bm25", k=1, principal=Principal(tenant="müller-gmbh",
                                                                        groups=("möller-gmbh-ops",))) == []


# ---------------------------------------------------------------------- finding 3: key spellings
def test_two_spellings_of_an_access_key_must_agree() -> None:
    with pytest.raises(MetadataError, match="'tenant' is given twice"):
        normalize({"tenant": "acme", "tenant ": "beta"})
    with pytest.raises(MetadataError, match="'acl' is given twice"):
        normalize({"acl": ["ops"], " ACL": ["ops", "staff"]})
    assert normalize({"tenant": "acme", "Tenant ": " ACME"}) == {"tenant": "acme"}
    assert declared_tenants({"tenant": "acme", "tenant ": "Beta", "tenant  ": ""}) == {"acme", "beta"}
    assert declared_tenants({"title": "x"}) == set()


def test_a_spaced_tenant_key_in_front_matter_is_the_tenant(kb, tmp_path: Path) -> None:
    (tmp_path / "spaced.md").write_text(doc('"tenant ": beta', "Beta restart code snorkelpuff-43."), encoding="utf-8")
    (tmp_path / "both.md").write_text(doc('tenant: acme\n"tenant ": beta', "Restart code snorkelpuff-44."),
                                      encoding="utf-8")
    report = outcome(kb.ingest([str(tmp_path / "spaced.md"), str(tmp_path / "both.md")], progress=False))
    assert report["spaced.md"][0] == "added"
    assert report["both.md"][0] == "failed" and "given twice" in report["both.md"][1]
    assert {m.get("tenant") for _, _, m in kb.catalog.documents_meta()} == {"beta"}


def test_a_binding_rule_outranks_and_may_not_be_contradicted(kb, tmp_path: Path) -> None:
    bound = [MetadataRule("*", {"tenant": "acme"}, binding=True)]
    assert resolve("a.md", {}, "Some text.", None, bound)["tenant"] == "acme"
    assert resolve("a.md", {"tenant": " ACME"}, "Some text.", None, bound)["tenant"] == "acme"
    with pytest.raises(MetadataError, match="bound to tenant 'acme'"):
        resolve("a.md", {"tenant": "beta"}, "Some text.", None, bound)
    # Through an ingest: the contradicting file fails, the others get the bound tenant.
    (tmp_path / "plain.md").write_text(doc("title: Plain", "Plain note P-5501."), encoding="utf-8")
    (tmp_path / "other.md").write_text(doc("tenant: beta", "Other note P-5502."), encoding="utf-8")
    report = outcome(kb.ingest([str(tmp_path / "plain.md"), str(tmp_path / "other.md")], rules=bound,
                               progress=False))
    assert report["plain.md"][0] == "added"
    assert report["other.md"][0] == "failed" and "bound to tenant 'acme'" in report["other.md"][1]
    assert [m.get("tenant") for _, _, m in kb.catalog.documents_meta()] == ["acme"]


# ---------------------------------------------------------------------- finding 9: id and title
@pytest.mark.parametrize("front, word", [
    ("id: {a: b}", "'id' must be one value"), ("id: [a]", "'id' must be one value"),
    ("id: yes", "yes/no"), ('id: " "', "'id' is blank"), ("title: {a: b}", "'title' must be one value"),
    ("title: [a, b]", "'title' must be one value"), ("title: no", "yes/no"),
])
def test_non_scalar_ids_and_titles_fail_the_file(kb, tmp_path: Path, front: str, word: str) -> None:
    (tmp_path / "bad.md").write_text(doc(front, "Bad metadata note B-6601."), encoding="utf-8")
    status, reason = outcome(kb.ingest([str(tmp_path / "bad.md")], progress=False))["bad.md"]
    assert status == "failed" and word in reason, reason
    assert kb.catalog.documents_meta() == []


def test_scalar_ids_keep_their_written_form(kb, tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text(doc("id: 007\ntitle: 2024 plan", "Numbered note N-6602."), encoding="utf-8")
    (tmp_path / "s.md").write_text(doc("id: ' runbook-1'", "Spaced id note N-6603."), encoding="utf-8")
    kb.ingest([str(tmp_path / "n.md"), str(tmp_path / "s.md")], progress=False)
    stored = {doc_id: m["title"] for doc_id, _, m in kb.catalog.documents_meta()}
    assert stored == {"007": "2024 plan", " runbook-1": "Title"}  # as written: stored ids keep working


@pytest.mark.parametrize("front", ["tenant: acme\nTENANT: beta", "acl: [ops]\nacl: [everyone]",
                                   "tenant: acme\ntenant: acme"])
def test_an_access_key_given_twice_fails_the_file(kb, tmp_path: Path, front: str) -> None:
    """YAML keeps the last of two keys, so a second 'tenant' or 'acl' (in any case) would
    silently decide who may read the document, unseen by whoever reads the first."""
    (tmp_path / "d.md").write_text(doc(front, "The code word is quarrelsnap."), encoding="utf-8")
    (tmp_path / "t.md").write_text(doc("tags: [a]\ntags: [b]", "Other keys keep YAML's rule."), encoding="utf-8")
    got = outcome(kb.ingest([str(tmp_path)], progress=False))
    assert got["d.md"][0] == "failed" and "given twice" in (got["d.md"][1] or ""), got
    assert got["t.md"][0] == "added"
    assert kb.search("quarrelsnap", mode="bm25", k=5, principal=Principal(tenant="beta", groups=("everyone",))) == []
