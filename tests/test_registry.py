"""The one registry behind strategies, rerankers, embedders, stores, readers and LLM providers:
lazy imports, "did you mean", register(), and entry points of a separately installed package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from beleg.backends.embedders import EMBEDDERS, load_embedder
from beleg.backends.llms import LLMS, Provider, load_llm
from beleg.backends.rerankers import RERANKERS, load_reranker
from beleg.errors import ConfigError, UnsupportedFormatError
from beleg.index.ports import STORES
from beleg.ingest.readers import READERS, reader_for
from beleg.registry import Entry, Registry
from beleg.strategies import STRATEGIES, load_strategy


def _plugin(tmp_path: Path, group: str, name: str, module: str, body: str) -> None:
    """Install a tiny distribution with one entry point into a folder on sys.path."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    info = tmp_path / "beleg_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: beleg-test-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {module}:Thing\n", encoding="utf-8")


def _run_with_plugin(tmp_path: Path, code: str) -> str:
    """Run ``code`` in a fresh interpreter that sees the plugin in ``tmp_path`` (the process's
    own registries read entry points once, at their first lookup)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_unknown_names_get_the_list_and_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'multi-qeury'.*Did you mean 'multi-query'\?"):
        load_strategy("multi-qeury")
    with pytest.raises(ConfigError, match=r"unknown reranker kind 'onxx'.*Did you mean 'onnx'\?"):
        load_reranker("onxx:model")
    with pytest.raises(ConfigError, match=r"unknown embedder 'e5-smal'.*Did you mean 'e5-small'\?"):
        load_embedder("e5-smal")
    with pytest.raises(ConfigError, match=r"unknown store 'postgres'.*Did you mean 'postgresql'\?"):
        STORES.entry("postgres")
    with pytest.raises(ConfigError, match=r"unknown LLM provider 'olama' in 'olama:llama3'.*Did you mean 'ollama'\?"):
        load_llm("olama:llama3")
    with pytest.raises(UnsupportedFormatError, match=r"suffix '\.mdx'.*supported: .*\.md.* Did you mean '\.md'\?"):
        reader_for(Path("notes/intro.mdx"))


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
    for registry in (STRATEGIES, RERANKERS, EMBEDDERS, STORES, READERS, LLMS):
        for name, entry in registry.items():
            if name == "postgresql":  # needs psycopg, an optional dependency
                continue
            try:
                registry.load(name)
            except ImportError as exc:  # an optional backend's own dependency may be missing, not the module
                assert exc.name != entry.module, exc


def test_an_installed_package_adds_an_llm_provider_and_a_misspelt_one_gets_a_did_you_mean(tmp_path: Path) -> None:
    _plugin(tmp_path, "beleg.llms", "echo-cloud", "beleg_echo_llm", """
        class Thing:
            default_base_url = "https://echo.example/v1"
            key_env = None

            def __init__(self, model, **settings):
                self.model, self.settings = model, settings
    """)
    out = _run_with_plugin(tmp_path, """
        from beleg.backends.llms import load_llm
        from beleg.errors import ConfigError

        llm = load_llm("echo-cloud:big-model", timeout_s=5)
        print(type(llm).__module__, llm.model, llm.settings["base_url"], llm.settings["name"])
        try:
            load_llm("echo-clod:big-model")
        except ConfigError as exc:
            print(exc)
    """)
    first, second = out.splitlines()
    assert first == "beleg_echo_llm big-model https://echo.example/v1 echo-cloud:big-model"
    assert "unknown LLM provider 'echo-clod'" in second and "Did you mean 'echo-cloud'?" in second


class FakeCloud:
    """A test double registered under its own prefix, as any backend is."""

    def __init__(self, model: str, **settings: object) -> None:
        self.model, self.settings = model, settings


FAKE_CLOUD = Provider(FakeCloud, "https://fake.example/v1", "FAKE_CLOUD_KEY")


def test_a_registered_provider_gets_its_defaults_and_its_required_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LLMS, "fake-cloud", Entry(__name__, "FAKE_CLOUD", "a test double"))
    monkeypatch.delenv("FAKE_CLOUD_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"'fake-cloud:m' needs an API key: set FAKE_CLOUD_KEY"):
        load_llm("fake-cloud:m")
    monkeypatch.setenv("FAKE_CLOUD_KEY", "k-123")
    llm = load_llm("fake-cloud:m")
    assert isinstance(llm, FakeCloud)
    assert llm.settings["base_url"] == "https://fake.example/v1" and llm.settings["api_key"] == "k-123"
    with pytest.raises(ConfigError, match="registered as a Provider or a backend class"):
        Provider.of("not a class")


def test_an_installed_package_adds_a_reader_for_a_new_suffix(tmp_path: Path) -> None:
    _plugin(tmp_path, "beleg.readers", ".rst", "beleg_rst_reader", """
        from beleg.types import ParsedDocument

        class Thing:
            suffixes = (".rst",)

            def read(self, data, path, encoding=None):
                return ParsedDocument(text=data.decode(), title=path.stem)
    """)
    out = _run_with_plugin(tmp_path, """
        from pathlib import Path
        from beleg.ingest.readers import reader_for, supported_suffixes

        print(".rst" in supported_suffixes(), reader_for(Path("Guide.RST")).read(b"Hello", Path("Guide.rst")).text)
    """)
    assert out == "True Hello"
