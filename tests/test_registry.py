"""The one registry behind strategies, rerankers, embedders and stores: lazy imports,
"did you mean", register(), and entry points of a separately installed package."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from beleg.backends.embedders import EMBEDDERS, load_embedder
from beleg.backends.rerankers import RERANKERS, load_reranker
from beleg.errors import ConfigError
from beleg.index.ports import STORES
from beleg.registry import Entry, Registry
from beleg.strategies import STRATEGIES, load_strategy


def _plugin(tmp_path: Path, group: str, name: str, module: str, body: str) -> None:
    """Install a tiny distribution with one entry point into a folder on sys.path."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    info = tmp_path / "beleg_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: beleg-test-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {module}:Thing\n", encoding="utf-8")


def test_unknown_names_get_the_list_and_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'multi-qeury'.*Did you mean 'multi-query'\?"):
        load_strategy("multi-qeury")
    with pytest.raises(ConfigError, match=r"unknown reranker kind 'onxx'.*Did you mean 'onnx'\?"):
        load_reranker("onxx:model")
    with pytest.raises(ConfigError, match=r"unknown embedder 'e5-smal'.*Did you mean 'e5-small'\?"):
        load_embedder("e5-smal")
    with pytest.raises(ConfigError, match=r"unknown store 'postgres'.*Did you mean 'postgresql'\?"):
        STORES.entry("postgres")


def test_nothing_is_imported_until_a_name_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "beleg_lazy_mod.py").write_text("class Thing:\n    made = True\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("tests-lazy", {"thing": ("beleg_lazy_mod", "Thing", "a thing")})
    assert "thing" in registry and registry["thing"] == Entry("beleg_lazy_mod", "Thing", "a thing")
    assert "beleg_lazy_mod" not in sys.modules
    assert registry.load("thing").made is True
    assert "beleg_lazy_mod" in sys.modules


def test_register_adds_and_bad_targets_are_refused() -> None:
    registry = Registry("tests-register", noun="widget")
    registry.register("fusion", "beleg.retrieve.fusion:rrf", "reciprocal rank fusion")
    assert registry.load("fusion")([["a"], ["a", "b"]])[0][0] == "a"
    with pytest.raises(ConfigError, match="package.module:Attribute"):
        registry.register("bad", "beleg.retrieve.fusion")
    registry.register("typo", "beleg.retrieve.fusion:rff")
    with pytest.raises(ConfigError, match=r"widget 'typo' is registered as beleg.retrieve.fusion:rff"):
        registry.load("typo")


def test_an_installed_package_adds_a_strategy_through_its_entry_point(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, "beleg.strategies", "echo-plugin", "beleg_echo_plugin", """
        class Thing:
            name = "echo-plugin"
            offline = True
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("strategies", dict(STRATEGIES.items()))  # a fresh read of the entry points
    assert "echo-plugin" in registry and registry["echo-plugin"].description == "from beleg-test-plugin"
    assert registry.load("echo-plugin")().offline is True
    assert registry["hybrid"] == STRATEGIES["hybrid"]  # built-ins unchanged


def test_a_plugin_never_replaces_a_builtin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, "beleg.rerankers", "onnx", "beleg_fake_onnx", "class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("rerankers", dict(RERANKERS.items()))
    assert registry["onnx"].module == "beleg.backends.rerankers.onnx"


def test_every_builtin_row_points_at_something_that_exists() -> None:
    for registry in (STRATEGIES, RERANKERS, EMBEDDERS, STORES):
        for name, entry in registry.items():
            if name == "postgresql":  # needs psycopg, an optional dependency
                continue
            try:
                registry.load(name)
            except ImportError as exc:  # an optional backend's own dependency may be missing, not the module
                assert exc.name != entry.module, exc
