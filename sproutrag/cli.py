"""The `sproutrag` command line (see `sproutrag --help`).

Heavy imports (torch, transformers, prefect, lancedb) happen inside the commands, so
`sproutrag --help` is instant. `sproutrag index` runs the Prefect flow `index-corpus`
(the same code path as a deployment); without PREFECT_API_URL, Prefect starts a
temporary local server for the run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

EXIT_OK = 0
EXIT_ERROR = 1  # the command could not run (bad input, missing database, ...)
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
    from flows.index_corpus import index_corpus

    if args.no_progress:
        os.environ["SPROUTRAG_PIPELINE__PROGRESS"] = "false"
    row = index_corpus(corpus=args.corpus, db=args.db, config=args.config, full=args.full)
    failures = __import__("json").loads(row["failures_json"])
    print(
        f"indexed {args.corpus} into {args.db}: {row['n_new']} new, {row['n_changed']} changed, "
        f"{row['n_deleted']} deleted, {row['n_unchanged']} unchanged, {row['n_failed']} failed; "
        f"{row['n_chunks']} chunks, {row['n_nodes']} nodes, {row['n_chars']} chars in "
        f"{row['seconds']:.1f} s ({row['n_chars'] / max(row['seconds'], 1e-9):,.0f} chars/s)"
    )
    for f in failures:
        print(f"FAILED {f['doc_id']}: {f['reason']}", file=sys.stderr)
    return EXIT_DOCS_FAILED if failures else EXIT_OK


def _read_queries(path: str) -> list:
    import json

    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                out.append({"qid": f"line-{n}", "query": "", "_bad": f"bad JSON: {exc}"})
    return out


def cmd_query(args: argparse.Namespace) -> int:
    import json

    from sproutrag.retrieval import Retriever, run_queries

    if (args.question is None) == (args.queries is None):
        raise ValueError("give either a QUESTION or --queries FILE (and --out FILE)")
    if args.queries and not args.out:
        raise ValueError("--queries needs --out FILE for the results")
    retriever = Retriever(args.db, beam_width=args.beam)
    if args.question is not None:
        queries = [{"qid": "q", "query": args.question, "doc_ids": args.doc_id or None}]
    else:
        queries = _read_queries(args.queries)
    rows = run_queries(retriever, queries, k=args.k, mode=args.mode)
    for q, row in zip(queries, rows):
        if isinstance(q, dict) and "_bad" in q:
            row["error"] = q["_bad"]
    failed = [r for r in rows if "error" in r]
    if args.queries:
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{len(rows)} queries ({len(failed)} failed) -> {args.out}")
    else:
        _print_hits(args.question, rows[0])
    for r in failed:
        print(f"query {r['qid']} failed: {r['error']}", file=sys.stderr)
    return EXIT_DOCS_FAILED if failed else EXIT_OK


def _print_hits(question: str, row: dict) -> None:
    print(f"query: {question}")
    for rank, hit in enumerate(row["results"], start=1):
        spans = ", ".join(f"{s}-{e}" for s, e in hit["spans"])
        print(f"{rank}. {hit['node_id']}  score {hit['score']:.3f}  chars {spans}")
        for line in hit["text"].splitlines():
            print(f"     {line}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sproutrag",
        description="SproutRAG: attention-guided tree search over long documents. "
        "Index a corpus into LanceDB, then query it.",
        epilog=f"Exit codes: {EXIT_OK} ok, {EXIT_ERROR} error, {EXIT_USAGE} bad arguments, "
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
    p.add_argument("--k", type=int, default=5, help="evidence units per query (default 5)")
    p.add_argument("--mode", choices=["tree", "flat"], default="tree", help="default tree")
    p.add_argument("--beam", type=int, default=5, help="beam width b (default 5)")
    p.add_argument("--doc-id", action="append", metavar="ID", help="restrict to documents")
    p.set_defaults(func=cmd_query)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _offline_env()
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"sproutrag {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
