"""Blue/green index versions: reindex beside the live version, switch atomically, gc the old one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import beleg
from beleg.cli.main import main
from beleg.errors import ConfigError, IndexVersionError
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig

DOC = "# Retries\n\n" + " ".join(f"Sentence {i} about webhook retries and queues." for i in range(60)) + "\n"


@pytest.fixture()
def index(tmp_path: Path, embedder) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "retries.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\nDead-letter queues keep failed messages.\n",
                                                encoding="utf-8")
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(tmp_path / "docs")], progress=False)
    return tmp_path / "kb"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reindex_builds_beside_switch_and_gc(index: Path, embedder, capsys) -> None:
    with beleg.open(index, embedder=embedder) as kb:
        old_version, old_chunks = kb.config.index_version, kb.status()["chunks"]
        result = kb.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)
    assert result["live"] == old_version and result["documents"] == 2 and result["chunks"] > old_chunks
    new = result["version"]
    # Nothing changed for readers yet.
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == old_version
        assert {v["version"] for v in kb.status()["versions"]} == {old_version, new}
    code, out, err = _run(capsys, "switch", new, "--index", str(index))
    assert code == 0 and new in out, err
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == new and kb.status()["chunks"] == result["chunks"]
        assert kb.search("webhook retries", k=3)[0].source.endswith("retries.md")
    # The old version stays until gc, and can still be opened by version.
    with beleg.open(index, embedder=embedder, version=old_version) as kb:
        assert kb.status()["chunks"] == old_chunks
    code, out, _ = _run(capsys, "gc", "--index", str(index), "--json")
    assert code == 0 and [v["version"] for v in json.loads(out)["removed"]] == [old_version]
    assert not (index / "catalog.sqlite").exists()
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == new and len(kb.status()["versions"]) == 1
        # Incremental ingest keeps working on the new live version, embedding nothing new.
        assert kb.ingest([str(index.parent / "docs")], progress=False).embedded == 0


def test_reindex_with_same_embedder_reuses_vectors(index: Path, embedder) -> None:
    with beleg.open(index, embedder=embedder) as kb:
        result = kb.reindex(IndexConfig(ChunkingConfig("structure", 400, 40)), progress=False)
    # The short document's only chunk is unchanged text: its vector is copied, not recomputed.
    assert result["embedded"] < result["chunks"]


def test_switch_to_unknown_version_and_reindex_to_live_config_fail(index: Path, embedder, capsys) -> None:
    code, _, err = _run(capsys, "switch", "deadbeef0000", "--index", str(index))
    assert code == 1 and "no version" in err
    with beleg.open(index, embedder=embedder) as kb, pytest.raises(ConfigError):
        kb.reindex(kb.config)


def test_opening_with_another_config_points_to_reindex(index: Path, embedder) -> None:
    with pytest.raises(IndexVersionError, match="beleg reindex"):
        beleg.open(index, IndexConfig(ChunkingConfig("window", 50, 5)), embedder=embedder)


def test_cli_reindex_then_eval_compares_versions(index: Path, tmp_path: Path, capsys) -> None:
    code, out, err = _run(capsys, "reindex", "--index", str(index), "--chunking", "window", "--max-tokens", "50",
                          "--overlap", "10", "--json", "--no-progress")
    assert code == 0, err
    new = json.loads(out)["version"]
    live = json.loads(out)["live"]
    gold = tmp_path / "gold.yaml"
    gold.write_text("version: 1\ncorpus: docs\nquestions:\n"
                    "  - {id: g1, question: 'Where do failed messages go?', relevant: [{doc: other.md, grade: 2}]}\n"
                    "  - {id: g2, question: 'Sentence 42 webhook retries', relevant: [{doc: retries.md, grade: 2}]}\n",
                    encoding="utf-8")
    code, out, err = _run(capsys, "eval", "--gold", str(gold), "--index", str(index), "--versions", f"{live},{new}",
                          "--modes", "hybrid", "--json", "--no-progress")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert set(results) == {f"hybrid@{live}", f"hybrid@{new}"}
    assert all(r["hit@1"] == 1.0 for r in results.values())


def test_cli_reindex_keeps_the_live_settings_and_takes_up_the_current_chunking_rules(tmp_path: Path, embedder,
                                                                                      capsys) -> None:
    from beleg.index.config import CHUNK_RULES

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "retries.md").write_text(DOC, encoding="utf-8")
    first = IndexConfig(ChunkingConfig("parent-child", 120, 20, child_tokens=30, rules=1))
    with beleg.open(tmp_path / "kb", first, embedder=embedder) as kb:
        kb.ingest([str(tmp_path / "docs")], progress=False)
    code, out, err = _run(capsys, "reindex", "--index", str(tmp_path / "kb"), "--json", "--no-progress")
    assert code == 0, err
    built = json.loads((tmp_path / "kb" / "versions" / json.loads(out)["version"] / "beleg.json").read_text())
    assert built["chunking"]["child_tokens"] == 30 and built["chunking"]["rules"] == CHUNK_RULES  # before: 60, none


def test_an_open_index_refuses_writes_once_another_version_is_live(index: Path, embedder, capsys) -> None:
    """A long-running process (a server) that opened the live version must not go on writing
    to it after a switch: the write would be lost to everyone who opens the index."""
    from beleg.index.versions import VersionNotLiveError

    docs = index.parent / "docs"
    with beleg.open(index, embedder=embedder) as stale:
        with beleg.open(index, embedder=embedder) as builder:
            new = builder.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)["version"]
        (docs / "late.md").write_text("# Late\n\nWritten after the switch.\n", encoding="utf-8")
        assert stale.ingest([str(docs / "other.md")], progress=False).count("unchanged") == 1  # still live
        code, _, err = _run(capsys, "switch", new, "--index", str(index))
        assert code == 0, err
        with pytest.raises(VersionNotLiveError, match="restart the server"):
            stale.ingest([str(docs / "late.md")], progress=False)
        # A deletion reaches every version, the live one included, so it is not refused.
        doc_id = next(d for d, s, _ in stale.catalog.documents_meta() if s.endswith("other.md"))
        assert stale.delete([doc_id])["deleted"] == [doc_id]
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == new
        assert not any(s.endswith(("late.md", "other.md")) for _, s, _ in kb.catalog.documents_meta())


WINDOW = IndexConfig(ChunkingConfig("window", 60, 10))


class _Interrupted:
    """The index's embedder, stopped at its first call the way Ctrl-C stops a reindex."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        raise KeyboardInterrupt


