"""One registry for every pluggable kind: name → lazily imported ``module:attribute``.

Built-ins and plugins register the same way. A built-in is a row given when the registry
is made; a separate package adds one with :meth:`Registry.register` at import time, or
without any import through an entry point in the ``beleg.<kind>`` group of its
``pyproject.toml``::

    [project.entry-points."beleg.strategies"]
    my-strategy = "my_package.strategy:MyStrategy"

Nothing is imported until a name is loaded, so ``beleg`` starts fast and an optional
backend's missing package only matters when that backend is asked for. Installed plugins
are read only when a name is not known already or the whole list is wanted: a plugin
never replaces a built-in of the same name (register explicitly to do that), and reading
them imports :mod:`importlib.metadata` and scans every installed distribution, about
50 ms of a command's start-up. Unknown names get an error listing what exists, with a
"Did you mean" when one is close.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, NamedTuple

from beleg.errors import ConfigError

log = logging.getLogger(__name__)


class Entry(NamedTuple):
    """Where a registered name lives: ``module``'s ``attr``, with a one-line description."""

    module: str
    attr: str
    description: str = ""

    @classmethod
    def parse(cls, target: str, description: str = "") -> Entry:
        """``"package.module:Attribute"`` (an entry point's value) → an entry."""
        module, sep, attr = target.partition(":")
        if not sep or not module.strip() or not attr.strip():
            raise ConfigError(f"a registry target must look like 'package.module:Attribute', got {target!r}")
        return cls(module.strip(), attr.strip(), description)


class Registry(MutableMapping[str, Entry]):
    """Names of one kind (``strategies``, ``rerankers`` …) and where to import them from.

    A mapping of name → :class:`Entry`; assigning a plain ``(module, attr, description)``
    tuple works too. Entry points of the group ``beleg.<kind>`` are read on first lookup.
    """

    def __init__(self, kind: str, builtins: Mapping[str, tuple[str, str, str]] | None = None, *,
                 noun: str | None = None) -> None:
        self.kind = kind
        self.group = f"beleg.{kind}"
        #: How an error names one item ("strategy", "reranker kind").
        self.noun = noun or kind.rstrip("s")
        self._entries: dict[str, Entry] = {name: Entry(*row) for name, row in (builtins or {}).items()}
        self._plugins_read = False

    # ------------------------------------------------------------------ mapping
    def __getitem__(self, name: str) -> Entry:
        if name not in self._entries:
            self._read_plugins()
        return self._entries[name]

    def __setitem__(self, name: str, value: tuple[str, str, str] | Entry) -> None:
        self._entries[name] = Entry(*value)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._read_plugins()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._read_plugins()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._read_plugins()
        return name in self._entries

    # ------------------------------------------------------------------ registering and loading
    def register(self, name: str, target: str, description: str = "") -> None:
        """Make ``name`` load ``target`` (``"package.module:Attribute"``), replacing any entry."""
        self._entries[name] = Entry.parse(target, description)

    def entry(self, name: str) -> Entry:
        """The entry of ``name``; unknown names raise :class:`ConfigError` with a "Did you mean"."""
        if name not in self._entries:
            self._read_plugins()
        found = self._entries.get(name)
        if found is None:
            raise ConfigError(f"unknown {self.noun} {name!r}; available: {', '.join(self._entries)}.{self.hint(name)}")
        return found

    def hint(self, name: str) -> str:
        """`` Did you mean 'x'?`` for the closest registered name, or ``""``."""
        self._read_plugins()
        close = difflib.get_close_matches(name, list(self._entries), n=1)
        return f" Did you mean {close[0]!r}?" if close else ""

    def load(self, name: str) -> Any:
        """The registered attribute (usually a class), imported now."""
        found = self.entry(name)
        module = importlib.import_module(found.module)
        try:
            return getattr(module, found.attr)
        except AttributeError:
            raise ConfigError(f"{self.noun} {name!r} is registered as {found.module}:{found.attr}, "
                              f"but {found.module} has no {found.attr!r}; fix the registration") from None

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        from importlib.metadata import entry_points  # here, not at the top: see the module docstring

        for point in entry_points(group=self.group):
            if point.name in self._entries:
                log.warning("entry point %s=%s of group %s ignored: %r is registered already",
                            point.name, point.value, self.group, point.name)
                continue
            try:
                dist = point.dist.name if point.dist is not None else "a plugin"
                self._entries[point.name] = Entry.parse(point.value, f"from {dist}")
            except ConfigError as exc:
                log.warning("entry point %s of group %s ignored: %s", point.name, self.group, exc)
