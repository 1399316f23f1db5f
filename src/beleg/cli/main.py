"""The ``beleg`` command. Commands are thin: parse, call the library, render.

Errors print one line on stderr and exit non-zero (no traceback unless ``--debug``).
Machine-readable output (``--json``) goes to stdout; progress bars go to stderr.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from beleg.errors import BelegError
from beleg.kb import default_index_dir

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def _index_location(value: str) -> Any:
    """``--index``: a folder, or a ``postgresql://`` URL kept as it is (a Path would fold its ``//``)."""
    from beleg.index.postgres.config import is_postgres_url

    return value if is_postgres_url(value) else Path(value)


def _index_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", type=_index_location, default=None,
                   help="index directory or postgresql://user@host/db[?schema=NAME] "
                        "(default: $BELEG_INDEX, else ./.beleg)")


def _principal_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("who is asking (without these, only public documents are visible)")
    g.add_argument("--user", help="user id, matched against documents' acl")
    g.add_argument("--tenant", help="tenant; documents of other tenants are never visible")
    g.add_argument("--group", action="append", default=[], help="group or role, matched against acl (repeatable)")


def _principal(args: argparse.Namespace) -> Any:
    from beleg.types import Principal

    return Principal(args.user, args.tenant, tuple(args.group))


class _StrategyOption(argparse.Action):
    """``--strategy NAME``, whose help lists the strategies when it is shown, not when the parser
    is built: the list includes installed plugins, and reading those costs every command's start-up."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)

    @property  # type: ignore[override]
    def help(self) -> str:
        from beleg.strategy_registry import STRATEGIES

        return "retrieval strategy: " + ", ".join(STRATEGIES) + " (default hybrid; see docs/strategies.md)"

    @help.setter
    def help(self, value: str | None) -> None:
        pass  # the text above is the help


def _strategy_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", action=_StrategyOption, default="hybrid", metavar="NAME")


def _self_query_arg(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--self-query", choices=("rules", "llm", "off"), default=None,
                   help="read constraints (product, version, status, language, date range) from the question: "
                        "by rule, also by the LLM (its proposals kept only if they are values you may see), or "
                        "not at all (default: llm when an LLM is configured, else rules; see docs/strategies.md)")
    g.add_argument("--no-self-query", action="store_true", help="the same as --self-query off")


def _self_query_choice(args: argparse.Namespace) -> str:
    """--self-query/--no-self-query as a self_query= value; "auto" picks llm when an LLM is configured."""
    return "off" if args.no_self_query else (args.self_query or "auto")


def _llm_args(p: argparse.ArgumentParser, title: str) -> None:
    g = p.add_argument_group(title)
    g.add_argument("--llm", metavar="PROVIDER:MODEL",
                   help="e.g. ollama:llama3.1, openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5 (env BELEG_LLM)")
    g.add_argument("--llm-base-url", metavar="URL", help="OpenAI-compatible endpoint (env BELEG_LLM_BASE_URL)")
    g.add_argument("--llm-timeout", type=float, metavar="SECONDS", help="per-request timeout")
    g.add_argument("--config", type=Path, metavar="FILE", help="TOML config with an [llm] table (env BELEG_CONFIG)")


def _verifier_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("verifier")
    g.add_argument("--verifier", metavar="PROVIDER:MODEL",
                   help="check every answer with this LLM: it copies the answer out of an extractive answer's "
                        "source, which must be in the quote, or judges each claim of an LLM answer; a failed "
                        "check withholds the answer (docs/answers.md)")
    g.add_argument("--verifier-base-url", metavar="URL", help="OpenAI-compatible endpoint of --verifier")


def _verifier_from(args: argparse.Namespace) -> Any:
    """The --verifier LLM, only as named on the command line; None without the flag."""
    return _llm_from(args.verifier, args.verifier_base_url) if args.verifier else None


def _llm_from(spec: str | None, base_url: str | None = None, timeout_s: float | None = None,
              config_file: Path | None = None) -> Any:
    """The LLM these flags, the environment and the config file name; None when none is configured."""
    from beleg.backends.llms import load_llm, resolve_llm_config

    cli = {"spec": spec, "base_url": base_url, "timeout_s": timeout_s}
    config = resolve_llm_config({k: v for k, v in cli.items() if v is not None}, config_file=config_file)
    return load_llm(config) if config is not None else None


def _resolve_llm(args: argparse.Namespace) -> Any:
    return _llm_from(args.llm, args.llm_base_url, args.llm_timeout, args.config)


def _technique_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("retrieval techniques (off by default; measured in docs/strategies.md)")
    g.add_argument("--rerank", metavar="SPEC", help="rerank the top --candidates: a cross-encoder directory "
                   "(cross-encoder:DIR, onnx:DIR), bi-encoder[:EMBEDDER] or llm[:pointwise|listwise]")
    g.add_argument("--candidates", type=int, metavar="N", help="how many fused candidates --rerank reorders")
    g.add_argument("--ensemble", metavar="LEG:W,...", help="fuse weighted retrievers, e.g. bm25:1,dense:2,minilm:1")
    g.add_argument("--expand", metavar="neighbours=N", help="add N chunks before/after each hit in its section")
    g.add_argument("--compress", action="store_true", help="keep only the sentences of each hit that bear on the query")
    g.add_argument("--compress-budget", type=int, metavar="WORDS", help="words kept over all hits (default 400)")


def _techniques(args: argparse.Namespace, kb: Any) -> Any:
    """The --rerank/--ensemble/--expand/--compress options as kb.techniques (None when none is given)."""
    names = ("rerank", "candidates", "ensemble", "expand", "compress", "compress_budget")
    if not any(getattr(args, n, None) for n in names):
        return None
    from beleg.retrieve.techniques import from_specs

    rerank = args.rerank
    needs_llm = (rerank or "").startswith("llm") or (args.compress and getattr(args, "llm", None))
    return from_specs(expand=args.expand, compress=args.compress, compress_budget=args.compress_budget,
                      ensemble=args.ensemble, rerank=rerank, candidates=args.candidates,
                      embedder=kb.embedder if rerank == "bi-encoder" else None,
                      llm=_resolve_llm(args) if needs_llm else None)


def _answer_args(p: argparse.ArgumentParser) -> None:
    _strategy_arg(p)
    _technique_args(p)
    _self_query_arg(p)
    p.add_argument("--mode", choices=("dense", "bm25", "hybrid"), default="hybrid", help="retriever (default hybrid)")
    p.add_argument("-k", type=int, default=8, help="sources to retrieve (default 8)")
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE", help="metadata equality (repeatable)")
    p.add_argument("--where", metavar="EXPR", help="filter expression, e.g. \"version = 2.4\"")
    p.add_argument("--fusion", choices=("rrf", "weighted"), default="rrf", help="for every search (default rrf)")
    p.add_argument("--rrf-k", type=int, default=60)
    p.add_argument("--weights", default="1,1", metavar="BM25,DENSE", help="fusion weights (default 1,1)")
    p.add_argument("--mmr", type=float, default=None, metavar="LAMBDA", help="diversify every search with MMR (0..1)")
    _llm_args(p, "LLM (without one, answers are extractive: quoted sentences, offline)")
    _verifier_args(p)
    g = p.add_argument_group("prompt")
    g.add_argument("--order", choices=("rank", "edges"), default="rank",
                   help="source order in the prompt; 'edges' puts the best at both ends (lost in the middle)")
    g.add_argument("--budget", type=int, default=3000, metavar="TOKENS", help="prompt token budget (estimated)")
    g.add_argument("--no-stream", action="store_true", help="print the LLM answer when complete, not as it arrives")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="beleg", description="Retrieval with evidence you can check.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", help="create an index directory with a chunking/embedding configuration")
    _index_arg(p)
    p.add_argument("--embedder", default=None, help="embedding model spec (default: the offline e5 model)")
    p.add_argument("--chunking", choices=("structure", "window", "parent-child", "semantic"), default="structure",
                   help="parent-child: index sentence groups, return their sections; semantic: break at topic shifts")
    p.add_argument("--child-tokens", type=int, default=60, help="parent-child: child size in words (default 60)")
    p.add_argument("--max-tokens", type=int, default=220, help="chunk size in words")
    p.add_argument("--overlap", type=int, default=40, help="overlap in words (window chunking)")
    p.add_argument("--context", default="none", metavar="none|offline|llm:PROVIDER:MODEL",
                   help="contextual retrieval: a situating context indexed with each chunk (default none)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("ingest", help="ingest files, folders or globs (md, txt, html, pdf, docx)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    _index_arg(p)
    p.add_argument("--rules", type=Path, help="YAML metadata rules: {rules: [{match: GLOB, metadata: {...}}]}")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata for every file (repeatable)")
    p.add_argument("--encoding", help="encoding of text files that are not UTF-8 (e.g. latin-1)")
    p.add_argument("--max-file-mb", type=float, default=50.0, help="reject files larger than this")
    _progress_args(p)
    p.add_argument("--sync", action="store_true",
                   help="also delete documents ingested from these paths whose files no longer exist or are empty; "
                        "refused for a path all of whose documents would go (an unmounted share?)")
    p.add_argument("--allow-delete-all", action="store_true",
                   help="with --sync: delete every document of a path whose files are all gone (refused otherwise)")
    p.add_argument("--allow-widen", action="store_true",
                   help="accept re-ingests that remove or widen a document's tenant or acl (refused otherwise)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="ingest symlinked files that point outside the folder or glob (skipped otherwise)")
    p.add_argument("--sentence-vectors", action="store_true",
                   help="also embed every sentence the offline answerer scores (about 2x the embedding time; "
                        "without it the first answer that needs a sentence embeds and stores it)")
    p.add_argument("--config", help="beleg.toml whose [governance] status_synonyms extend the status vocabulary "
                                    "(default $BELEG_CONFIG, else ./beleg.toml)")
    p.add_argument("--json", action="store_true", help="print counts and failures as JSON")

    p = sub.add_parser("reindex", help="build a new chunking/embedding configuration beside the live one")
    _index_arg(p)
    p.add_argument("--embedder", default=None, help="embedding model spec (default: the live version's)")
    p.add_argument("--chunking", choices=("structure", "window", "parent-child", "semantic"), default=None)
    p.add_argument("--max-tokens", type=int, default=None, help="chunk size in words")
    p.add_argument("--overlap", type=int, default=None, help="overlap in words (window chunking)")
    p.add_argument("--context", default=None, metavar="none|offline|llm:PROVIDER:MODEL",
                   help="contextual retrieval for the new version (default: the live version's)")
    _progress_args(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("switch", help="make an index version live (atomic)")
    p.add_argument("version", metavar="VERSION")
    _index_arg(p)
    p.add_argument("--allow-document-loss", action="store_true",
                   help="switch to a version whose build never finished or that lacks documents of the live "
                        "version (refused otherwise)")

    p = sub.add_parser("gc", help="delete index versions that are not live")
    _index_arg(p)
    p.add_argument("--allow-document-loss", action="store_true",
                   help="also delete versions holding documents the live version lacks (kept otherwise)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("delete", help="erase documents (chunks, vectors, postings, terms) from every index version",
                       description="Exit status 0 when none of the named or matched documents is left in any "
                                   "version, also when a name or filter found none (reported).")
    p.add_argument("names", nargs="*", metavar="DOC_ID|PATH", help="as --doc")
    _index_arg(p)
    p.add_argument("--doc", action="append", default=[], metavar="DOC_ID|PATH",
                   help="document id, or the path of an ingested file (repeatable; 'beleg documents' lists both)")
    p.add_argument("--where", metavar="EXPR", help="delete every document matching this filter")
    p.add_argument("--finish", action="store_true",
                   help="finish an erasure that was interrupted (any delete, ingest or reindex also does)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("documents", help="list the stored documents: id, version, status, source, title")
    _index_arg(p)
    p.add_argument("--where", metavar="EXPR", help="only documents matching this filter, e.g. \"status = draft\"")
    p.add_argument("--json", action="store_true", help="print id, source, title and metadata of each as JSON")

    p = sub.add_parser("search", help="search the index")
    p.add_argument("query", metavar="QUERY")
    _index_arg(p)
    p.add_argument("--mode", choices=("dense", "bm25", "hybrid"), default="hybrid")
    p.add_argument("-k", type=int, default=10, help="number of hits (default 10)")
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE", help="metadata equality (repeatable)")
    p.add_argument("--where", metavar="EXPR", help="filter expression, e.g. \"version >= 2.4 and status = current\"")
    p.add_argument("--fusion", choices=("rrf", "weighted"), default="rrf")
    p.add_argument("--rrf-k", type=int, default=60)
    p.add_argument("--weights", default="1,1", metavar="BM25,DENSE", help="fusion weights (default 1,1)")
    p.add_argument("--mmr", type=float, default=None, metavar="LAMBDA", help="diversify with MMR (0..1)")
    _technique_args(p)
    _strategy_arg(p)
    _self_query_arg(p)
    _llm_args(p, "LLM for strategies that use one (rewrite, multi-query, hyde, decompose, agent, ...)")
    _principal_args(p)
    p.add_argument("--json", action="store_true", help="print hits and the trace (queries issued, steps) as JSON")

    p = sub.add_parser("eval", help="evaluate retrieval configurations on a gold set, side by side")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--beir", type=Path, metavar="DIR", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    src.add_argument("--squad", type=Path, action="append", metavar="FILE",
                     help="SQuAD-format JSON; repeat for a mixed corpus (e.g. English + German XQuAD)")
    src.add_argument("--gold", type=Path, metavar="FILE", help="Beleg YAML gold set (e.g. demo/gold.yaml)")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--queries-from", type=Path, metavar="FILE",
                   help="SQuAD file whose questions to ask (default: the first --squad file); e.g. German questions over English paragraphs")
    p.add_argument("--modes", default="dense,bm25,hybrid", help="configurations to compare (comma-separated)")
    p.add_argument("--strategies", metavar="NAMES",
                   help="compare retrieval strategies instead of --modes, e.g. hybrid,multi-query,decompose,multi-hop "
                        "(with LLM-call and latency columns; --llm gives them an LLM)")
    p.add_argument("-k", type=int, default=10, help="metric cut-off (default 10)")
    p.add_argument("--limit", type=int, help="evaluate only the first N queries")
    p.add_argument("--reranker", metavar="SPEC", help="cross-encoder (local directory) for the 'rerank' configuration")
    p.add_argument("--trec-out", type=Path, metavar="DIR", help="write one TREC run file per configuration")
    p.add_argument("--report", type=Path, metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--per-query", action="store_true", help="include per-query metrics in --json output")
    p.add_argument("--cache-dir", type=Path, help="where dataset indexes are cached (default ~/.cache/beleg)")
    p.add_argument("--index", type=_index_location, default=None,
                   help="evaluate on this existing index (holding the gold set's corpus) instead of a cached one")
    p.add_argument("--versions", metavar="V1,V2", help="with --index: compare these index versions side by side")
    p.add_argument("--answers", action="store_true",
                   help="evaluate answers (gold strings, refusals, citations, conflicts) instead of retrieval")
    p.add_argument("--llm", metavar="PROVIDER:MODEL", help="--answers: answer with this LLM (default: extractive)")
    p.add_argument("--llm-base-url", metavar="URL", help="--answers: endpoint of --llm")
    p.add_argument("--judge", metavar="PROVIDER:MODEL",
                   help="--answers: LLM that judges faithfulness and relevance (prompts in docs/answer-evaluation.md)")
    p.add_argument("--judge-base-url", metavar="URL", help="endpoint of --judge")
    _verifier_args(p)
    _progress_args(p)
    p.add_argument("--json", action="store_true")

    for name, help_text in (("ask", "answer a question with verified citations"),
                            ("chat", "a conversation: follow-up questions are resolved with the earlier ones")):
        p = sub.add_parser(name, help=help_text)
        if name == "ask":
            p.add_argument("question", metavar="QUESTION")
            p.add_argument("--context", action="append", default=[], metavar="EARLIER_QUESTION",
                           help="an earlier question of the conversation (repeatable, oldest first)")
        _index_arg(p)
        _answer_args(p)
        _principal_args(p)
        p.add_argument("--min-confidence", type=float, default=None, metavar="X",
                       help="refuse when the answer's confidence is below X in [0, 1], showing the closest passages "
                            "instead (default: 0.68 for offline answers, >= 90%% right on development data; 0 for LLM "
                            "answers; 0 answers whenever the sources allow; see docs/answers.md)")
        p.add_argument("--json", action="store_true", help="print the answer as JSON (one object per answer)")

    p = sub.add_parser("status", help="describe an index")
    _index_arg(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("migrate", help="copy an index to another backend (folder or postgresql://) without re-embedding")
    p.add_argument("source", type=_index_location, help="the index to copy (a folder or a postgresql:// URL)")
    p.add_argument("target", type=_index_location, help="where to copy it (created with the source's configuration)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("leaks", help="probe every retriever and answer path for permission leaks (exit 1 on a leak)")
    _index_arg(p)
    p.add_argument("--max-identifiers", type=int, default=5, metavar="N",
                   help="identifiers asked about per restricted document (default 5)")
    p.add_argument("--kinds", metavar="K,K", help="probe kinds (default all: search,filter,read-by-id,ask,chat,oracle)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")

    from beleg.cli.llm import add_parser as add_llm_parser

    add_llm_parser(sub)
    from beleg.cli.keys import add_parser as add_keys_parser
    from beleg.cli.serve import add_parser as add_serve_parser

    add_serve_parser(sub)
    add_keys_parser(sub)
    return parser


@contextmanager
def _open(args: argparse.Namespace, create: bool = False) -> Iterator[Any]:
    """The index of ``--index``, closed on exit. Writes a read skipped because the index is
    read-only to this process are noted on stderr, one line each: at the open and at the end."""
    from beleg.kb import KnowledgeBase

    kb = KnowledgeBase(args.index or default_index_dir(), create=create)
    _print_notes(kb.notes)
    shown = len(kb.notes)
    try:
        techniques = _techniques(args, kb)  # a missing --rerank model fails here, before any search
        if techniques is not None:
            kb.techniques = techniques
        yield kb
    finally:
        kb.close()
        _print_notes(kb.notes[shown:])


def _print_notes(notes: Sequence[str]) -> None:
    for line in notes:
        print(f"beleg: note: {line}", file=sys.stderr)


def _progress_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", choices=("auto", "bar", "lines", "none"), default="auto",
                   help="progress on stderr: a bar, a line every few seconds (for logs), or none; "
                        "auto: a bar on a terminal, lines otherwise (default)")
    p.add_argument("--no-progress", action="store_true", help="same as --progress none")


def _progress(args: argparse.Namespace) -> str:
    return "none" if args.no_progress else args.progress


def cmd_init(args: argparse.Namespace) -> int:
    from beleg.index.config import IndexConfig
    from beleg.ingest.chunking import ChunkingConfig
    from beleg.kb import KnowledgeBase

    defaults = IndexConfig()
    config = IndexConfig(ChunkingConfig(args.chunking, args.max_tokens, args.overlap, args.context,
                                        child_tokens=args.child_tokens), args.embedder or defaults.embedder)
    with KnowledgeBase(args.index or default_index_dir(), config) as kb:
        status = kb.status()
    print(json.dumps(status, indent=2) if args.json else f"index ready at {status['index']} (version {status['index_version']})")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from beleg.backends.llms.config import read_config_table
    from beleg.cli.render import Style, render_ingest
    from beleg.errors import ConfigError
    from beleg.ingest.metadata import load_rule_statuses, load_rules, parse_assignments, status_vocabulary

    if args.allow_delete_all and not args.sync:
        raise ConfigError("--allow-delete-all only lets --sync delete every document of a path; pass it with --sync")
    if not math.isfinite(args.max_file_mb) or args.max_file_mb <= 0:
        raise ConfigError(f"--max-file-mb {args.max_file_mb} is not a positive size in MB; give a value such as 200")
    if args.encoding:
        from beleg.ingest.readers.base import text_codec

        try:  # once, before the index is opened: not the same failure for every file
            text_codec(args.encoding)
        except BelegError as exc:
            raise ConfigError(f"--encoding: {exc}") from None
    rules = load_rules(args.rules) if args.rules else []
    meta = parse_assignments(args.meta) if args.meta else None
    statuses = status_vocabulary(read_config_table("governance", args.config).get("status_synonyms"),
                                 load_rule_statuses(args.rules) if args.rules else None,
                                 where="status synonyms ([governance] status_synonyms, or statuses: in --rules)")
    from beleg.cli.interrupt import StopOnSignals

    root = args.index or default_index_dir()
    new_folder = isinstance(root, Path) and not os.path.lexists(root)
    with _open(args, create=True) as kb, StopOnSignals() as stop:
        report = kb.ingest(args.paths, rules=rules, metadata=meta, encoding=args.encoding,
                           max_file_mb=args.max_file_mb, progress=_progress(args),
                           sync=args.sync, allow_delete_all=args.allow_delete_all, allow_widen=args.allow_widen,
                           follow_symlinks=args.follow_symlinks,
                           statuses=statuses, sentence_vectors=args.sentence_vectors, stop=stop)
        stored_nothing = new_folder and kb.catalog.counts()["documents"] == 0
    if stored_nothing:
        import shutil

        # A mistyped path must not leave an empty index behind, where the next command finds
        # "an index" with nothing in it; 'beleg init' is how to create an empty one.
        shutil.rmtree(root)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(render_ingest(report, Style(sys.stdout.isatty())))
    return EXIT_ERROR if report.failures else 0  # skipped files were left out on purpose: exit 0


def _weights(text: str) -> tuple[float, float]:
    """``--weights BM25,DENSE`` as two numbers."""
    from beleg.errors import ConfigError

    try:
        weights = tuple(float(w) for w in text.split(","))
    except ValueError:
        raise ConfigError(f"--weights expects two numbers like 1,0.5, got {text!r}") from None
    if len(weights) != 2:
        raise ConfigError(f"--weights expects two numbers (bm25,dense), got {text!r}")
    return weights  # type: ignore[return-value]


def cmd_search(args: argparse.Namespace) -> int:
    from beleg.cli.render import Style, render_hits
    from beleg.index.filters import from_assignments

    weights = _weights(args.weights)
    from beleg.service import SearchRequest, Service
    from beleg.strategy_registry import STRATEGIES

    STRATEGIES.entry(args.strategy)  # an unknown name fails before any work
    request = SearchRequest(args.query, mode=args.mode, k=args.k, filters=from_assignments(args.filter),
                            where=args.where, fusion=args.fusion, rrf_k=args.rrf_k, weights=weights,  # type: ignore[arg-type]
                            mmr=args.mmr, strategy=args.strategy, self_query=_self_query_choice(args))
    # A plain search needs an LLM only for the LLM self-query: --self-query llm, or --llm given.
    wants_llm = args.strategy != "hybrid" or args.self_query == "llm" or (
        args.llm is not None and args.self_query is None and not args.no_self_query)
    with _open(args) as kb:
        _note_unknown_keys(kb, request.filters, request.where, principal=_principal(args))
        service = Service(kb, llm=_resolve_llm(args) if wants_llm else None)
        result = service.search(request, _principal(args))
        hits, notes = result.hits, result.notes
        out = service.search_json(result) if args.json else None
        locations = {h.doc_id: kb.catalog.location(h.doc_id) for h in hits}
        index_empty = not hits and kb.catalog.counts()["documents"] == 0
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        style = Style(sys.stdout.isatty())
        for line in notes:  # say what the question's words changed, and how to switch it off
            print(style.dim(f"{line}  [--no-self-query: words only]"))
        # The notes name filters read from the question: they narrow the search as --filter does.
        filtered = bool(args.filter or args.where or notes)
        print(render_hits(hits, args.query, style, locations, filtered=filtered, index_empty=index_empty))
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from beleg.cli.interrupt import StopOnSignals
    from beleg.index.config import CHUNK_RULES
    from beleg.progress import plural

    with _open(args) as kb:
        live = kb.config
        c = live.chunking
        # The live settings (also child_tokens, percentile, min_tokens) unless overridden, and
        # the current chunking rules: a reindex is how an index takes up a rule revision.
        chunking = replace(c, method=args.chunking or c.method, max_tokens=args.max_tokens or c.max_tokens,
                           overlap=args.overlap if args.overlap is not None else c.overlap,
                           context=args.context or c.context, rules=CHUNK_RULES)
        config = replace(live, chunking=chunking, embedder=args.embedder or live.embedder)
        with StopOnSignals() as stop:
            result = kb.reindex(config, progress=_progress(args), stop=stop)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(f"built version {result['version']} beside live {result['live']}: "
              f"{plural(result['documents'], 'document')}, {plural(result['chunks'], 'chunk')}, "
              f"{result['embedded']} embedded\n"
              f"compare: beleg eval --gold FILE --index {args.index or default_index_dir()} "
              f"--versions {result['live']},{result['version']}\n"
              f"go live: beleg switch {result['version']} --index {args.index or default_index_dir()}")
    return EXIT_ERROR if result["failed"] else 0


def cmd_switch(args: argparse.Namespace) -> int:
    from beleg.index import versions

    root = args.index or default_index_dir()
    forced = args.allow_document_loss
    if isinstance(root, str):  # a postgresql:// URL: versions are schemas (beleg.index.postgres.versions)
        from beleg.index.postgres import versions as pg_versions
        from beleg.index.postgres.config import PostgresLocation

        location = PostgresLocation.parse(root)
        before = pg_versions.readiness(location, args.version)
        info: Any = pg_versions.switch(location, args.version, allow_document_loss=forced)
    else:
        before = versions.readiness(root, args.version)
        info = versions.switch(root, args.version, allow_document_loss=forced)
    print(f"version {info.version} is live")
    if before is not None and (before.loses_documents or before.drift.changed):
        # Deletions reach every version; ingests and edits after a build reach only the live one.
        lost = [f"{len(before.drift.missing)} document(s) of the previous live version {before.live} are missing "
                f"from it ({versions.name_some(before.drift.missing)})"] if before.drift.missing else []
        lost += [f"{len(before.drift.changed)} differ ({versions.name_some(before.drift.changed)})"
                 ] if before.drift.changed else []
        lost += ["its build never finished"] if before.unfinished else []
        print(f"warning: version {info.version} was built before the last changes: {'; '.join(lost)}. Version "
              f"{before.live} keeps them until it is removed ('beleg gc' keeps it while it holds documents the live "
              f"version lacks): switch back with 'beleg switch {before.live} --index {root}', run the 'beleg "
              f"reindex' that built {info.version} again (it catches up), then switch", file=sys.stderr)
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    from beleg.index.versions import collect, describe_holder, name_some

    root = args.index or default_index_dir()
    if isinstance(root, str):  # a postgresql:// URL
        from beleg.index.postgres import versions as pg_versions
        from beleg.index.postgres.config import PostgresLocation

        collected: Any = pg_versions.collect(PostgresLocation.parse(root), allow_document_loss=args.allow_document_loss)
    else:
        collected = collect(root, allow_document_loss=args.allow_document_loss)
    removed, kept, kept_documents = collected.removed, collected.kept, collected.kept_documents
    if args.json:
        print(json.dumps({"removed": [v.to_json() for v in removed],
                          "kept": [{**v.to_json(), "held_by": held} for v, held in kept]
                          + [{**v.to_json(), "documents_not_live": docs} for v, docs in kept_documents]},
                         indent=2, ensure_ascii=False))
    else:
        print(f"removed {len(removed)} version(s)" + "".join(f"\n  {v.version}  {v.path}" for v in removed))
    for v, held in kept:  # a server opened it before a switch: its files stay until it stops
        print(f"kept version {v.version}: held open by {', '.join(map(describe_holder, held))}; stop or restart "
              "it, then run 'beleg gc' again", file=sys.stderr)
    for v, docs in kept_documents:  # their last copy: a switch with --allow-document-loss left them here
        print(f"kept version {v.version}: it holds {len(docs)} document(s) the live version lacks ({name_some(docs)}); "
              f"make it live again with 'beleg switch {v.version} --index {root}', or ingest them into the live "
              "version; 'beleg gc --allow-document-loss' deletes them with it", file=sys.stderr)
    return EXIT_ERROR if kept_documents else 0


def _note_unknown_keys(kb: Any, *filters: Any, principal: Any = None) -> None:
    """On stderr, a note for each key the filters name that no document has (a misspelt key
    matches nothing, silently otherwise). With a ``principal``, only the keys of documents it
    may read count, so the note never reveals a key of a document hidden from it."""
    from beleg.index.filters import combine, unknown_key_notes

    expr = combine(*filters)
    if expr is not None:
        for line in unknown_key_notes(expr, kb.metadata_keys(principal)):
            print(line, file=sys.stderr)


def _doc_ids_named(kb: Any, names: Sequence[str]) -> list[str]:
    """``--doc`` values as document ids: an id as it is, else the documents ingested from that
    path (the source as stored, or the file it resolves to). A name that is neither stays, so
    delete reports it as not found."""
    known = {doc_id for doc_id, _, _ in kb.catalog.documents_meta()}
    out: list[str] = []
    for name in names:
        if name in known:
            out.append(name)
            continue
        found = kb.catalog.doc_ids_for_source(name) or kb.catalog.doc_ids_at(os.path.realpath(name))
        out.extend(found or [name])
    return out


def cmd_delete(args: argparse.Namespace) -> int:
    names = [*args.names, *args.doc]
    with _open(args) as kb:
        if args.finish and not names and args.where is None:
            result = kb.finish_erasure()
            if result is None:
                print(f"no unfinished erasure on {kb.root}")
                return 0
        else:
            _note_unknown_keys(kb, args.where)  # before the delete, which may remove the last document with a key
            result = kb.delete(_doc_ids_named(kb, names), where=args.where)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        if result["resumed"]:
            print(f"finished the interrupted erasure of {len(result['resumed'])} document(s)")
        print(f"deleted {result['documents']} document(s): {result['chunks']} chunks, {result['vectors']} vectors, "
              f"{result['terms']} terms" + (f"; not found: {', '.join(result['not_found'])}" if result["not_found"] else "")
              + ("; --where matched no document in any version" if result["matched"] == 0 else "")
              + (f" (from {len(result['versions'])} index versions)" if len(result["versions"]) > 1 else ""))
        if not result["complete"]:
            print("warning: a concurrent reader kept old pages of the erased text (write-ahead log); "
                  "run the command again, or 'beleg gc', once it has finished", file=sys.stderr)
    # Success means none of the named or matched documents is left in any version, so a rerun
    # of a delete that finished succeeds too; an id or filter that found nothing is reported.
    return 0


def cmd_leaks(args: argparse.Namespace) -> int:
    """Run the permission-leak suite on an index; exit 1 when anything leaked or a probe failed."""
    from beleg.evaluate.leaks import KINDS, run_leak_suite

    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip()) if args.kinds else KINDS
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm  # type: ignore[import-untyped]

        bar = tqdm(desc="probes", unit="probe", file=sys.stderr, leave=False)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    with _open(args) as kb:
        report = run_leak_suite(kb, max_identifiers=args.max_identifiers, kinds=kinds, progress=progress)
    if bar is not None:
        bar.close()
    print(json.dumps(report.to_json(), indent=2, ensure_ascii=False) if args.json else report.render_text())
    return 0 if report.ok else EXIT_ERROR


def cmd_documents(args: argparse.Namespace) -> int:
    """Every stored document (administrative, like delete and status: no permission filter)."""
    from beleg.index.filters import combine, matches
    from beleg.types import shown_metadata

    expr = combine(args.where)
    with _open(args) as kb:
        _note_unknown_keys(kb, expr)
        docs = [(doc_id, source, shown_metadata(meta)) for doc_id, source, meta in kb.catalog.documents_meta()
                if matches(expr, meta)]
    if args.json:
        print(json.dumps([{"doc_id": doc_id, "source": source, "title": meta.get("title"), "metadata": meta}
                          for doc_id, source, meta in docs], indent=2, ensure_ascii=False))
        return 0
    from beleg.cli.render import render_documents

    print(render_documents(docs) if docs else "no document matches" if expr is not None else "no documents")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from beleg.cli.render import render_status

    with _open(args) as kb:
        status = kb.status()
    print(json.dumps(status, indent=2, ensure_ascii=False) if args.json else render_status(status))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from beleg.evaluate.session import EvalRequest, evaluate, evaluate_answers

    request = EvalRequest(
        beir=args.beir, split=args.split, squad=args.squad, queries_from=args.queries_from, gold=args.gold,
        modes=args.modes, k=args.k, limit=args.limit, reranker=args.reranker, cache_dir=args.cache_dir,
        progress=_progress(args),
        # eval uses an LLM only when named on its command line, never one from the environment
        llm=_llm_from(args.llm, args.llm_base_url) if args.llm else None,
        judge=_llm_from(args.judge, args.judge_base_url) if args.judge else None, verifier=_verifier_from(args),
        index=args.index,
        versions=[v.strip() for v in args.versions.split(",") if v.strip()] if args.versions else None,
        strategies=args.strategies,
    )
    if args.answers:
        return _eval_answers(args, evaluate_answers(request))
    if args.judge or args.verifier or (args.llm and not args.strategies):
        from beleg.errors import ConfigError

        raise ConfigError("--llm, --judge and --verifier apply to answer evaluation; add --answers")
    report = evaluate(request)
    if args.trec_out:
        from beleg.evaluate.runner import write_trec_runs

        for path in write_trec_runs(report, args.trec_out):
            print(f"wrote {path}", file=sys.stderr)
    if args.report:
        from beleg.evaluate.report_html import render_html

        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(render_html(report), encoding="utf-8")
        print(f"wrote {args.report}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(per_query=args.per_query), indent=2, ensure_ascii=False))
    else:
        from beleg.evaluate.report_text import render_table

        print(render_table(report, color=sys.stdout.isatty()))
    return 0


def _eval_answers(args: argparse.Namespace, report: Any) -> int:
    from beleg.evaluate.report_answers import render_answers_text

    if args.report:
        from beleg.evaluate.report_html import answer_report_page

        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(answer_report_page(report, f"Beleg answers: {report.dataset}"), encoding="utf-8")
        print(f"wrote {args.report}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(per_query=args.per_query), indent=2, ensure_ascii=False))
    else:
        print(render_answers_text(report))
    return 0


def _answer_setup(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    from beleg.answer.answerer import AnswerOptions
    from beleg.answer.evidence import GovernancePolicy
    from beleg.backends.llms.config import read_config_table
    from beleg.index.filters import from_assignments
    from beleg.strategies import load_strategy

    load_strategy(args.strategy)  # an unknown name fails before any work
    llm = _resolve_llm(args)
    policy = GovernancePolicy.from_json(read_config_table("governance", args.config))
    options = AnswerOptions(k=args.k, mode=args.mode, strategy=args.strategy, policy=policy,
                            budget_tokens=args.budget, order=args.order, self_query=_self_query_choice(args),
                            fusion=args.fusion, rrf_k=args.rrf_k, weights=_weights(args.weights), mmr=args.mmr,
                            verifier=_verifier_from(args))
    if args.min_confidence is not None:
        if not 0.0 <= args.min_confidence <= 1.0:
            from beleg.errors import ConfigError

            raise ConfigError(f"--min-confidence {args.min_confidence} is outside [0, 1]; give a value such as 0.8")
        from dataclasses import replace

        options = replace(options, min_confidence=args.min_confidence)
    return llm, options, from_assignments(args.filter)


def _ask_once(kb: Any, args: argparse.Namespace, question: str, context: list[str], llm: Any, options: Any,
              filters: Any) -> Any:
    from beleg.cli.render import Style, render_answer

    # A backend that withholds unverified answers (local models) must not stream them first.
    stream = llm is not None and not args.json and not args.no_stream and not getattr(llm, "refuse_unverified", False)
    streamed: list[str] = []

    def on_token(text: str) -> None:
        streamed.append(text)
        sys.stdout.write(text)
        sys.stdout.flush()

    from beleg.service import Service

    service = Service(kb, llm=llm)
    answer = service.ask(question, _principal(args), filters=filters, where=args.where, context=context,
                         options=options, on_token=on_token if stream else None)
    if args.json:
        out = service.answer_json(answer)
        print(json.dumps(out, ensure_ascii=False, indent=None if args.command == "chat" else 2))
        return answer
    style = Style(sys.stdout.isatty())
    show_text = True
    if streamed:
        print()
        regenerated = answer.trace.get("llm", {}).get("regenerated")
        if regenerated:
            print(style.dim("(the streamed answer failed citation checks; regenerated answer:)"))
        else:
            show_text = False
    locations = {s.hit.doc_id: kb.catalog.location(s.hit.doc_id) for s in answer.sources}
    print(render_answer(answer, style, show_text=show_text, locations=locations))
    return answer


def cmd_ask(args: argparse.Namespace) -> int:
    llm, options, filters = _answer_setup(args)
    with _open(args) as kb:
        _note_unknown_keys(kb, filters, args.where, principal=_principal(args))
        _ask_once(kb, args, args.question, list(args.context), llm, options, filters)
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    """Read questions line by line; earlier questions (never answers) resolve follow-ups."""
    llm, options, filters = _answer_setup(args)
    interactive = sys.stdin.isatty()
    context: list[str] = []
    with _open(args) as kb:
        _note_unknown_keys(kb, filters, args.where, principal=_principal(args))
        if interactive:
            print("Ask a question; /reset forgets the conversation, /quit or Ctrl-D ends.", file=sys.stderr)
        while True:
            if interactive:
                print("> ", end="", file=sys.stderr, flush=True)
            line = sys.stdin.readline()
            if not line:
                break
            question = line.strip()
            if not question:
                continue
            if question in ("/quit", "/exit"):
                break
            if question == "/reset":
                context.clear()
                continue
            _ask_once(kb, args, question, context, llm, options, filters)
            if not args.json:
                print()
            context.append(question)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from beleg.index.postgres.migrate import migrate

    result = migrate(args.source, args.target)
    print(json.dumps(result, indent=2) if args.json else
          f"copied {result['documents']} documents ({result['chunks']} chunks, no re-embedding) "
          f"from {result['source']} to {result['target']}")
    return 0


COMMANDS = {"init": cmd_init, "ingest": cmd_ingest, "delete": cmd_delete, "reindex": cmd_reindex,
            "switch": cmd_switch, "gc": cmd_gc, "search": cmd_search, "ask": cmd_ask, "chat": cmd_chat,
            "eval": cmd_eval, "status": cmd_status, "leaks": cmd_leaks, "documents": cmd_documents}


def cmd_llm(args: argparse.Namespace) -> int:
    from beleg.cli.llm import cmd_llm as run

    return run(args)


COMMANDS["llm"] = cmd_llm
COMMANDS["migrate"] = cmd_migrate


def cmd_serve(args: argparse.Namespace) -> int:
    from beleg.cli.serve import cmd_serve as run

    return run(args)


def cmd_keys(args: argparse.Namespace) -> int:
    from beleg.cli.keys import cmd_keys as run

    return run(args)


COMMANDS["serve"] = cmd_serve
COMMANDS["keys"] = cmd_keys


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(_unrecognized(parser, args.command, unknown))
    import logging

    if args.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    else:
        # Parser libraries log recoverable oddities (pypdf: "EOF marker not found"); the
        # ingest report already states each file's outcome, so keep stderr for that.
        logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="beleg: %(name)s: %(message)s")
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers, not at interpreter exit
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except BelegError as exc:
        if args.debug:
            raise
        print(f"beleg: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        from beleg.cli import interrupt

        print("beleg: interrupted", file=sys.stderr)
        return interrupt.exit_status()
    except (OSError, sqlite3.Error) as exc:
        if args.debug:
            raise
        print(f"beleg: error: {_system_error(exc, args)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        problem = _database_problem(exc)
        if problem is None or args.debug:
            raise
        print(f"beleg: error: {problem}", file=sys.stderr)
        return EXIT_ERROR


def _unrecognized(parser: argparse.ArgumentParser, command: str, unknown: list[str]) -> str:
    """argparse's "unrecognized arguments" message, with the closest option of the command for
    a mistyped one (``--indx``: did you mean --index?); Python 3.11's argparse suggests none."""
    import difflib

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    options = [o for action in sub._actions for o in action.option_strings if o.startswith("--")]
    hints = [f"{word}: did you mean {close[0]}?" for word in unknown if word.startswith("--")
             if (close := difflib.get_close_matches(word.split("=", 1)[0], options, n=1))]
    return f"unrecognized arguments: {' '.join(unknown)}" + ("; " + "; ".join(hints) if hints else "")


