"""The `sproutrag` command line (see `sproutrag --help`): arguments and exit codes.

The command line belongs to the orchestration side (`index` runs a Prefect flow); the
commands themselves are in `sproutrag.flows.commands` (`query`: in
`sproutrag.flows.query_command`); `python -m sproutrag.flows.cli` runs it too. Heavy
imports (torch, transformers, prefect, lancedb) happen inside the commands, so
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

from sproutrag.flows.arguments import count_type, number_type
from sproutrag.flows.commands import (
    EVAL_MODES,
    EXIT_DOCS_FAILED,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    cmd_check,
    cmd_evaluate,
    cmd_index,
    cmd_train,
)
from sproutrag.flows.preflight import non_negative_float, positive_int
from sproutrag.flows.query_command import cmd_query

from sproutrag.params import DEFAULT, MODES, SELECTIONS

OFFLINE_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "true",  # every core tokenizes (a forked child turns it off)
}


def _offline_env() -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def _version() -> str:
    """The installed package's version (CHANGELOG.md says what each one changed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sproutrag")
    except PackageNotFoundError:  # run from a checkout that was not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sproutrag",
        description="SproutRAG: attention-guided tree search over long documents. "
        "Index a corpus into LanceDB, then query it.",
        epilog=f"Exit codes: {EXIT_OK} ok, {EXIT_ERROR} error (or interrupted: Ctrl-C, or "
        f"SIGTERM to an index run), {EXIT_USAGE} bad arguments, "
        f"{EXIT_DOCS_FAILED} some documents (or queries) failed. Settings come from --config "
        "(YAML), SPROUTRAG_* environment variables (e.g. SPROUTRAG_ENCODING__DEVICE=cpu) "
        "and flags, flags winning.",
    )
    parser.add_argument("--version", action="version", version=f"sproutrag {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_index(sub)
    _add_query(sub)
    _add_train(sub)
    _add_evaluate(sub)
    _add_check(sub)
    return parser


def _add_index(sub) -> None:
    p = sub.add_parser(
        "index",
        help="index a corpus into a LanceDB database (incremental)",
        description="Discover CORPUS (a folder of .txt/.md files, hidden ones left out "
        "unless pipeline.include_hidden; a .jsonl file of {doc_id, text} lines; or one "
        "file; local or s3://), split it into sentence chunks, "
        "encode them, build one attention tree per document and store it in DB. "
        "Incremental: a file whose size and modification time (an S3 object: ETag) are "
        "those stored is unchanged without being read (pipeline.listing_fast_path), any "
        "other document is read and compared by content hash; only new and changed "
        "documents are indexed, and documents gone from the corpus are deleted.",
    )
    p.add_argument("corpus", metavar="CORPUS", help="folder, .jsonl file or text file")
    p.add_argument("--db", required=True, help="LanceDB database folder or s3:// URI")
    p.add_argument("--config", metavar="FILE", help="YAML settings file")
    p.add_argument("--full", action="store_true", help="read and re-index every document")
    p.add_argument("--verify", action="store_true",
                   help="also re-index every document `sproutrag check` names (a stored "
                   "text, tree, leaf text, vector or name that is wrong; reads the whole "
                   "database, as the check does) and every file whose text changed while "
                   "its size and modification time stayed (reads every file, as "
                   "pipeline.listing_fast_path: false does)")
    p.add_argument("--allow-mass-delete", action="store_true",
                   help="let this run delete more than pipeline.max_delete_share (default "
                   "half) of the indexed documents, or all of them for an empty corpus")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_index)


def _add_query(sub) -> None:
    p = sub.add_parser(
        "query",
        help="search an indexed database (one question, or a JSONL batch)",
        description="Hierarchical beam search over the stored trees (--mode tree). "
        "--mode leaves ranks the same documents' leaves by tree mode's own fused score "
        "(cosine + BM25) and cutoffs with no tree: tree minus leaves is what the tree adds. "
        "--mode flat is the paper's baseline: cosine top-k over leaves. Each result "
        "carries doc_id, node_id, score, the character spans of its evidence units and "
        "their text; at most k units in all. With --budget-chars (or --budget-tokens) the "
        "results are a context for a reader instead: the best evidence that fits the "
        "budget, as non-overlapping spans (adjacent evidence merged into one), grouped by "
        "document (most relevant first) and in document order inside each, with the "
        "characters used. Batch input lines: {qid, query, doc_ids?, where?, budget_chars?, "
        "budget_tokens?}; output lines: {qid, results[, used_chars, used_tokens, "
        "budget_chars, budget_tokens][, error]} (each budget and its use when given).",
    )
    p.add_argument("question", nargs="?", metavar="QUESTION", help="free-text question")
    p.add_argument("--db", required=True, help="database built by `sproutrag index`")
    p.add_argument("--queries", metavar="Q.jsonl", help="batch of queries")
    p.add_argument("--out", metavar="R.jsonl", help="where to write batch results")
    _add_amount_options(p)
    _add_search_options(p)
    _add_filter_options(p)
    p.add_argument("--config", metavar="FILE",
                   help="YAML settings file (storage; encoding.model / encoding.weights to "
                   "name them explicitly: by default the database's own are used)")
    p.set_defaults(func=cmd_query)


