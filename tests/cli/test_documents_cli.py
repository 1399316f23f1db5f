"""Finding documents from the command line: `beleg documents` lists them, `delete --doc` takes
a file's path as well as an id, and a filter naming a key no document has says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beleg.cli.main import main

DOC = "---\ntitle: {title}\nversion: '{version}'\nstatus: {status}\nlanguage: en\n---\n# {title}\n\n{body}\n"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "errors.md").write_text(DOC.format(title="Errors", version="3.0", status="current",
                                               body="E-4012 means the signature did not match."), encoding="utf-8")
    (docs / "old.md").write_text(DOC.format(title="Old errors", version="2.4", status="historical",
                                            body="In 2.4, E-4012 meant a timeout."), encoding="utf-8")
    code, _, err = _run(capsys, "ingest", str(docs), "--index", str(tmp_path / "kb"), "--no-progress")
    assert code == 0, err
    return tmp_path


def test_documents_lists_id_source_title_version_status(index: Path, capsys) -> None:
    code, out, _ = _run(capsys, "documents", "--index", str(index / "kb"), "--json")
    docs = {Path(d["source"]).name: d for d in json.loads(out)}
    assert code == 0 and set(docs) == {"errors.md", "old.md"}
    assert docs["errors.md"]["title"] == "Errors" and docs["errors.md"]["metadata"]["version"] == "3.0"
    assert all(d["doc_id"] and not any(k.startswith("_") for k in d["metadata"]) for d in docs.values())

    code, out, _ = _run(capsys, "documents", "--index", str(index / "kb"), "--where", "status = historical")
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["id", "version", "status", "source", "title"]
    assert len(rows) == 1 and "2.4" in rows[0] and "historical" in rows[0] and rows[0].endswith("Old errors")


def test_delete_takes_a_document_path(index: Path, capsys, monkeypatch) -> None:
    kb = str(index / "kb")
    monkeypatch.chdir(index)
    code, out, err = _run(capsys, "delete", "--doc", "docs/old.md", "--index", kb)  # relative, resolves to its file
    assert code == 0 and "deleted 1 document(s)" in out, out + err
    code, out, _ = _run(capsys, "delete", "--doc", str(index / "docs" / "errors.md"), "--index", kb, "--json")
    assert code == 0 and json.loads(out)["documents"] == 1
    code, out, _ = _run(capsys, "delete", "--doc", "docs/none.md", "--index", kb)
    assert code == 0 and "not found: docs/none.md" in out  # nothing of it is left, as for a filter matching none


def test_a_filter_on_a_key_no_document_has_says_so(index: Path, capsys) -> None:
    kb = str(index / "kb")
    hidden = index / "hidden.md"
    hidden.write_text("---\ntitle: Hidden\ntenant: acme\nsecretcode: v1\nlanguage: en\n---\n# Hidden\n\nE-4012.\n",
                      encoding="utf-8")
    assert _run(capsys, "ingest", str(hidden), "--index", kb, "--no-progress")[0] == 0

    code, out, err = _run(capsys, "search", "E-4012", "--index", kb, "--where", "stauts = current")
    assert code == 0 and "No hits" in out
    assert err.strip() == "note: no document has the key 'stauts' (did you mean 'status'?)"
    code, _, err = _run(capsys, "search", "E-4012", "--index", kb, "--filter", "versoin=3.0", "--where", "status = current")
    assert code == 0 and err.strip() == "note: no document has the key 'versoin' (did you mean 'version'?)"
    # Only the keys of documents the asker may read: the anonymous asker learns nothing of secretcode.
    code, _, err = _run(capsys, "search", "E-4012", "--index", kb, "--where", "secretcod = v1")
    assert code == 0 and err.strip() == "note: no document has the key 'secretcod'"
    code, _, err = _run(capsys, "search", "E-4012", "--index", kb, "--where", "secretcod = v1", "--tenant", "acme")
    assert "did you mean 'secretcode'?" in err
    code, _, err = _run(capsys, "search", "E-4012", "--index", kb, "--where", "status = current")
    assert code == 0 and err == ""
    code, _, err = _run(capsys, "ask", "What does E-4012 mean?", "--index", kb, "--where", "stauts = current")
    assert code == 0 and err.strip() == "note: no document has the key 'stauts' (did you mean 'status'?)"

    # delete sees every document; nothing matched is still exit 0, now with the note.
    code, out, err = _run(capsys, "delete", "--where", "stauts = current", "--index", kb)
    assert code == 0 and "deleted 0 document(s)" in out
    assert err.strip() == "note: no document has the key 'stauts' (did you mean 'status'?)"
    code, _, err = _run(capsys, "delete", "--where", "secretcod = v1", "--index", kb)
    assert code == 0 and "did you mean 'secretcode'?" in err
    code, out, err = _run(capsys, "delete", "--where", "secretcode = v1", "--index", kb)
    assert code == 0 and "deleted 1 document(s)" in out and err == ""


def test_documents_shows_invisible_and_reordering_characters_as_escapes(tmp_path: Path, capsys) -> None:
    """A right-to-left override in a file name (`rtl\u202egnp.md` shows as `rtldm.png`) or a
    zero-width space in a title would make the terminal show another name than the stored one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rtl\u202egnp.md").write_text("---\ntitle: Pay\u200bment \u2066admin\u2069\n---\n# Pay\n\nText.\n",
                                         encoding="utf-8")
    code, _, err = _run(capsys, "ingest", str(docs), "--index", str(tmp_path / "kb"), "--no-progress")
    assert code == 0, err
    code, out, _ = _run(capsys, "documents", "--index", str(tmp_path / "kb"))
    assert code == 0 and "rtl\\u202egnp.md" in out and "Pay\\u200bment \\u2066admin\\u2069" in out, out
    assert not any(c in out for c in "\u202e\u200b\u2066\u2069")
    code, out, _ = _run(capsys, "search", "text", "--index", str(tmp_path / "kb"), "--mode", "bm25")
    assert code == 0 and "\\u200b" in out and not any(c in out for c in "\u202e\u200b\u2066\u2069"), out
