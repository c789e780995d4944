"""The `sproutrag` command line (see `sproutrag --help`).

Heavy imports (torch, transformers, prefect, lancedb) happen inside the commands, so
`sproutrag --help` is instant. `sproutrag index` runs the Prefect flow `index-corpus`
(the same code path as a deployment); without PREFECT_API_URL it starts a temporary
local Prefect server for the run that dies with the command, even on kill -9
(flows/server.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sproutrag.preflight import finite_float, margin_value, non_negative_float, positive_int

EXIT_OK = 0
EXIT_ERROR = 1  # the command could not run or finish (bad input, interrupted, ...)
EXIT_USAGE = 2  # argparse's code for bad arguments
EXIT_DOCS_FAILED = 3  # the run completed, but some documents failed (listed in `runs`)

OFFLINE_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _offline_env() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def cmd_index(args: argparse.Namespace) -> int:
    from flows.console import quiet_expected_tracebacks
    from flows.index_corpus import index_corpus
    from flows.server import temporary_server
    from sproutrag.report import RunInterruptedError, RunOutcome

    if args.no_progress:
        os.environ["SPROUTRAG_PIPELINE__PROGRESS"] = "false"
    with temporary_server(), quiet_expected_tracebacks():
        state = index_corpus(
            corpus=args.corpus, db=args.db, config=args.config, full=args.full,
            allow_mass_delete=args.allow_mass_delete, return_state=True,
        )
        result = state.result(raise_on_failure=False)
    if isinstance(result, BaseException) and not isinstance(result, RunOutcome):
        raise result  # the run stopped on an error: main() prints it
    row = result.row if isinstance(result, RunOutcome) else result
    failures = __import__("json").loads(row["failures_json"])
    print(
        f"indexed {args.corpus} into {args.db}: {row['n_new']} new, {row['n_changed']} changed, "
        f"{row['n_deleted']} deleted, {row['n_unchanged']} unchanged, {row['n_failed']} failed; "
        f"{row['n_chunks']} chunks, {row['n_nodes']} nodes, {row['n_chars']} chars in "
        f"{row['seconds']:.1f} s ({row['n_chars'] / max(row['seconds'], 1e-9):,.0f} chars/s)"
    )
    for f in failures:
        doc_id = f["doc_id"] if f["doc_id"].isprintable() else repr(f["doc_id"])
        print(f"FAILED {doc_id}: {f['reason']}", file=sys.stderr)
    if row.get("message"):
        print(f"note: {row['message']}", file=sys.stderr)
    if isinstance(result, RunInterruptedError):
        print(f"sproutrag index: {result}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_DOCS_FAILED if failures else EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    import json

    from sproutrag.queries import parse_lines, run_queries
    from sproutrag.reading import reader_settings, reader_weights
    from sproutrag.retrieval import Retriever

    settings = args.settings  # --config, SPROUTRAG_* / AWS_* env (checked by preflight)
    reader = reader_settings(args.db, settings)  # the database's encoder unless named
    retriever = Retriever(
        args.db, encoder=_encoder_from_settings(reader), weights=reader_weights(settings),
        beam_width=args.beam, threshold=args.threshold,
        margin="trained" if args.margin is _DEFAULT else args.margin,
        lexical_weight=args.lexical_weight,
        storage_options=settings.storage.lance_options(args.db),
    )
    if args.question is not None:
        queries = [{"qid": "q", "query": args.question, "doc_ids": args.doc_id or None}]
    else:
        with open(args.queries, "rb") as fh:
            queries = parse_lines(fh)
    rows = run_queries(retriever, queries, k=args.k, mode=args.mode)
    failed = [r for r in rows if "error" in r]
    if args.queries:
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{len(rows)} queries ({len(failed)} failed) -> {args.out}")
    else:
        _print_hits(args.question, rows[0])
        _print_hint(args, retriever, rows[0])
    for r in failed:
        print(f"query {r['qid']} failed: {r['error']}", file=sys.stderr)
    return EXIT_DOCS_FAILED if failed else EXIT_OK


def _print_hint(args: argparse.Namespace, retriever, row: dict) -> None:
    """Why a single question got fewer units than asked for."""
    if not row["results"] and "error" not in row:
        cut = retriever.threshold if args.mode == "tree" else retriever.flat_threshold
        if cut is None:
            print("no evidence found: the database holds no documents")
        else:
            print(f"no evidence has cosine >= {cut:g} (the threshold); --threshold 0 "
                  "shows the best matches anyway")
    elif args.mode == "tree" and retriever.margin is not None:
        n = sum(len(h["spans"]) for h in row["results"])
        if n < args.k:
            print(f"({n} of at most {args.k} units: the others scored more than margin "
                  f"{retriever.margin:g} below the best; --margin none fills the budget)")


#: --margin absent (the database's or weights' margin), as opposed to "none".
_DEFAULT = object()


def _print_hits(question: str, row: dict) -> None:
    print(f"query: {question}")
    for rank, hit in enumerate(row["results"], start=1):
        spans = ", ".join(f"{s}-{e}" for s, e in hit["spans"])
        print(f"{rank}. {hit['node_id']}  score {hit['score']:.3f}  chars {spans}")
        for line in hit["text"].splitlines():
            print(f"     {line}")


#: Default rows of `sproutrag evaluate`: the baselines, the shipped tree, what each part
#: of its search adds, and the paper's Table 3 ablations.
EVAL_MODES = ("flat", "flat_lexical", "tree", "tree_paper", "tree_cosine", "tree_nocalib",
              "tree_noseed", "untrained", "untrained_search", "embedding", "b1", "b3", "b10")


def _evaluate_command(args: argparse.Namespace) -> str:
    import shlex

    parts = ["sproutrag", "evaluate", "--docs", args.docs, "--queries", args.queries,
             "--k", *map(str, args.k), "--modes", *args.modes]
    for flag in ("weights", "config", "db", "out"):
        if getattr(args, flag):
            parts += [f"--{flag}", str(getattr(args, flag))]
    return shlex.join(parts)


def _encoder_from_settings(settings, weights=None):
    from sproutrag.encoding import Encoder
    from sproutrag.weights import load_default_weights

    enc = settings.encoding
    return Encoder(
        enc.model, device=enc.device, tokens_per_batch=enc.tokens_per_batch,
        window_tokens=enc.window_tokens, window_stride=enc.window_stride,
        chunk_max_tokens=enc.chunk_max_tokens, embedding_mode=enc.embedding_mode,
        weights=weights if weights is not None else load_default_weights(enc.weights),
    )


def cmd_train(args: argparse.Namespace) -> int:
    import time

    from sproutrag.preflight import UsageError
    from sproutrag.training import train_corpus

    if len(args.docs) != len(args.queries):
        raise UsageError(f"--docs names {len(args.docs)} files and --queries "
                         f"{len(args.queries)}: give one queries file per docs file, in the "
                         "same order")
    settings = args.settings
    t0 = time.perf_counter()
    weights, config = train_corpus(
        list(zip(args.docs, args.queries)), args.out,
        encoder=_encoder_from_settings(settings),
        chunking=settings.chunking.model_dump(),
        parent_embedding=args.parent_embedding or settings.tree.parent_embedding,
        attn_kind=args.attn_loss, epochs=args.epochs, lr=args.lr, learn_margin=args.learn_margin,
        finetune={"epochs": args.finetune_epochs, "lr": args.finetune_lr}
        if args.finetune_encoder else None,
        cache_dir=args.cache or os.path.join(args.out, "cache"),
    )
    print(
        f"trained alpha and the search (delta {weights.delta:g}, margin {weights.margin}, "
        f"lexical_weight {weights.lexical_weight:g}, size_penalty {weights.size_penalty:g}, "
        f"seed_leaves {weights.seed_leaves}) on {config['data']['n_queries']} queries "
        f"({config['data']['n_gold_pairs']} gold pairs) in {time.perf_counter() - t0:.1f} s "
        f"-> {os.path.join(args.out, 'weights.json')} (fingerprint {weights.fingerprint()})"
    )
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    from sproutrag.evaluation import evaluate_corpus, make_variants
    from sproutrag.plots import write_report
    from sproutrag.weights import load_default_weights

    settings = args.settings
    weights = load_default_weights(args.weights or settings.encoding.weights)
    encoder = _encoder_from_settings(settings, weights)
    variants = make_variants(args.modes, weights, settings.tree.parent_embedding)
    rows, meta = evaluate_corpus(
        args.docs, args.queries, encoder=encoder, chunking=settings.chunking.model_dump(),
        variants=variants, ks=args.k, cache_dir=args.cache or os.path.join(args.out, "cache"),
    )
    if args.db:
        rows += _db_rows(args, settings, encoder, meta)
    meta["command"] = _evaluate_command(args)
    meta["weights"] = {"source": weights.source, "fingerprint": weights.fingerprint(),
                       "delta": weights.delta, "margin": weights.margin}
    flat = next((v.name for v in variants if v.mode == "flat" and v.delta == 0), None)
    paths = write_report(rows, args.out, meta, flat_name=flat)
    print(paths["markdown"].read_text(encoding="utf-8"))
    print(f"-> {paths['markdown']}, {paths['json']}, {paths['png']}")
    return EXIT_OK


def _db_rows(args: argparse.Namespace, settings, encoder, meta: dict) -> list[dict]:
    """The stored path: index DOCS into --db (incremental), query it with `Retriever`."""
    from flows.index_corpus import index_corpus
    from sproutrag.evaluation import (
        load_features,
        read_jsonl,
        result_row,
        retriever_runs,
        usable_queries,
    )
    from sproutrag.retrieval import Retriever

    if args.weights:  # index with the weights being evaluated (settings: env > YAML)
        os.environ["SPROUTRAG_ENCODING__WEIGHTS"] = os.path.abspath(args.weights)
    index_corpus(corpus=args.docs, db=args.db, config=args.config)
    feats = load_features(meta["features"])  # the file this evaluation used, not the newest
    queries = usable_queries(read_jsonl(args.queries), feats)
    retriever = Retriever(args.db, encoder=encoder)
    rows = []
    for mode in ("tree", "flat"):
        runs = retriever_runs(retriever, queries, args.k, mode)
        rows.append(result_row(f"{mode} [database {args.db}]", runs, feats, queries, mode=mode,
                               notes="stored path", stats={}))
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sproutrag",
        description="SproutRAG: attention-guided tree search over long documents. "
        "Index a corpus into LanceDB, then query it.",
        epilog=f"Exit codes: {EXIT_OK} ok, {EXIT_ERROR} error (or an index run interrupted by "
        f"SIGTERM/SIGINT), {EXIT_USAGE} bad arguments, "
        f"{EXIT_DOCS_FAILED} some documents (or queries) failed. Settings come from --config "
        "(YAML), SPROUTRAG_* environment variables (e.g. SPROUTRAG_ENCODING__DEVICE=cpu) "
        "and flags, flags winning.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "index",
        help="index a corpus into a LanceDB database (incremental)",
        description="Discover CORPUS (a folder of .txt/.md files, a .jsonl file of "
        "{doc_id, text} lines, or one file; local or s3://), split it into sentence chunks, "
        "encode them, build one attention tree per document and store it in DB. "
        "Unchanged documents are skipped.",
    )
    p.add_argument("corpus", metavar="CORPUS", help="folder, .jsonl file or text file")
    p.add_argument("--db", required=True, help="LanceDB database folder or s3:// URI")
    p.add_argument("--config", metavar="FILE", help="YAML settings file")
    p.add_argument("--full", action="store_true", help="re-index every document")
    p.add_argument("--allow-mass-delete", action="store_true",
                   help="let this run delete more than pipeline.max_delete_share (default "
                   "half) of the indexed documents, or all of them for an empty corpus")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser(
        "query",
        help="search an indexed database (one question, or a JSONL batch)",
        description="Hierarchical beam search over the stored trees (or, with --mode flat, "
        "cosine top-k over leaves). Each result carries doc_id, node_id, score, the "
        "character spans of its evidence units and their text; at most k units in all. "
        "Batch input lines: {qid, query, doc_ids?}; output lines: {qid, results[, error]}.",
    )
    p.add_argument("question", nargs="?", metavar="QUESTION", help="free-text question")
    p.add_argument("--db", required=True, help="database built by `sproutrag index`")
    p.add_argument("--queries", metavar="Q.jsonl", help="batch of queries")
    p.add_argument("--out", metavar="R.jsonl", help="where to write batch results")
    p.add_argument("--k", type=positive_int, default=5,
                   help="evidence units per query (default 5)")
    p.add_argument("--mode", choices=["tree", "flat"], default="tree", help="default tree")
    p.add_argument("--beam", type=positive_int, default=5, help="beam width b (default 5)")
    p.add_argument("--threshold", type=finite_float, metavar="DELTA",
                   help="keep only units whose cosine reaches DELTA (tree mode default: the "
                   "delta the database was indexed with; flat mode default: none)")
    p.add_argument("--lexical-weight", type=non_negative_float, metavar="W",
                   help="tree mode: rank nodes by z(cosine) + W z(BM25) (default: the "
                   "database's; 0 = cosine only)")
    p.add_argument("--margin", metavar="M", type=margin_value, default=_DEFAULT,
                   help="relative cutoff for tree mode: keep nodes whose score and leaves' "
                   "scores are within M of the best leaf (default: the database's margin; "
                   "'none' fills the budget of k units)")
    p.add_argument("--doc-id", action="extend", nargs="+", metavar="ID",
                   help="restrict to these documents (--doc-id A B, or --doc-id repeated)")
    p.add_argument("--config", metavar="FILE",
                   help="YAML settings file (storage; encoding.model / encoding.weights to "
                   "name them explicitly: by default the database's own are used)")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser(
        "train",
        help="learn the attention aggregation (alpha) and the search parameters",
        description="Train alpha with L = L_ret + 0.1 L_attn (tau 0.05; AdamW lr 1e-3, "
        "warm-up) on gold chunk pairs of Q.jsonl (lines {qid, query, doc_ids, gold: "
        "[{doc_id, start, end}]}), then pick the search parameters (lexical weight, size "
        "calibration of internal nodes, leaf seeds, threshold delta, and with --learn-margin "
        "the relative cutoff) maximising the paper's IE on the same queries, averaged over "
        "the training sets. Several sets: --docs A.jsonl B.jsonl --queries QA.jsonl "
        "QB.jsonl. Writes MODEL_DIR/weights.json (use it with encoding.weights) and "
        "config.json.",
    )
    p.add_argument("--docs", required=True, nargs="+", metavar="D.jsonl",
                   help="{doc_id, text} lines (one file per training set)")
    p.add_argument("--queries", required=True, nargs="+", metavar="Q.jsonl",
                   help="training queries (one file per --docs file, same order)")
    p.add_argument("--out", required=True, metavar="MODEL_DIR", help="output folder")
    p.add_argument("--config", metavar="FILE", help="YAML settings file (chunking, encoder)")
    p.add_argument("--epochs", type=positive_int, default=100, help="passes over the queries (100)")
    p.add_argument("--lr", type=non_negative_float, default=1e-3,
                   help="AdamW learning rate for alpha")
    p.add_argument("--attn-loss", choices=["paper", "row"], default="paper",
                   help="paper: -log M_ij; row: -log(M_ij / sum_r M_ir)")
    p.add_argument("--parent-embedding", choices=["mean_of_children", "size_weighted"],
                   help="trees used to learn delta (default: the settings')")
    p.add_argument("--learn-margin", action="store_true",
                   help="also learn the relative cutoff margin (off: on ContractNLI it "
                   "learns 0, one unit per query; see docs/results.md)")
    p.add_argument("--cache", metavar="DIR", help="feature cache (default MODEL_DIR/cache)")
    p.add_argument("--finetune-encoder", action="store_true",
                   help="also fine-tune the encoder with the joint loss into MODEL_DIR/encoder "
                   "(then alpha and delta are learned again on it; index with "
                   "encoding.model: MODEL_DIR/encoder and encoding.weights: "
                   "MODEL_DIR/weights.json)")
    p.add_argument("--finetune-epochs", type=positive_int, default=1, metavar="N",
                   help="passes over the training documents when fine-tuning (1)")
    p.add_argument("--finetune-lr", type=non_negative_float, default=2e-5, metavar="LR",
                   help="AdamW learning rate for the encoder (2e-5)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "evaluate",
        help="score retrieval modes and ablations on labelled queries",
        description="Encode DOCS once, then score every mode (tree, flat, ablations) on "
        "Q.jsonl's gold spans: unit precision/recall/IE at each k and averaged over k, "
        "character precision/recall. Writes OUT/results.md, results.json and ie.png. "
        "With --db, DOCS are also indexed into DB and queried through the database.",
    )
    p.add_argument("--docs", required=True, metavar="D.jsonl", help="{doc_id, text} lines")
    p.add_argument("--queries", required=True, metavar="Q.jsonl", help="labelled queries")
    p.add_argument("--k", type=positive_int, nargs="+", default=[1, 3, 5],
                   help="budgets (1 3 5)")
    p.add_argument("--modes", nargs="+", default=list(EVAL_MODES),
                   help=f"rows to score (default: {' '.join(EVAL_MODES)}; also "
                   "flat_delta flat_cutoffs nomargin size_weighted untrained_size_weighted "
                   "noband b5)")
    p.add_argument("--weights", metavar="FILE", help="trained weights (default: packaged)")
    p.add_argument("--config", metavar="FILE", help="YAML settings file")
    p.add_argument("--db", metavar="DIR", help="also index into and query this database")
    p.add_argument("--out", default="out/eval", metavar="DIR", help="report folder")
    p.add_argument("--cache", metavar="DIR", help="feature cache (default OUT/cache)")
    p.set_defaults(func=cmd_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from schemas.settings import SettingsError
    from sproutrag.errors import describe_os_error
    from sproutrag.locking import DatabaseBusyError
    from sproutrag.preflight import UsageError, preflight
    from sproutrag.report import RunOutcome

    parser = build_parser()
    args = parser.parse_args(argv)
    _offline_env()
    try:
        args.settings = preflight(args)  # before Prefect starts or a model loads
        return args.func(args)
    except (UsageError, SettingsError) as exc:  # nothing ran
        print(f"sproutrag {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FileNotFoundError, ValueError, KeyError, DatabaseBusyError, RunOutcome) as exc:
        print(f"sproutrag {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (OSError, RuntimeError) as exc:  # a read-only database, a full disk
        ours = isinstance(exc, OSError) and exc.errno is None  # raised with a message
        line = str(exc) if ours else describe_os_error(exc)
        if line is None:
            raise
        print(f"sproutrag {args.command}: error: {line}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
