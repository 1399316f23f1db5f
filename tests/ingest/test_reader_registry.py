"""A reader registered for a new suffix is used by ``beleg ingest``: files of that suffix
are found in folders, read by it, and searchable; the built-in suffixes stay as they are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from beleg.cli.main import main
from beleg.errors import ConfigError
from beleg.ingest.readers import READERS, reader_for, register_reader, suffix_key, supported_suffixes
from beleg.ingest.readers.markdown import MarkdownReader
from beleg.types import ParsedDocument


class RstReader:
    """reStructuredText, read crudely: the first line is the title, the rest the text."""

    suffixes = (".rst",)

    def read(self, data: bytes, path: Path, encoding: str | None = None) -> ParsedDocument:
        text = data.decode("utf-8")
        return ParsedDocument(text=text, title=text.splitlines()[0].strip())


@pytest.fixture
def rst_reader() -> Iterator[None]:
    register_reader(".RST", f"{__name__}:RstReader", "reStructuredText (test)")
    yield
    del READERS[".rst"]


def test_a_registered_reader_makes_beleg_ingest_read_its_suffix(tmp_path: Path, rst_reader: None,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "relay.rst").write_text("Relay guide\n===========\n\nThe relay drains the quarantine queue nightly.\n",
                                    encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\nNothing about relays here.\n", encoding="utf-8")
    index = str(tmp_path / "kb")
    assert main(["ingest", str(docs), "--index", index, "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(f["source"].rsplit("/", 1)[-1] for f in report["files"] if f["status"] == "added") == [
        "notes.md", "relay.rst"]
    assert main(["search", "quarantine queue", "--index", index, "--mode", "bm25", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and hits[0]["source"].endswith("relay.rst") and hits[0]["title"] == "Relay guide"


def test_registering_names_the_suffix_one_way(rst_reader: None) -> None:
    assert ".rst" in supported_suffixes() and ".md" in supported_suffixes()
    assert isinstance(reader_for(Path("a/Guide.Rst")), RstReader)
    assert reader_for(Path("a.rst")) is reader_for(Path("b.rst"))  # one instance serves every file
    assert isinstance(reader_for(Path("README.md")), MarkdownReader)
    assert suffix_key("RST") == suffix_key(".rst") == ".rst"
    for bad in ("tar.gz", ".", "", "a b"):
        with pytest.raises(ConfigError, match="a reader suffix looks like '.rst'"):
            suffix_key(bad)


def test_without_the_reader_the_suffix_is_unsupported() -> None:
    assert ".rst" not in supported_suffixes()