def _database_problem(exc: Exception) -> str | None:
    """One line for a PostgreSQL error about privileges or the server (None for anything else,
    which is a bug and keeps its traceback). psycopg is imported only by a PostgreSQL index."""
    if "psycopg" not in sys.modules:
        return None
    from beleg.index.postgres.config import server_problem

    return server_problem(exc)


def _broken_pipe() -> int:
    """The reader of stdout went away (``beleg search ... | head``): stop quietly, the way
    shell tools do, with exit status 141 (128 + SIGPIPE) and nothing on stderr.

    stdout is pointed at /dev/null so the interpreter's final flush does not report the
    same broken pipe again ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass
    return EXIT_BROKEN_PIPE


def _system_error(exc: BaseException, args: argparse.Namespace) -> str:
    """One line for an error from the operating system or SQLite: what failed, where, what to do."""
    index = getattr(args, "index", None) or default_index_dir()
    if isinstance(exc, sqlite3.Error):
        text = str(exc) or type(exc).__name__
        if "full" in text:
            hint = "free disk space (or raise the file size limit) and run the command again"
        elif "disk I/O" in text:
            hint = "the disk may be full, over a file size limit or failing; free space and run the command again"
        elif "unable to open" in text or "readonly" in text or "locked" in text:
            hint = "check that the folder exists and is readable and writable, and that no other process holds it"
        else:
            hint = "check the index with 'beleg status'; rerun with --debug for details"
        return (f"the index database in {index} failed: {text}; {hint} "
                f"(a failed write changes nothing: the last committed state is kept)")
    assert isinstance(exc, OSError)
    where = exc.filename if exc.filename is not None else index
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        hint = "free disk space (or raise the file size limit) and run the command again"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "check the folder's permissions, or pass another --index"
    elif exc.errno in (errno.ENOTDIR, errno.ENOENT, errno.EISDIR):
        hint = "check the path (every part of it must be a folder), or pass another --index"
    else:
        hint = "rerun with --debug for details"
    return f"{reason}: {where}; {hint}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