def _add_amount_options(p: argparse.ArgumentParser) -> None:
    """`sproutrag query`'s options of how much comes back: k units, or a budget."""
    p.add_argument("--k", type=count_type("k"), default=None,
                   help="evidence units per query (default 5; with a budget, no limit "
                   "unless given: then both limits hold)")
    p.add_argument("--budget-chars", type=count_type("budget_chars"), metavar="B",
                   help="return a context of at most B characters (the spans' characters, "
                   "gaps inside a merged span included) instead of k units")
    p.add_argument("--budget-tokens", type=count_type("budget_tokens"), metavar="T",
                   help="return a context of at most T tokens, counted by --tokenizer (may "
                   "be combined with --budget-chars: both hold)")
    p.add_argument("--tokenizer", metavar="NAME",
                   help="tokenizer counting --budget-tokens: a model folder or name "
                   "(default: the database's encoder)")
    p.add_argument("--selection", choices=SELECTIONS, default=None,
                   help="how evidence competes for a budget: leaves (each leaf alone; the "
                   "default, chosen by `bench/budget.py`), window (each leaf with its "
                   "neighbours), tree (every node, at its characters' cost)")
    p.add_argument("--cutoff", metavar="C", type=number_type("cutoff", none="none"),
                   default=DEFAULT,
                   help="with a budget: leave out evidence scoring more than C below the best "
                   "unit (fused z-score units, 0 to 1e6) even when the budget has room "
                   "(default 1, fitted on the training splits: short, precise contexts); "
                   "'none' fills the budget")


def _add_search_options(p: argparse.ArgumentParser) -> None:
    """`sproutrag query`'s options of how the search ranks and cuts."""
    p.add_argument("--mode", choices=MODES, default="tree",
                   help="tree (default; the method), leaves (tree mode's fused score, no "
                   "tree), flat (cosine only)")
    p.add_argument("--beam", type=count_type("beam_width"), default=None,
                   help="beam width b (default 5; a top-k search's, not a budget's)")
    p.add_argument("--threshold", type=number_type("threshold"), metavar="DELTA",
                   help="keep only units whose cosine reaches DELTA, -1 to 1: fewer than k "
                   "come back when fewer reach it (default: none; tree and leaves modes then "
                   "rank by the database's delta and still fill k)")
    p.add_argument("--lexical-weight", type=number_type("lexical_weight"), metavar="W",
                   help="tree and leaves modes: rank units by z(cosine) + W z(BM25), 0 to "
                   "1e6 (default: the database's; 0 = cosine only)")
    p.add_argument("--margin", metavar="M", type=number_type("margin", none="none"),
                   default=DEFAULT,
                   help="relative cutoff for tree and leaves modes: keep nodes whose score and "
                   "leaves' scores are within M (0 to 2) of the best leaf, fewer than k when fewer "
                   "are (default: the database's margin, which orders and still fills k; "
                   "'none': no margin)")


def _add_filter_options(p: argparse.ArgumentParser) -> None:
    """`sproutrag query`'s options of which documents are searched."""
    p.add_argument("--where", metavar="SQL",
                   help="search only the documents whose `documents` columns match this "
                   "LanceDB SQL filter, e.g. \"title LIKE 'Q3%%'\", \"modified_at > "
                   "TIMESTAMP '2025-01-01 00:00:00'\" or, on a JSONL corpus's other fields, "
                   "\"json_get_string(metadata, 'customer') = 'acme'\" (a prefilter: k is "
                   "still filled from the matching documents; a batch line may carry its "
                   "own \"where\")")
    p.add_argument("--doc-id", action="extend", nargs="+", metavar="ID",
                   help="restrict a QUESTION to these documents (--doc-id A B, or --doc-id "
                        "repeated; an id that starts with '-' as --doc-id=-ID; a --queries "
                        "line carries its own \"doc_ids\")")


def _add_train(sub) -> None:
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
    p.add_argument("--layers", type=positive_int, metavar="K",
                   help="learn alpha over the heads of the first K layers only: the index's "
                   "window pass then stops after layer K, so trees cost a fraction of a "
                   "whole forward (default: all layers)")
    p.add_argument("--search-from", metavar="WEIGHTS.json",
                   help="keep the search parameters of this weights file instead of "
                   "learning them (only alpha, the trees, is trained)")
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


