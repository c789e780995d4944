"""Three probes of the second stage's unit score, corpus-wide (stop 65; no rule: each
lost on a train pool, so none reached dev).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/unit_score_probes.py \
        [--probes bigrams parts echo] [--pools ...] [--split train]

Each probe runs `sproutrag evaluate --corpus-wide --modes tree` over each pool's
database (`out/db-hierarchy-{pool}-{split}`, built by `hierarchy.py`) in a process of
its own, with the variant patched into the library for that process only; today's code
runs the same way (`today`). Runs are kept under out/unit-probes/{probe}/{pool}-{split}/.
It prints each probe's corpus-wide and within unit IE and char-IE against today's,
paired per query:

- `bigrams`: BM25 also counts each pair of adjacent stems (stopwords dropped) as one
  term, in the leaves and in the question ("born 1952", "1952 kingston"): a look-alike
  that shares the question's words but not its phrases scores lower.
- `parts`: a node's cosine is the larger of its cosine with the question and with each
  of the question's parts (split at commas and at who, which, that, whose, whom, where,
  when; parts of three words or more, two parts or more): a bridge question's second
  half describes the second document.
- `echo`: a searched document that gains no points itself but writes the name of one
  that gains (linked, leading or mentioned; `sproutrag.search.links`) loses 2 points:
  "Walking on Glass" writes "Iain Banks".
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools' files
from paired_results import database_rows, per_query  # noqa: E402
from rule_runs import evaluate_args, paired  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROBES = ("bigrams", "parts", "echo")
POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
PART_SPLIT = re.compile(r",|\b(?:which|who|whom|whose|that|where|when)\b", re.I)
ECHO_POINTS = 2.0


def patch_bigrams() -> None:
    import sproutrag.search.lexical as lexical

    unigrams = lexical.tokenize

    def tokenize(text: str) -> list[str]:
        t = unigrams(text)
        return t + [f"{a}_{b}" for a, b in zip(t, t[1:])]

    lexical.tokenize = tokenize  # bm25_nodes and bm25_documents look it up when called
    lexical.LeafTerms.of.__func__.__kwdefaults__["analyzer"] = tokenize
    lexical.bm25_leaves.__kwdefaults__["analyzer"] = tokenize


def patch_parts(queries: str) -> None:
    import sproutrag.search.node_scores as ns

    _, encoder = H.default_encoder()
    with open(queries, encoding="utf-8") as f:
        texts = [json.loads(line)["query"] for line in f]
    vectors = unit_rows(encoder.encode_texts(texts))
    parts = []
    for text in texts:
        pieces = [p.strip() for p in PART_SPLIT.split(text) if p and len(p.split()) >= 3]
        parts.append(unit_rows(encoder.encode_texts(pieces)) if len(pieces) >= 2 else None)
    cosine = ns.cosine_scores

    def cosine_scores(rows, query, norms=None):
        plain = cosine(rows, query, norms)
        q = unit_rows(np.asarray(query, np.float32).reshape(1, -1))[0]
        sims = vectors @ q  # which question this vector is (the evaluation encodes it)
        n = int(np.argmax(sims))
        if sims[n] < 0.995 or parts[n] is None:
            return plain
        best_part = np.max([cosine(rows, p, norms) for p in parts[n]], axis=0)
        return np.maximum(plain, best_part)

    ns.cosine_scores = cosine_scores  # node_scores looks it up when called


def unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def patch_echo() -> None:
    import sproutrag.search.links as links

    boosts = links.Links.boosts

    def with_echo(self, leaf_ranks):
        out = boosts(self, leaf_ranks)
        gainers = [d for d, w in out.items() if w > 0 and self.names.get(d)]
        for d, ranks in leaf_ranks.items():
            if d in out or not gainers:
                continue
            text = " ".join(self.unit_text(d, u) for u in range(len(ranks))).lower()
            if any(links.written_in(self.names[g], text) for g in gainers):
                out[d] = -ECHO_POINTS
        return out

    links.Links.boosts = with_echo


def child(probe: str, queries: str, evaluate_args: list[str]) -> int:
    """Run `sproutrag evaluate EVALUATE_ARGS` in this process with PROBE patched in."""
    if probe == "bigrams":
        patch_bigrams()
    elif probe == "parts":
        patch_parts(queries)
    elif probe == "echo":
        patch_echo()
    from sproutrag.flows.cli import main

    return main(["evaluate", *evaluate_args])


def run(probe: str, pool: str, split: str) -> Path:
    out = ROOT / "out" / "unit-probes" / probe / f"{pool}-{split}"
    if (out / "results.json").is_file():
        return out / "results.json"
    _, queries = H.pool_files(pool, split)
    args = evaluate_args(pool, split, ROOT / "out" / "unit-probes", out)
    subprocess.run([sys.executable, __file__, "--child", probe, str(queries), "--", *args],
                   check=True, stdout=subprocess.DEVNULL)
    return out / "results.json"


def difference(a: dict[str, float], b: dict[str, float]) -> str:
    """A - B paired per query, in points: "+0.55 +/- 1.04 (+0.5 SE)"."""
    m, se = paired(a, b)
    return f"{m:+.2f} +/- {se:.2f} ({m / se if se else 0.0:+.1f} SE)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1], argv[2], argv[4:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", nargs="+", choices=PROBES, default=list(PROBES))
    ap.add_argument("--pools", nargs="+", choices=POOLS, default=list(POOLS))
    ap.add_argument("--split", choices=("train", "dev"), default="train")
    args = ap.parse_args(argv)
    for pool in args.pools:
        today = database_rows(str(run("today", pool, args.split)))
        for probe in args.probes:
            rows = database_rows(str(run(probe, pool, args.split)))
            for name in ("tree corpus-wide", "tree"):
                cells = []
                for metric in ("ie", "char_ie"):
                    a, b = per_query(rows[name], metric), per_query(today[name], metric)
                    cells.append(f"{metric} {100 * np.mean(list(a.values())):.2f} "
                                 f"({difference(a, b)})")
                print(f"{pool:16s} {args.split} {probe:8s} {name:17s} " + "; ".join(cells),
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
