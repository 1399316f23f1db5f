"""A bad file gets a clear per-file reason; the rest ingests and nothing indexed is lost."""

from __future__ import annotations

from pathlib import Path

from beleg.types import Principal

GOOD = "---\ntitle: Good\nlanguage: en\n---\n# Good\n\nThe quick delivery of webhooks with E-4012 handling.\n"


def test_each_bad_file_fails_alone_and_nothing_is_lost(kb, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.md").write_text(GOOD, encoding="utf-8")
    first = kb.ingest([str(src)], progress=False)
    assert first.count("added") == 1

    (src / "empty.md").write_bytes(b"")
    (src / "binary.txt").write_bytes(b"\x00\x01\x02\xff" * 100)
    (src / "latin1.md").write_bytes("# Größe\n\nDie Größe ist wichtig.".encode("latin-1"))
    (src / "broken.pdf").write_bytes(b"%PDF-1.7\n this is not really a pdf")
    (src / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    (src / "huge.txt").write_text("word " * 300_000, encoding="utf-8")
    (src / "bad-front-matter.md").write_text("---\ntitle: [unclosed\n---\nBody", encoding="utf-8")
    (src / "good2.md").write_text(GOOD.replace("Good", "Second"), encoding="utf-8")
    unsupported = src / "notes.xyz"
    unsupported.write_text("x", encoding="utf-8")

    report = kb.ingest([str(src), str(unsupported), str(src / "missing.md")], progress=False, max_file_mb=1)
    by_name = {Path(f.source).name: f for f in report.files}
    reasons = {name: (f.reason or "") for name, f in by_name.items() if f.status == "failed"}
    assert set(reasons) == {"binary.txt", "latin1.md", "broken.pdf", "broken.docx", "huge.txt",
                            "bad-front-matter.md", "notes.xyz", "missing.md"}
    # A zero-byte file is intentionally empty: skipped with the reason, not a failure.
    assert by_name["empty.md"].status == "skipped" and "empty" in (by_name["empty.md"].reason or "")
    assert "binary" in reasons["binary.txt"]
    assert "--encoding" in reasons["latin1.md"]
    assert "limit" in reasons["huge.txt"]
    assert "no such file" in reasons["missing.md"]
    assert ".md" in reasons["notes.xyz"]  # lists the supported formats
    assert by_name["good.md"].status == "unchanged"
    assert by_name["good2.md"].status == "added"
    # What was indexed before is still there and searchable.
    assert {Path(h.source).name for h in kb.search("E-4012", mode="bm25", k=5)} == {"good.md", "good2.md"}

    # The wrongly encoded file ingests once its encoding is named.
    fixed = kb.ingest([str(src / "latin1.md")], encoding="latin-1", progress=False)
    assert fixed.count("added") == 1
    assert kb.search("Größe", mode="bm25", k=1)[0].source.endswith("latin1.md")


def test_the_encoding_a_file_needed_is_remembered_for_its_next_ingest(kb, tmp_path: Path) -> None:
    # A --sync after an edit need not repeat --encoding: the file is read as it was the last time.
    src = tmp_path / "src"
    src.mkdir()
    notes = src / "notes.md"
    notes.write_bytes("# Größe\n\nDie Größe ist 12 m.".encode("latin-1"))
    (src / "plain.md").write_text("# Plain\n\nUTF-8 text about Größe.", encoding="utf-8")
    first = kb.ingest([str(src)], encoding="latin-1", progress=False)
    by_name = {Path(f.source).name: f for f in first.files}
    assert (by_name["notes.md"].encoding, by_name["notes.md"].encoding_from) == ("iso8859-1", "option")
    assert by_name["plain.md"].encoding is None  # valid UTF-8 is read as UTF-8, nothing to remember
    assert "_encoding" not in kb.search("Größe 12", mode="bm25", k=1)[0].to_json()["metadata"]

    notes.write_bytes("# Größe\n\nDie Größe ist 14 m.".encode("latin-1"))
    again = kb.ingest([str(src)], sync=True, progress=False)
    result = {Path(f.source).name: f for f in again.files}["notes.md"]
    assert result.status == "updated", result.reason
    assert (result.encoding, result.encoding_from) == ("iso8859-1", "index")
    assert "Größe ist 14 m" in kb.search("Größe 14", mode="bm25", k=1)[0].text

    # A file never read with an encoding still needs one: the index remembers nothing for it.
    (src / "other.md").write_bytes("Maße und Gewichte.".encode("latin-1"))
    third = kb.ingest([str(src)], sync=True, progress=False)
    other = {Path(f.source).name: f for f in third.files}["other.md"]
    assert other.status == "failed" and "--encoding" in (other.reason or "")


def test_metadata_rules_for_formats_without_front_matter(kb, tmp_path: Path) -> None:
    from beleg.ingest.metadata import MetadataRule

    (tmp_path / "manual.txt").write_text("Restart the relay with the reset button.", encoding="utf-8")
    rules = [MetadataRule("*.txt", {"product": "ferrolink", "version": "2.4", "authority": "reference"})]
    kb.ingest([str(tmp_path / "manual.txt")], rules=rules, metadata={"tenant": "nordwind"}, progress=False)
    assert kb.search("relay reset", mode="bm25", k=1) == []  # a tenant's document is not public
    hit = kb.search("relay reset", mode="bm25", k=1, principal=Principal(tenant="nordwind"))[0]
    assert hit.metadata["version"] == "2.4"
    assert hit.metadata["tenant"] == "nordwind"
    assert hit.metadata["status"] == "unknown"  # never silently "current"
    assert hit.metadata["language"] == "en"


def test_globs_and_folders_select_files(kb, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.md").write_text(GOOD, encoding="utf-8")
    (tmp_path / "a" / "two.txt").write_text("Plain text about relays.", encoding="utf-8")
    (tmp_path / "a" / ".hidden.md").write_text(GOOD, encoding="utf-8")
    (tmp_path / "a" / "skip.xyz").write_text("ignored in folders", encoding="utf-8")
    report = kb.ingest([str(tmp_path / "a" / "*.md")], progress=False)
    assert [Path(f.source).name for f in report.files] == ["one.md"]
    report = kb.ingest([str(tmp_path / "a")], progress=False)
    assert sorted(Path(f.source).name for f in report.files) == ["one.md", "two.txt"]
    report = kb.ingest([str(tmp_path / "nothing-*.md")], progress=False)
    assert report.failures[0].reason == "the pattern matches no files"
