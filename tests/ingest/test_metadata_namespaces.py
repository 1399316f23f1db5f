"""Names and words in metadata mean one thing at ingest and at query time: an ACL group never
reads as a user, Unicode spellings of one status or tenant are one value, two spellings of an
access key cannot disagree, a binding rule outranks the file, and ids and titles are values."""

from __future__ import annotations

from pathlib import Path

import pytest

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