def _add_evaluate(sub) -> None:
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
    p.add_argument("--k", type=count_type("k"), nargs="+", default=[1, 3, 5],
                   help="the numbers of units scored, each a cutoff of the ranking (default 1 3 5; "
                   "character budgets are --budgets)")
    p.add_argument("--modes", nargs="+", default=list(EVAL_MODES),
                   help=f"rows to score (default: {' '.join(EVAL_MODES)}; also "
                   "flat_delta flat_cutoffs nomargin size_weighted untrained_size_weighted "
                   "noband b5; lancedb_bm25 and lancedb_hybrid are LanceDB's own full-text and "
                   "hybrid RRF search over plain two-sentence chunks, the yardstick)")
    p.add_argument("--weights", metavar="FILE", help="trained weights (default: packaged)")
    p.add_argument("--config", metavar="FILE", help="YAML settings file")
    p.add_argument("--db", metavar="DIR", help="also index into and query this database")
    p.add_argument("--corpus-wide", action="store_true",
                   help="with --db, also query the whole database without the queries' "
                   "doc_ids (the Retriever's first stage picks the documents, as `sproutrag "
                   "query` without --doc-id): rows '<mode> corpus-wide' beside the "
                   "within-document ones")
    p.add_argument("--budgets", type=count_type("budget_chars"), nargs="+", metavar="B",
                   help="also score contexts under these character budgets (e.g. 500 1000 "
                   "2000): char precision, recall and P x R per budget and spans per "
                   "context for flat, leaves, window and tree selections and the LanceDB "
                   "baselines among --modes, paired")
    p.add_argument("--out", default="out/eval", metavar="DIR", help="report folder")
    p.add_argument("--cache", metavar="DIR", help="feature cache (default OUT/cache)")
    p.set_defaults(func=cmd_evaluate)


def _add_check(sub) -> None:
    p = sub.add_parser(
        "check",
        help="verify that a database can be read and its trees and texts are whole",
        description="Read every column of every table of DB, check that each document's "
        "stored tree exists with 2n - 1 valid nodes for its n chunks, that its leaf "
        "texts are the document's text and its vectors agree with the tree (leaves of unit "
        "length, each internal node the mean of its children), and that each stored text "
        "hashes to its content hash. Prints one line per problem and a summary line. "
        "Exit codes: 0 healthy, "
        "1 problems found (a damaged table: `sproutrag index CORPUS --db DB --full` "
        "rebuilds the database, moving the damaged tables aside; damaged documents: "
        "`sproutrag index CORPUS --db DB --verify` re-indexes them), 2 bad arguments (no "
        "database at DB).",
    )
    p.add_argument("--db", required=True, help="database built by `sproutrag index`")
    p.add_argument("--config", metavar="FILE", help="YAML settings file (storage)")
    p.set_defaults(func=cmd_check)


def main(argv: Sequence[str] | None = None) -> int:
    from sproutrag.flows.preflight import UsageError, preflight
    from sproutrag.schemas.settings import SettingsError

    from sproutrag.errors import (
        DatasetError,
        SproutragError,
        describe_os_error,
        describe_storage_error,
    )
    from sproutrag.interrupt import term_as_interrupt

    parser = build_parser()
    args = parser.parse_args(argv)
    _offline_env()
    try:
        with term_as_interrupt():  # SIGTERM as Ctrl-C, not a silent exit 143
            args.settings = preflight(args)  # before Prefect starts or a model loads
            return args.func(args)
    except (UsageError, SettingsError, DatasetError) as exc:  # nothing ran (a bad JSONL file)
        print(f"sproutrag {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SproutragError as exc:  # the project's own: bad input, a refused run, damage
        print(f"sproutrag {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - S3, the OS (a full disk), else a bug
        settings = getattr(args, "settings", None)  # None: preflight failed before it
        line = describe_storage_error(exc, _paths(args), settings and settings.storage.endpoint)
        if line is None and isinstance(exc, OSError | RuntimeError):
            ours = isinstance(exc, OSError) and exc.errno is None  # raised with a message
            line = str(exc) if ours else describe_os_error(exc)
        if line is None:
            return _bug(args.command)
        print(f"sproutrag {args.command}: error: {line}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C outside an index run's batches, a 2nd signal
        why = str(exc) or "SIGINT"
        print(f"sproutrag {args.command}: interrupted ({why}); stopped", file=sys.stderr)
        return EXIT_ERROR


def _paths(args) -> list[str]:
    """The corpus, database and batch paths a command was given (for its error lines)."""
    return [v for name in ("corpus", "db", "queries", "out")
            if isinstance(v := getattr(args, name, None), str)]


def _bug(command: str) -> int:
    """An exception the project does not raise on purpose: its traceback, then one line
    saying so (exit 1)."""
    import traceback

    traceback.print_exc(file=sys.stderr)
    print(f"sproutrag {command}: internal error (a bug, not your input: the traceback is "
          "above; please report it)", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
