"""Retrieval quality on every dev set: tree vs leaves vs flat, the paper's metric, paired.

    .venv/bin/python bench/quality.py [--weights FILE] [--modes flat tree ...] [--sets ...]

Runs `sproutrag evaluate` (the same code: `evaluate_corpus`) on each development set,
then prints one summary table per set, led by tree - leaves (tree mode against its own
fused score ranking the leaves with no tree: the tree's own contribution; unit IE and
char-IE, paired per query with its standard error), then tree vs flat (cosine only: IE
averaged over k = 1, 3, 5, the ratio, the paired difference, IE@1 and char-IE), the
shipped tree mode against the better of LanceDB's own BM25 and hybrid search
(`sproutrag.learn.anchors`, the yardstick of issue 20), and each set's full table of
modes. Sets (they need ../shared/data, as on the project's machines; the long ones are
built from it with `python -m sproutrag.learn.devsets`):

* contractnli: ../shared/data/contractnli dev (NDAs, 614 queries);
* hotpotqa: ../shared/data/hotpotqa dev (evidence in two paragraphs, 50 queries);
* hotpot-long: ten HotpotQA dev documents joined into one of about 55,000 characters;
* contractnli-long: five ContractNLI dev contracts bundled into one of about 50,000
  characters, each hypothesis' evidence in all of them as one query (199 queries).

Features are cached under --cache (first run: about 25 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for key, value in {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(key, value)

SHARED = ROOT.parent / "shared" / "data"
SETS = {
    "contractnli": (SHARED / "contractnli", None),
    "hotpotqa": (SHARED / "hotpotqa", None),
    "hotpot-long": (SHARED / "hotpotqa", 10),
    "contractnli-long": (SHARED / "contractnli", 5),
}
MODES = ["flat", "leaves", "flat_lexical", "tree", "tree_paper", "tree_cosine", "tree_nocalib",
         "tree_noseed", "untrained", "untrained_search", "lancedb_bm25", "lancedb_hybrid"]


def dev_files(name: str, data_dir: Path, split: str = "dev") -> tuple[Path, Path]:
    """(docs, queries) of a set's split; long sets are built on first use."""
    src, group = SETS[name]
    if group is None:
        return src / f"{split}.docs.jsonl", src / f"{split}.queries.jsonl"
    out = data_dir / name
    if not (out / f"{split}.queries.jsonl").is_file():
        from sproutrag.learn.devsets import main as build

        build(["--src", str(src), "--group", str(group), "--out", str(out)])
    return out / f"{split}.docs.jsonl", out / f"{split}.queries.jsonl"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", help="weights file (default: the packaged one)")
    p.add_argument("--config", help="YAML settings (chunking, encoder)")
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--modes", nargs="+", default=MODES)
    p.add_argument("--data", default="out/data", help="where long sets are built")
    p.add_argument("--cache", default=".eval-cache", help="feature cache")
    p.add_argument("--out", default="out/quality", help="reports (one folder per set)")
    args = p.parse_args(argv)
    if not (SHARED / "contractnli" / "dev.docs.jsonl").is_file():
        print(f"no dev sets at {SHARED}: this benchmark needs ../shared/data")
        return 1

    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights
    from sproutrag.learn.anchors import ANCHORS
    from sproutrag.learn.evaluation import evaluate_corpus
    from sproutrag.learn.metrics import paired_difference
    from sproutrag.learn.report import best_anchors, write_report
    from sproutrag.learn.variants import make_variants

    settings = load_settings(args.config)
    weights = load_default_weights(args.weights or settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    p = weights.search
    print(f"weights {weights.source} ({weights.fingerprint()}): delta {p.threshold:g}, "
          f"lexical_weight {p.lexical_weight:g}, size_penalty {p.size_penalty:g}, "
          f"seed_leaves {p.seed_leaves}")
    summary, own, yardstick = [], [], []
    anchors = [m for m in args.modes if m in ANCHORS]
    modes = [m for m in args.modes if m not in ANCHORS]
    for name in args.sets:
        docs, queries = dev_files(name, Path(args.data))
        t0 = time.perf_counter()
        variants = make_variants(modes, weights, settings.tree.parent_embedding)
        rows, meta = evaluate_corpus(docs, queries, encoder=encoder,
                                     chunking=settings.chunking.model_dump(), variants=variants,
                                     cache_dir=args.cache, anchors=anchors, log=lambda *a: None)
        meta["command"] = f"bench/quality.py --sets {name}"
        by = {v_key: r for v_key, r in zip(modes + anchors, rows)}
        flat, tree, leaves = by.get("flat"), by.get("tree"), by.get("leaves")
        paths = write_report(rows, Path(args.out) / name, meta,
                             flat_name=flat["name"] if flat else None,
                             leaves_name=leaves["name"] if leaves else None)
        if flat and tree:
            d, se = paired_difference(tree["per_query"]["ie"], flat["per_query"]["ie"])
            summary.append((name, meta["n_queries"], flat, tree, d, se))
        if leaves and tree:
            own.append((name, meta["n_queries"], leaves, tree,
                        paired_difference(tree["per_query"]["ie"], leaves["per_query"]["ie"]),
                        paired_difference(tree["per_query"]["char_ie"],
                                          leaves["per_query"]["char_ie"])))
        best = best_anchors(rows)
        if best and tree:
            yardstick.append((name, meta["n_queries"], tree, best))
        print(f"\n## {name} ({meta['n_docs']} documents, {meta['n_queries']} queries, "
              f"{time.perf_counter() - t0:.0f} s)\n")
        print(paths["markdown"].read_text(encoding="utf-8").split("\n", 4)[-1])
    print("\n## The tree's own contribution: tree - leaves (same fused score, no tree; "
          "percentages)\n")
    print("| set | queries | leaves IE | tree IE | tree - leaves (paired) | leaves charIE "
          "| tree charIE | charIE tree - leaves (paired) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, leaves, tree, (d, se), (dc, sec) in own:
        print(f"| {name} | {n} | {100 * leaves['avg']['ie']:.1f} | {100 * tree['avg']['ie']:.1f} "
              f"| {100 * d:+.1f} +/- {100 * se:.1f} | {100 * leaves['avg']['char_ie']:.1f} | "
              f"{100 * tree['avg']['char_ie']:.1f} | {100 * dc:+.1f} +/- {100 * sec:.1f} |")
    if yardstick:
        print("\n## The yardstick: shipped tree mode vs the better LanceDB baseline (unit IE "
              "and char-IE each against the better of LanceDB BM25 and hybrid; percentages)\n")
        print("| set | queries | best LanceDB IE | tree IE | ratio | tree - best (paired) "
              "| best LanceDB charIE | tree charIE | ratio | tree - best (paired) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, n, tree, best in yardstick:
            cells = []
            for key in ("ie", "char_ie"):
                ref, t = best[key]["avg"][key], tree["avg"][key]
                d, se = paired_difference(tree["per_query"][key], best[key]["per_query"][key])
                cells.append(f"{100 * ref:.1f} | {100 * t:.1f} | {t / max(ref, 1e-12):.2f} | "
                             f"{100 * d:+.1f} +/- {100 * se:.1f}")
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")
    print("\n## Summary: tree vs flat (IE averaged over k = 1, 3, 5; percentages)\n")
    print("| set | queries | flat IE | tree IE | tree / flat | tree - flat (paired) "
          "| IE@1 flat / tree | charIE flat / tree |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, flat, tree, d, se in summary:
        f, t = flat["avg"], tree["avg"]
        print(f"| {name} | {n} | {100 * f['ie']:.1f} | {100 * t['ie']:.1f} | "
              f"{t['ie'] / max(f['ie'], 1e-12):.2f} | {100 * d:+.1f} +/- {100 * se:.1f} | "
              f"{100 * flat['per_k'][0]['ie']:.1f} / {100 * tree['per_k'][0]['ie']:.1f} | "
              f"{100 * f['char_ie']:.1f} / {100 * t['char_ie']:.1f} |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps({
        "tree_vs_flat": [{"set": name, "n_queries": n, "flat": flat["avg"], "tree": tree["avg"],
                          "paired_diff": d, "se": se}
                         for name, n, flat, tree, d, se in summary],
        "tree_vs_leaves": [{"set": name, "n_queries": n, "leaves": leaves["avg"],
                            "tree": tree["avg"], "paired_diff": d, "se": se,
                            "char_paired_diff": dc, "char_se": sec}
                           for name, n, leaves, tree, (d, se), (dc, sec) in own],
        "tree_vs_best_lancedb": [
            {"set": name, "n_queries": n, "tree": tree["avg"],
             **{f"best_{key}": {"name": best[key]["name"], "avg": best[key]["avg"][key]}
                for key in ("ie", "char_ie")},
             **{f"paired_{key}": paired_difference(tree["per_query"][key],
                                                   best[key]["per_query"][key])
                for key in ("ie", "char_ie")}}
            for name, n, tree, best in yardstick]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
