"""Which stored document a file is: by where it is, and, once it has left there, by what it holds.

A document records its file's resolved location. While the file is there, that location
decides (``beleg.ingest.pipeline._whose``). Once nothing is at the recorded location any more, the file was
moved or deleted, and a file found elsewhere takes the document over only when it is
plausibly the same file moved (:func:`not_moved_here`): the same bytes, and the same path
below the same ingest root folder name. Another file that merely shares the folder name
(``teamB/docs/README.md`` after ``teamA/docs`` was archived) must not replace it silently.
"""

from __future__ import annotations

from pathlib import Path


def same_place_below_root(recorded: str, location: str, key: str) -> bool:
    """Whether two resolved locations end in the same path below the ingest root, root folder
    name included (``key``, the id key: ``corpus/en/a.md`` has three parts). Locations are
    compared rather than the key itself so that a root reached through a symlink compares
    by the folders the files really lie in."""
    depth = len(Path(key).parts)
    return Path(recorded).parts[-depth:] == Path(location).parts[-depth:]


def not_moved_here(recorded: str, stored_hash: str, location: str, key: str | None, content_hash: str) -> str | None:
    """Why the file at ``location`` (its id key ``key``; None for a declared ``id:``, which
    names the document itself) is not the stored document's file moved there, or None when
    it plausibly is. The caller has found nothing at the recorded location any more.

    A move is followed only for the same bytes: a file edited on the way cannot be told from
    another file of the same name, and taking it would replace a document without a word."""
    if key is not None and not same_place_below_root(recorded, location, key):
        depth = len(Path(key).parts)
        return (f"its file was at {recorded}, which is gone, and {'/'.join(Path(location).parts[-depth:])} "
                "is not the same path below its folder")
    if stored_hash != content_hash:
        return f"its file was at {recorded}, which is gone, and this file's content differs from the stored document"
    return None
