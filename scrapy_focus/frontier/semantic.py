"""Semantic similarity of texts to the topic, from a small static embedding model.

The lexical topic model (:mod:`~scrapy_focus.frontier.terms`) only sees words
the topic shares with a text; a topic about "exchanging patches by e-mail"
shares none with a link saying "git-send-email".  :class:`Semantic` gives the
cosine of two texts' embeddings from WordLlama's 256-dimensional static model
(token vectors averaged: no network at run time, tens of microseconds per
short text), installed by the ``semantic`` extra (``pip install
scrapy-focus[semantic]``).

Contract:

* :meth:`Semantic.similarity` ``(topic, texts) -> list[float]``: one number in
  [0, 1] per text (the cosine, negatives as 0), in order; an empty text is 0.
* Vectors are cached per distinct text (the topic's and the texts'), at most
  ``cache_size`` of them, least recently used dropped first: anchors and URL
  words repeat across a site's pages.
* :func:`load_semantic` ``(mode)`` builds it once per crawl
  (``FocusRuntime.of(crawler).semantic``): ``"auto"`` returns None when the
  extra is not installed, ``"on"`` raises :class:`SemanticUnavailable` saying
  what to install, ``"off"`` returns None without looking.

The package imports and crawls without the extra: nothing here imports it at
module level.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Characters of a text that are embedded: a static model averages its tokens'
#: vectors, so a page's first paragraphs say what it is about and the rest only
#: blurs it (and costs time).
MAX_CHARS = 2_000

SEMANTIC_MODES = ("auto", "on", "off")

_INSTALL = 'pip install "scrapy-focus[semantic]"'

Embedder = Callable[[list[str]], Any]  # texts -> array (len(texts), dim), L2-normalised


class SemanticUnavailable(RuntimeError):
    """FOCUS_SEMANTIC = True but the embedding model cannot be loaded."""


class Semantic:
    """Cosine similarity of texts to a topic text, through *embed* (see the module
    docstring for the contract)."""

    def __init__(self, embed: Embedder, cache_size: int = 20_000, name: str = "") -> None:
        self._embed = embed
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self.cache_size = cache_size
        self.name = name
        self.embedded = 0  # texts embedded (cache misses), for the crawl's stats

    def vectors(self, texts: Sequence[str]) -> list[Any]:
        """The L2-normalised vector of each of *texts* (truncated to MAX_CHARS)."""
        keys = [text[:MAX_CHARS] for text in texts]
        cache = self._cache
        missing = list(dict.fromkeys(k for k in keys if k not in cache))
        if missing:
            for key, vector in zip(missing, self._embed(missing), strict=True):
                cache[key] = vector
            self.embedded += len(missing)
        out = []
        for key in keys:
            cache.move_to_end(key)
            out.append(cache[key])
        while len(cache) > self.cache_size:
            cache.popitem(last=False)
        return out

    def similarity(self, topic: str, texts: Sequence[str]) -> list[float]:
        """Cosine of each of *texts* with *topic*, in [0, 1]."""
        if not texts:
            return []
        anchor, *vectors = self.vectors([topic, *texts])
        return [
            max(0.0, min(1.0, float(anchor @ vector))) if text.strip() else 0.0
            for text, vector in zip(texts, vectors, strict=True)
        ]


def wordllama_embedder() -> tuple[Embedder, str]:
    """WordLlama's model of its wheel, loaded from the wheel's own files.

    ``WordLlama.load()`` looks for the tokenizer in a folder the wheel does not
    have and then downloads it; the wheel ships it under ``tokenizers/``, so the
    two files are read directly: no network, ever.  A text's vector is the mean
    of its tokens' (what ``WordLlamaInference.embed`` computes), without the
    padding of a batch to its longest text.
    """
    import numpy as np
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer

    root = Path(wordllama.__file__).parent
    weights = root / "weights" / "l2_supercat_256.safetensors"
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    with safe_open(str(weights), framework="np", device="cpu") as tensors:
        table = tensors.get_tensor("embedding.weight").astype(np.float32)
    zero = np.zeros(table.shape[1], dtype=np.float32)

    def embed(texts: list[str]) -> list[Any]:
        out = []
        for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
            ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, len(table) - 1)
            if not len(ids):
                out.append(zero)
                continue
            vector = table[ids].mean(axis=0)
            norm = float(np.linalg.norm(vector))
            out.append(vector / norm if norm else zero)
        return out

    version = getattr(wordllama, "__version__", "?")
    return embed, f"wordllama {version} (l2_supercat, {table.shape[1]} dimensions)"


def load_semantic(mode: str, cache_size: int = 20_000) -> Semantic | None:
    """The crawl's :class:`Semantic`, or None (see the module docstring)."""
    if mode == "off":
        logger.info("Semantic similarity: off (FOCUS_SEMANTIC = False)")
        return None
    try:
        embed, name = wordllama_embedder()
    except (ImportError, OSError, ValueError) as exc:
        if mode == "on":
            raise SemanticUnavailable(
                f"FOCUS_SEMANTIC = True, but its model cannot be loaded ({exc}); "
                f'install it with {_INSTALL}, or set FOCUS_SEMANTIC = "auto"'
            ) from exc
        logger.info("Semantic similarity: off (the semantic extra is not installed: %s)", _INSTALL)
        return None
    logger.info("Semantic similarity: on (%s)", name)
    return Semantic(embed, cache_size, name)


def semantic_mode(value: Any) -> str:
    """FOCUS_SEMANTIC as one of SEMANTIC_MODES: "auto", or a boolean (True: "on")."""
    text = str(value).strip().lower() if value is not None else "off"
    if text == "auto":
        return "auto"
    if text in ("1", "true", "yes", "on"):
        return "on"
    if text in ("0", "false", "no", "off", "", "none"):
        return "off"
    raise ValueError(f'FOCUS_SEMANTIC must be "auto", True or False, not {value!r}')
