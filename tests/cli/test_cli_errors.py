"""Errors at the CLI boundary: one line on stderr, a non-zero exit, no traceback, the index unchanged.

Disk full is real (RLIMIT_FSIZE in a subprocess, SIGXFSZ ignored, so writes past the limit
fail with EFBIG); a path under a file is a real NotADirectoryError; permission errors are
simulated in-process (the tests run as root, whom chmod does not stop). A closed stdout
(``beleg ... | head``) ends the command quietly with 141 (128 + SIGPIPE) or 0.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import beleg
from beleg.cli.main import main

DOCS = {
    "relay.md": "---\ntitle: Relay guide\nstatus: current\n---\n# Relay guide\n\n"
                "Restart the relay service after every configuration change.\n",
    "queues.md": "---\ntitle: Queue guide\nowners:\n  team: ops\n  pager: '+49 30 1234'\ntags: [queues, ops]\n---\n"
                 "# Queues\n\nDead-letter queues keep failed messages for the relay.\n",
    "long.md": "# Long\n\n" + " ".join(f"Paragraph {i} explains how the relay retries webhooks." for i in range(40)),
}
# Runs a beleg command with a file size limit; SIGXFSZ ignored, so a write past it fails with EFBIG.
_LIMITED = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "n = int(sys.argv[1])\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))\n"
            "from beleg.cli.main import main\n"
            "sys.exit(main(sys.argv[2:]))\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    root = tmp_path_factory.mktemp("errors")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    with beleg.open(root / "kb", embedder=embedder) as kb:
        assert kb.ingest([str(docs)], progress=False).count("added") == 3
    return root / "kb"


@pytest.fixture()
def index(built: Path, tmp_path: Path) -> Path:
    """A fresh copy of the built index for each test (closed, so its WAL is folded in)."""
    shutil.copytree(built, tmp_path / "kb")
    return tmp_path / "kb"


def _state(index: Path) -> dict[str, Any]:
    """What must not change: integrity and row counts of the live catalog, and the files there."""
    db = sqlite3.connect(f"file:{index / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        counts = {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("documents", "chunks", "terms", "embeddings")}
        return {"integrity": db.execute("PRAGMA integrity_check").fetchone()[0], **counts,
                "live": (index / "LIVE").read_text() if (index / "LIVE").exists() else None}
    finally:
        db.close()


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("beleg: error: ") and "Traceback" not in err, err
    return lines[0]


def _subprocess(argv: list[str], *, fsize: int | None = None, close_stdout: bool = False) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    cmd = ([sys.executable, "-c", _LIMITED, str(fsize), *argv] if fsize is not None
           else [sys.executable, "-m", "beleg", *argv])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    if close_stdout:
        proc.stdout.close()  # the reader goes away before the command writes anything
        err = proc.stderr.read()
        proc.wait(timeout=120)
    else:
        _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


@pytest.mark.parametrize("fsize", [4096, 48_000])
def test_disk_full_during_delete_is_one_line_and_changes_nothing(index: Path, fsize: int) -> None:
    before = _state(index)
    code, err = _subprocess(["delete", "--index", str(index), "--where", "title = 'Long'"], fsize=fsize)
    assert code == 1
    line = _one_error_line(err)
    assert str(index) in line and ("disk" in line or "File too large" in line), line
    assert _state(index) == before


def test_disk_full_during_ingest_is_one_line_and_changes_nothing(index: Path, tmp_path: Path) -> None:
    big = tmp_path / "more"
    big.mkdir()
    (big / "big.md").write_text("# Big\n\n" + "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"Clause {i}.{j} covers relay queue retention." for j in range(30))
        for i in range(8)), encoding="utf-8")
    before = _state(index)
    code, err = _subprocess(["ingest", str(big), "--index", str(index), "--no-progress"], fsize=48_000)
    assert code == 1
    _one_error_line(err)
    assert _state(index) == before


def test_index_path_under_a_file_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "afile").write_text("not a folder", encoding="utf-8")
    bad = str(tmp_path / "afile" / "kb")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    for argv in (["init", "--index", bad], ["ingest", str(tmp_path / "docs"), "--index", bad, "--no-progress"],
                 ["status", "--index", bad], ["delete", "--doc", "x", "--index", bad], ["gc", "--index", bad]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 1, (argv, out, err)
        assert bad in _one_error_line(err), (argv, err)


@pytest.mark.parametrize("size", ["inf", "nan", "1e400", "0", "-5"])
def test_a_file_size_limit_that_is_no_size_is_one_line(tmp_path: Path, size: str, capsys) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    code = main(["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "kb"), "--no-progress",
                 "--max-file-mb", size])
    out, err = capsys.readouterr()
    assert code == 1 and "--max-file-mb" in _one_error_line(err), (out, err)
    assert not (tmp_path / "kb").exists()  # refused before the index is created


def test_permission_denied_writing_live_is_one_line(index: Path, embedder, capsys, monkeypatch) -> None:
    with beleg.open(index, embedder=embedder) as kb:
        new = kb.reindex(beleg.IndexConfig(beleg.ChunkingConfig("window", 60, 10)), progress=False)["version"]
    before = _state(index)
    import beleg.index.versions as versions

    def denied(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(versions.os, "replace", denied)
    code = main(["switch", new, "--index", str(index)])
    _, err = capsys.readouterr()
    assert code == 1
    line = _one_error_line(err)
    assert "Permission denied" in line and str(index / "LIVE") in line
    monkeypatch.undo()
    assert _state(index) == before and not (index / "LOCK").exists()


def test_catalog_that_cannot_be_opened_is_one_line_naming_the_index(index: Path, capsys, monkeypatch) -> None:
    import beleg.index.catalog as catalog

    def cannot_open(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(catalog.sqlite3, "connect", cannot_open)
    code = main(["status", "--index", str(index)])
    _, err = capsys.readouterr()
    assert code == 1
    line = _one_error_line(err)
    assert "unable to open" in line and str(index) in line


@pytest.mark.parametrize("argv", [["status", "--json"], ["search", "relay", "--mode", "bm25", "--json"]])
def test_closed_stdout_exits_quietly(index: Path, argv: list[str]) -> None:
    code, err = _subprocess([*argv, "--index", str(index)], close_stdout=True)
    assert err == "", err
    assert code in (0, 141)


@pytest.mark.parametrize("argv", [["status", "--json"], ["search", "relay", "--mode", "bm25", "--json"]])
def test_pipe_into_head_exits_quietly(index: Path, argv: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    cmd = " ".join([sys.executable, "-m", "beleg", *[f"'{a}'" for a in argv], "--index", str(index)])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} | head -c 10"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert len(proc.stdout) == 10 and proc.stderr == "", proc.stderr
    assert proc.returncode in (0, 141)


@pytest.mark.parametrize("where", ["owners = ops", "owners.team = ops", "owners >= 3", "tags = ops",
                                   "owners in (ops, dev)"])
def test_filter_on_a_non_scalar_value_is_no_traceback(index: Path, where: str, capsys) -> None:
    before = _state(index)
    for argv in (["search", "relay", "--mode", "bm25", "--where", where, "--json"],
                 ["delete", "--where", where, "--json"]):
        if argv[0] == "delete" and where in ("tags = ops", "owners in (ops, dev)"):
            continue  # these may legitimately match (list membership): the delete would be real
        code = main([*argv, "--index", str(index)])
        _, err = capsys.readouterr()
        assert code in (0, 1), (argv, err)
        if code:
            _one_error_line(err)
        else:
            assert "Traceback" not in err
    if where not in ("tags = ops", "owners in (ops, dev)"):
        assert _state(index)["documents"] == before["documents"]


@pytest.mark.parametrize("encoding", ["rot13", "base64", "unicode_escape", "no-such-codec"])
def test_an_encoding_that_is_not_one_is_one_line_before_anything_is_read(tmp_path: Path, encoding: str,
                                                                         capsys) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Text.\n", encoding="utf-8")
    code = main(["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "kb"), "--no-progress",
                 "--encoding", encoding])
    out, err = capsys.readouterr()
    assert code == 1 and "--encoding" in _one_error_line(err) and not out, (out, err)
    assert not (tmp_path / "kb").exists()


def test_control_characters_in_a_file_name_stay_on_one_line(tmp_path: Path, capsys) -> None:
    """A newline or an escape sequence in a file name is shown escaped in the human report."""
    (tmp_path / "docs").mkdir()
    for name in ("a\nb.txt", "ctl\x1b[31mred.txt"):
        (tmp_path / "docs" / name).write_text("Plain text about zebras.\n", encoding="utf-8")
    assert main(["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "kb"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "a\\nb.txt" in out and "ctl\\x1b[31mred.txt" in out
    assert [line for line in out.splitlines() if line.strip().startswith("added")] and "\nb.txt" not in out


def test_a_file_given_as_index_is_called_a_file(tmp_path: Path, capsys) -> None:
    gold = tmp_path / "gold.yaml"
    gold.write_text("version: 1\n", encoding="utf-8")
    for argv in (["search", "x", "--index", str(gold)], ["ingest", str(gold), "--index", str(gold), "--no-progress"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1 and f"{gold} is a file, not an index" in _one_error_line(err), err
        assert "beleg init" not in err
    assert gold.read_text(encoding="utf-8") == "version: 1\n"


def test_an_ingest_that_found_nothing_leaves_no_new_index(tmp_path: Path, capsys) -> None:
    code = main(["ingest", str(tmp_path / "wrong" / "path"), "--index", str(tmp_path / "new"), "--no-progress"])
    assert code == 1 and "no such file or folder" in capsys.readouterr().out
    assert not (tmp_path / "new").exists()


def test_a_dangling_symlink_says_its_target_does_not_exist(tmp_path: Path, capsys) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ok.md").write_text("# OK\n\nText.\n", encoding="utf-8")
    (tmp_path / "docs" / "gone.md").symlink_to(tmp_path / "elsewhere" / "gone.md")
    code = main(["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "kb"), "--no-progress"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "gone.md" in x)
    assert code == 0 and "which does not exist" in line and "--follow-symlinks" not in line


def test_a_mistyped_option_gets_a_suggestion(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["search", "x", "--indx", "kb"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --indx kb; --indx: did you mean --index?" in capsys.readouterr().err