def test_an_interrupted_build_can_neither_go_live_nor_lose_documents_silently(index: Path, embedder, capsys) -> None:
    with beleg.open(index, embedder=embedder) as kb:
        old = kb.config.index_version
        with pytest.raises(KeyboardInterrupt):
            kb.reindex(WINDOW, progress=False, embedder=_Interrupted(embedder))
    new = WINDOW.index_version
    code, out, _ = _run(capsys, "status", "--index", str(index), "--json")
    listed = {v["version"]: (v["live"], v["documents"], v["complete"]) for v in json.loads(out)["versions"]}
    assert listed == {old: (True, 2, True), new: (False, 0, False)}
    assert f"{new}  0 documents (not live, build unfinished)" in _run(capsys, "status", "--index", str(index))[1]

    code, _, err = _run(capsys, "switch", new, "--index", str(index))
    assert code == 1 and "never finished" in err and "lacks 2 document(s)" in err and "retries.md" in err, err
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == old

    code, out, err = _run(capsys, "switch", new, "--index", str(index), "--allow-document-loss")
    assert code == 0 and "2 document(s)" in err and "other.md" in err and f"beleg switch {old}" in err, err
    # The old version is the only copy of both documents now: gc keeps it, and says why.
    code, out, err = _run(capsys, "gc", "--index", str(index), "--json")
    assert code == 1 and json.loads(out)["removed"] == [] and "2 document(s) the live version lacks" in err, err
    assert json.loads(out)["kept"][0]["version"] == old

    # The warning's advice works as written: switch back, run the same reindex again, switch.
    assert _run(capsys, "switch", old, "--index", str(index))[0] == 0
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.reindex(WINDOW, progress=False)["documents"] == 2
    code, _, err = _run(capsys, "switch", new, "--index", str(index))
    assert code == 0 and not err
    code, out, _ = _run(capsys, "gc", "--index", str(index), "--json")
    assert code == 0 and [v["version"] for v in json.loads(out)["removed"]] == [old]


def test_switch_and_gc_refuse_to_drop_a_document_ingested_after_the_build(index: Path, embedder, capsys) -> None:
    from beleg.index import versions

    docs = index.parent / "docs"
    with beleg.open(index, embedder=embedder) as kb:
        old = kb.config.index_version
        new = kb.reindex(WINDOW, progress=False)["version"]
        (docs / "late.md").write_text("# Late\n\nIngested after the build finished.\n", encoding="utf-8")
        kb.ingest([str(docs)], progress=False)
    code, _, err = _run(capsys, "switch", new, "--index", str(index))
    assert code == 1 and "lacks 1 document(s)" in err and "late.md" in err and "beleg reindex" in err, err
    with pytest.raises(versions.VersionNotReadyError, match="late.md"):
        versions.switch(index, new)
    assert versions.readiness(index, new).drift.counts() == {"missing": 1, "changed": 0, "extra": 0}
    # Forced, the old version keeps the late document and gc keeps the old version for it,
    # until told to drop it.
    assert _run(capsys, "switch", new, "--index", str(index), "--allow-document-loss")[0] == 0
    code, _, err = _run(capsys, "gc", "--index", str(index))
    assert code == 1 and "late.md" in err and f"beleg switch {old}" in err
    assert [(v.version, list(docs.values())) for v, docs in versions.collect(index).kept_documents] == [
        (old, [str(docs / "late.md")])]
    code, out, _ = _run(capsys, "gc", "--index", str(index), "--allow-document-loss", "--json")
    assert code == 0 and [v["version"] for v in json.loads(out)["removed"]] == [old]


def test_delete_takes_paths_as_arguments_and_succeeds_alike_when_an_id_or_a_filter_finds_nothing(
        index: Path, capsys) -> None:
    code, out, err = _run(capsys, "delete", str(index.parent / "docs" / "other.md"), "--index", str(index))
    assert code == 0 and "deleted 1 document(s)" in out, err
    code, out, _ = _run(capsys, "delete", "--doc", "no-such-doc", "--index", str(index))
    assert code == 0 and "not found: no-such-doc" in out  # nothing of it is left: as a filter that matches nothing
    code, out, err = _run(capsys, "delete", "--where", "title = Nothing", "--index", str(index))
    assert code == 0 and "deleted 0 document(s)" in out and "--where matched no document" in out
