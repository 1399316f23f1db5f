"""Cross-encoder rerankers on a tiny BERT cross-encoder that this module builds and trains.

No cross-encoder ships in a PyPI package and nothing may be downloaded, so the model is
made here: a made-up WordPiece vocabulary, a 2-layer BERT with one output, and a few
hundred AdamW steps on pairs where the relevant passage contains the query's keyword and
the irrelevant one another keyword. That is enough for it to rank by keyword match, which
makes "the reranker puts the relevant passage first" a real check.
"""

from __future__ import annotations

import itertools
import random
import socket
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

import beleg
from beleg.backends.rerankers import Reranker, load_reranker
from beleg.backends.rerankers.cross_encoder import CrossEncoderReranker
from beleg.backends.rerankers.onnx import OnnxCrossEncoderReranker
from beleg.errors import ConfigError, MissingDependencyError, ModelError
from beleg.ingest.pipeline import TextSource

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "so", "ta", "vi", "ze", "po", "du", "fe", "gi", "ha", "ju"]
_ALL = ["".join(s) for s in itertools.product(_SYLLABLES, repeat=3)]
random.Random(0).shuffle(_ALL)
WORDS = _ALL[:300]
#: Few keywords: matching a keyword across [SEP] is what the model must learn, and with
#: more of them a few hundred steps no longer get it there reliably.
KEYWORDS, FILLER = WORDS[:8], WORDS[8:]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_LEN = 64


def passage(rng: random.Random, keyword: str) -> str:
    """Three filler words with ``keyword`` at a random position."""
    words = rng.sample(FILLER, 3)
    words.insert(rng.randrange(4), keyword)
    return " ".join(words)


def _tiny_bert(tokenizer: BertTokenizerFast, num_labels: int, seed: int) -> BertForSequenceClassification:
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=MAX_LEN, num_labels=num_labels,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        # BERT's 0.02 leaves query/key products so small that training sits on a
                        # plateau for hundreds of steps; 0.3 escapes it within ~200 for every seed tried.
                        initializer_range=0.3)
    torch.manual_seed(seed)
    return BertForSequenceClassification(config)


def _train(model: BertForSequenceClassification, tokenizer: BertTokenizerFast, steps: int = 500) -> None:
    rng = random.Random(1)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * max(0.05, 1 - s / steps))
    model.train()
    for _ in range(steps):
        queries, passages, labels = [], [], []
        for _ in range(32):
            keyword, other = rng.sample(KEYWORDS, 2)
            queries += [keyword, keyword]
            passages += [passage(rng, keyword), passage(rng, other)]
            labels += [1.0, 0.0]
        batch = tokenizer(queries, passages, padding=True, return_tensors="pt")
        logits = model(**batch).logits.squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tokenizer")
    (d / "vocab.txt").write_text("\n".join(SPECIAL + WORDS) + "\n", encoding="utf-8")
    # from_pretrained, not BertTokenizerFast(vocab_file=...): transformers 5 silently ignores
    # vocab_file in the constructor and builds a 5-token vocabulary.
    BertTokenizerFast.from_pretrained(d, model_max_length=MAX_LEN).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir: Path) -> BertTokenizerFast:
    return BertTokenizerFast.from_pretrained(tokenizer_dir)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tokenizer: BertTokenizerFast) -> tuple[Path, BertForSequenceClassification]:
    """(model directory, model) of the trained one-label cross-encoder."""
    d = tmp_path_factory.mktemp("tiny-ce")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is faster than two fighting other jobs
    try:
        model = _tiny_bert(tokenizer, num_labels=1, seed=0)
        _train(model, tokenizer)
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(d)
    tokenizer.save_pretrained(d)
    return d, model


