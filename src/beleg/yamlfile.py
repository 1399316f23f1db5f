"""Reading the YAML that users write (front matter, gold sets, metadata rules) safely.

Every YAML in Beleg goes through :func:`load_yaml`, a ``SafeLoader`` with three changes:

* Aliases (``*name``) are refused. Expanding them is how a 332-byte "billion laughs" file
  grows to gigabytes, and a self-referencing anchor (``a: &a [*a]``) builds a cyclic list
  that recursion then trips over. Nothing a person writes as metadata needs them.
* Nesting deeper than :data:`MAX_DEPTH` is refused: PyYAML composes nodes recursively, so
  ``[[[[...]]]]`` would otherwise end in a ``RecursionError``.
* Numbers under the keys in :data:`TEXT_KEYS` keep their written form as a string
  (``version: 2.10`` gives ``"2.10"``, not the float ``2.1``; ``id: 007`` gives ``"007"``,
  not YAML 1.1's octal ``7``). These values are labels that look like numbers; turning
  them into numbers and back loses what the author wrote, and ``version = 2.10`` would
  then match a document that declared 2.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from beleg.errors import ConfigError

#: Keys whose int/float-looking scalars stay the string the author wrote (also inside a
#: list under the key, as in ``acl: [0042, 17]``). Keys are matched case-insensitively.
TEXT_KEYS = frozenset({"version", "versions", "id", "title", "tenant", "product", "acl", "tags"})
#: Keys that may appear only once in a mapping, however spelled (``tenant`` and ``TENANT``):
#: YAML readers keep the last of two, so a second one would silently decide who may read a
#: document, unseen by whoever reads the first.
UNIQUE_KEYS = frozenset({"tenant", "acl"})
#: Deepest nesting of lists/mappings accepted; real metadata stays under five levels.
MAX_DEPTH = 32

_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_STR_TAG = "tag:yaml.org,2002:str"


class YamlAliasError(ComposerError):
    """The YAML uses an alias (``*name``), which Beleg does not expand."""


class YamlDepthError(ComposerError):
    """The YAML nests lists/mappings deeper than :data:`MAX_DEPTH`."""


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` without alias expansion, with a depth limit and written-form labels."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlAliasError(None, None, f"alias *{event.anchor} is not expanded", event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlDepthError(None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1

    def construct_document(self, node: Node) -> Any:
        _keep_written_labels(node)
        _refuse_repeated_keys(node)
        return super().construct_document(node)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # PyYAML's builders fail with bare ValueError/IndexError/... on values their tag
        # cannot hold ('!!float abc', an empty '!!float', '2024-13-45'); report them as
        # YAML errors at the value's position instead.
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError) as exc:
            shown = repr(node.value)[:40] if isinstance(node, ScalarNode) else type(node).__name__
            problem = f"cannot read {shown} as {node.tag.rsplit(':', 1)[-1]} ({exc})"
            raise ConstructorError(None, None, problem, node.start_mark) from None


def _mappings(root: Node) -> Iterator[MappingNode]:
    """Every mapping node of the tree (aliases are refused, so it is a tree of depth <= MAX_DEPTH)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, MappingNode):
            yield node
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


def _keep_written_labels(root: Node) -> None:
    """Retag int/float scalars under :data:`TEXT_KEYS` as strings (their source text)."""
    for node in _mappings(root):
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value.strip().lower() in TEXT_KEYS:
                items = value.value if isinstance(value, SequenceNode) else [value]
                for item in items:
                    if isinstance(item, ScalarNode) and item.tag in _NUMBER_TAGS:
                        item.tag = _STR_TAG


def _refuse_repeated_keys(root: Node) -> None:
    """A key of :data:`UNIQUE_KEYS` given twice in one mapping is an error at its second place."""
    for node in _mappings(root):
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode):
                name = key.value.strip().lower()
                if name in UNIQUE_KEYS and name in seen:
                    raise ConstructorError(None, None, f"'{name}' is given twice; keep one", key.start_mark)
                seen.add(name)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with the rules in the module docstring.

    Raises :class:`YamlAliasError` or :class:`YamlDepthError` for the refused inputs and
    another ``yaml.MarkedYAMLError`` for invalid YAML, including values their tag cannot
    hold (``2024-13-45``, ``!!float abc``); all of them carry the line.
    """
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: str | Path, what: str) -> Any:
    """Parse ``path``; unreadable or invalid files raise :class:`ConfigError` naming ``what`` and the file."""
    p = Path(path)
    try:
        return load_yaml(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {p} is not valid UTF-8 (byte offset {exc.start}); re-save it as UTF-8") from None
    except YamlAliasError as exc:
        raise ConfigError(
            f"{what} {p} uses YAML aliases (&name/*name) at {_where(exc)}, which Beleg does not expand; "
            "write the values out"
        ) from None
    except YamlDepthError as exc:
        raise ConfigError(f"{what} {p} nests deeper than {MAX_DEPTH} levels at {_where(exc)}") from None
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{what} {p} is not valid YAML: {reason}") from None


def _where(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark
    return f"line {mark.line + 1}" if mark is not None else "an unknown line"
