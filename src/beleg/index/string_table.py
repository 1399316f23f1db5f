"""Strings of a persisted view stored as arrays, so opening a view decodes none of them.

A view at 100k chunks holds 100k chunk ids and a vocabulary of tens of thousands of terms.
Kept as JSON, every ``beleg search`` process decoded all of them at open (about 25 ms of a
0.2-0.3 s process) to use a handful: the ids of ten hits, the ids of the query's terms.
Here the strings are one UTF-8 blob plus offsets (``.npy`` files, memory-mapped), and a
string is decoded when it is asked for.

* :class:`StringTable`: a read-only sequence (chunk id of each chunk position).
* :class:`TermIds`: a read-only mapping term → term id over a table sorted by UTF-8
  bytes; a lookup is a binary search (about 17 probes at 100k terms).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np


def encode(strings: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(blob, offsets)``: string ``i`` is ``blob[offsets[i]:offsets[i + 1]]`` in UTF-8."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


class StringTable(Sequence[str]):
    """The strings of :func:`encode`'s arrays, decoded one at a time."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        if offsets.ndim != 1 or len(offsets) == 0 or int(offsets[-1]) != len(blob):
            raise ValueError(f"string table offsets end at {int(offsets[-1]) if len(offsets) else None}, "
                             f"the blob holds {len(blob)} bytes")
        self._blob = blob
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def raw(self, i: int) -> bytes:
        """String ``i`` as its UTF-8 bytes (no bounds beyond the array's own)."""
        return self._blob[self._offsets[i] : self._offsets[i + 1]].tobytes()

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"string {i} of {n}")
        return self.raw(i).decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        # One decode of the whole blob, then slices: iterating (updates, graph building) is
        # as fast as a decoded list.
        text = self._blob.tobytes()
        offsets = self._offsets.tolist()
        for a, b in zip(offsets, offsets[1:]):
            yield text[a:b].decode("utf-8")


def sorted_terms(vocab: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(blob, offsets, ids)`` of ``vocab``'s terms in UTF-8 byte order, for :class:`TermIds`."""
    items = sorted(vocab.items(), key=lambda kv: kv[0].encode("utf-8"))
    blob, offsets = encode(t for t, _ in items)
    return blob, offsets, np.array([i for _, i in items], dtype=np.int64)


class TermIds(Mapping[str, int]):
    """term → term id, looked up by binary search in a table sorted by UTF-8 bytes."""

    def __init__(self, table: StringTable, ids: np.ndarray) -> None:
        if len(ids) != len(table):
            raise ValueError(f"{len(ids)} term ids for {len(table)} terms")
        self._table = table
        self._ids = ids

    def _find(self, term: object) -> int | None:
        if not isinstance(term, str):
            return None
        key = term.encode("utf-8")
        at = bisect.bisect_left(range(len(self._table)), key, key=self._table.raw)
        if at < len(self._table) and self._table.raw(at) == key:
            return at
        return None

    def __getitem__(self, term: str) -> int:
        at = self._find(term)
        if at is None:
            raise KeyError(term)
        return int(self._ids[at])

    def __contains__(self, term: object) -> bool:
        return self._find(term) is not None

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)