@pytest.fixture(scope="module")
def model_dir(trained: tuple[Path, BertForSequenceClassification]) -> Path:
    return trained[0]


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory, trained: tuple[Path, BertForSequenceClassification],
             tokenizer: BertTokenizerFast) -> Path:
    """The trained model exported to ONNX beside its tokenizer.json, as the ONNX backend expects."""
    d = tmp_path_factory.mktemp("tiny-ce-onnx")
    model = trained[1]

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tokenizer(["kw", "a b"], ["x y z", "w"], padding=True, return_tensors="pt")
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        # dynamo=False: the torch.export-based exporter would also need onnxscript.
        torch.onnx.export(Logits().eval(), tuple(sample[n] for n in names), str(d / "model.onnx"), input_names=names,
                          output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    model.eval()  # export restores the wrapper's train() mode onto the shared model
    tokenizer.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def reranker(model_dir: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(str(model_dir), batch_size=4)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test: nothing may be downloaded."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args}")
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_ranks_the_relevant_passage_first_on_held_out_pairs(reranker: CrossEncoderReranker) -> None:
    rng = random.Random(12345)  # not the training stream: new passages, new combinations
    first = 0
    for _ in range(20):
        keyword, *others = rng.sample(KEYWORDS, 5)
        candidates = [passage(rng, keyword)] + [passage(rng, o) for o in others]
        rng.shuffle(candidates)
        relevant = next(i for i, c in enumerate(candidates) if keyword in c.split())
        scores = reranker.rerank(keyword, candidates)
        assert len(scores) == 5
        first += int(np.argmax(scores)) == relevant
    assert first >= 19, f"relevant passage first for only {first} of 20 held-out queries"


def test_scores_are_the_models_raw_logits(reranker: CrossEncoderReranker,
                                          trained: tuple[Path, BertForSequenceClassification],
                                          tokenizer: BertTokenizerFast) -> None:
    rng = random.Random(7)
    passages = [passage(rng, k) for k in KEYWORDS]
    scores = reranker.rerank(KEYWORDS[0], passages)
    with torch.no_grad():
        logits = trained[1](**tokenizer([KEYWORDS[0]] * len(passages), passages, padding=True,
                                        return_tensors="pt")).logits.squeeze(-1)
    np.testing.assert_allclose(scores, logits.numpy(), atol=1e-5)
    assert max(scores) > 1.0 and min(scores) < 0.0  # no sigmoid squashed them into (0, 1)


def test_empty_passage_list(reranker: CrossEncoderReranker, onnx_dir: Path) -> None:
    assert reranker.rerank("anything", []) == []
    assert OnnxCrossEncoderReranker(str(onnx_dir)).rerank("anything", []) == []


def test_onnx_scores_equal_pytorch_scores(reranker: CrossEncoderReranker, onnx_dir: Path) -> None:
    rng = random.Random(99)
    passages = [passage(rng, k) for k in KEYWORDS]
    passages.append(" ".join(rng.choices(FILLER, k=3 * MAX_LEN)))  # longer than the model: both must truncate alike
    passages.append("unknown words here " + KEYWORDS[2])  # [UNK] tokens
    onnx = OnnxCrossEncoderReranker(str(onnx_dir), batch_size=3)  # batches of unequal padding
    for query in (KEYWORDS[2], f"{KEYWORDS[2]} {FILLER[0]}"):
        np.testing.assert_allclose(onnx.rerank(query, passages), reranker.rerank(query, passages), atol=1e-4)


def test_load_reranker_by_spec_and_bare_path(model_dir: Path, onnx_dir: Path, no_network: None) -> None:
    by_spec = load_reranker(f"cross-encoder:{model_dir}")
    bare = load_reranker(str(model_dir))
    onnx = load_reranker(f"onnx:{onnx_dir}")
    assert isinstance(by_spec, CrossEncoderReranker) and isinstance(bare, CrossEncoderReranker)
    assert isinstance(onnx, OnnxCrossEncoderReranker)
    assert by_spec.spec == bare.spec == f"cross-encoder:{model_dir}"
    assert onnx.spec == f"onnx:{onnx_dir}"
    assert all(isinstance(r, Reranker) for r in (by_spec, bare, onnx))
    assert by_spec.rerank(KEYWORDS[0], ["x"]) == bare.rerank(KEYWORDS[0], ["x"])


@pytest.mark.parametrize("cls", [CrossEncoderReranker, OnnxCrossEncoderReranker])
def test_missing_directory_says_so_and_downloads_nothing(cls: type, tmp_path: Path, no_network: None) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="does not exist") as err:
        cls(str(missing))
    assert str(missing) in str(err.value) and "never downloads" in str(err.value)


@pytest.mark.parametrize("spec", ["cross-encoder/ms-marco-MiniLM-L-6-v2", "cross-encoder:BAAI/bge-reranker-base",
                                  "onnx:ms-marco-MiniLM"])
def test_hub_name_explains_that_nothing_is_downloaded(spec: str, no_network: None) -> None:
    with pytest.raises(ConfigError) as err:
        load_reranker(spec)
    message = str(err.value)
    assert "not a local directory" in message and "no model can be downloaded" in message
    assert "pass a local directory" in message


def test_directory_without_model_files(tmp_path: Path, model_dir: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"has no config\.json \(found: notes\.txt\)"):
        CrossEncoderReranker(str(tmp_path))
    with pytest.raises(ConfigError, match=r"has no model\.onnx or onnx/model\.onnx"):
        OnnxCrossEncoderReranker(str(model_dir))
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        CrossEncoderReranker(str(model_dir / "config.json"))


@pytest.mark.parametrize("module, cls", [("sentence_transformers", CrossEncoderReranker),
                                         ("onnxruntime", OnnxCrossEncoderReranker)])
def test_missing_package_names_the_extra(module: str, cls: type, model_dir: Path, onnx_dir: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "beleg\[rerank\]"') as err:
        cls(str(onnx_dir if cls is OnnxCrossEncoderReranker else model_dir))
    assert isinstance(err.value.__cause__, ImportError)


@pytest.mark.parametrize("num_labels", [2, 3])
def test_two_label_models_score_the_positive_logit(num_labels: int, tmp_path: Path,
                                                   tokenizer: BertTokenizerFast) -> None:
    model = _tiny_bert(tokenizer, num_labels=num_labels, seed=3).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    if num_labels == 3:
        with pytest.raises(ModelError, match="3 output labels"):
            CrossEncoderReranker(str(tmp_path))
        return
    passages = [passage(random.Random(i), KEYWORDS[i]) for i in range(4)]
    with torch.no_grad():
        logits = model(**tokenizer([KEYWORDS[0]] * 4, passages, padding=True, return_tensors="pt")).logits
    np.testing.assert_allclose(CrossEncoderReranker(str(tmp_path)).rerank(KEYWORDS[0], passages),
                               logits[:, 1].numpy(), atol=1e-5)


def test_knowledge_base_search_orders_hits_by_rerank_score(tmp_path: Path, embedder, reranker: CrossEncoderReranker) -> None:
    rng = random.Random(5)
    docs = [TextSource(source=f"doc-{k}.txt", text=passage(rng, k), title=f"doc {k}") for k in KEYWORDS]
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        report = kb.ingest_texts(docs, progress=False)
        assert report.count("failed") == 0
        hits = kb.search(KEYWORDS[3], k=5, reranker=reranker)
    assert len(hits) == 5
    assert all("rerank" in h.scores for h in hits)
    rerank_scores = [h.scores["rerank"] for h in hits]
    assert rerank_scores == sorted(rerank_scores, reverse=True)
    assert [h.score for h in hits] == rerank_scores
    assert hits[0].source == f"doc-{KEYWORDS[3]}.txt"
