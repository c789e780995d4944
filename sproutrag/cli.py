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
