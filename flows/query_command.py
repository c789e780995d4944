"""`sproutrag query`: one question, or a JSONL batch of queries, against a database.

One question prints its evidence units (or, with a budget, its context) and, when fewer
came back than asked for, why; a batch writes one JSONL line per query to --out. Bad
--out, --where or --tokenizer values are usage errors (exit 2) found before any query
runs. The library is called directly (`Retriever` on a `Reader`), with the database's
encoder unless the settings name one (`sproutrag.flows.commands` has the other commands).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from sproutrag.flows.commands import EXIT_DOCS_FAILED, EXIT_ERROR, EXIT_OK
from sproutrag.schemas.settings import Settings

from sproutrag.encoder.factory import encoder_from_settings


def cmd_query(args: argparse.Namespace) -> int:
    """`sproutrag query`; a table that cannot be read gives one line (DamagedTableError)."""
    from sproutrag.storage.check import explain_damage

    with explain_damage(args.db, storage_options=args.settings.storage.lance_options(args.db)):
        return _query(args)


def _query(args: argparse.Namespace) -> int:
    from sproutrag.search.batch import run_queries
    from sproutrag.storage.reader import Reader

    settings = args.settings  # --config, SPROUTRAG_* / AWS_* env (checked by preflight)
    if args.out is not None:  # before the model loads or any query runs
        _check_out(args.out, args.queries)
    reader = Reader.open(args.db, storage_options=settings.storage.lance_options(args.db))
    if args.where is not None:  # a bad filter: exit 2, before the model loads
        _check_where(reader, args.where)
    retriever = _retriever(args, reader, settings)
    queries = _read_queries(args)
    if args.budget_tokens is not None:  # a tokenizer that cannot load: exit 2, now
        _check_tokenizer(args.tokenizer or retriever.store.encoder_id)
    rows = run_queries(retriever, queries, k=args.k, mode=args.mode,
                       budget_chars=args.budget_chars, budget_tokens=args.budget_tokens,
                       selection=args.selection, tokenizer=args.tokenizer,
                       cutoff=args.cutoff)
    return _report(args, retriever, rows)


def _retriever(args: argparse.Namespace, reader: Any, settings: Settings) -> Any:
    """The `Retriever` on READER with the database's encoder (unless the settings name
    one) and the command's search options."""
    from sproutrag.search.reader_settings import reader_settings, reader_weights
    from sproutrag.search.retriever import Retriever

    encoding = reader_settings(reader, settings).encoding  # the database's unless named
    return Retriever(
        reader, encoder=encoder_from_settings(encoding), weights=reader_weights(settings),
        beam_width=args.beam if args.beam is not None else 5, threshold=args.threshold,
        margin=args.margin,
        lexical_weight=args.lexical_weight, **settings.search.retriever_options(),
    )


def _read_queries(args: argparse.Namespace) -> list[Any]:
    """QUESTION as the one query, or the entries of the --queries file."""
    from sproutrag.search.batch import parse_lines

    if args.question is not None:
        return [{"qid": "q", "query": args.question, "doc_ids": args.doc_id or None,
                 "where": args.where}]
    from sproutrag.tasks.files import filesystem

    fs, path = filesystem(args.queries, args.settings)  # a local file or s3://
    with fs.open(path, "rb") as fh:
        return parse_lines(fh)


def _check_where(reader: Any, where: str) -> None:
    """A --where filter the `documents` table refuses: UsageError (exit 2)."""
    from sproutrag.flows.preflight import UsageError

    from sproutrag.search.hits import QueryError
    from sproutrag.search.view import TablesView

    try:
        TablesView(reader).matching(where)
    except QueryError as exc:
        raise UsageError(f"--where: {exc}") from None


def _check_tokenizer(name: str) -> None:
    """A --budget-tokens tokenizer that cannot load: UsageError (exit 2)."""
    from sproutrag.flows.preflight import UsageError

    from sproutrag.search.hits import QueryError
    from sproutrag.search.tokens import token_counter

    try:
        token_counter(name)
    except QueryError as exc:
        raise UsageError(f"--tokenizer: {exc}") from None


def _report(args: argparse.Namespace, retriever: Any, rows: list[dict]) -> int:
    """Write or print ROWS and the failed queries; returns the exit code."""
    from sproutrag.search.batch import has_internal_errors, write_jsonl

    failed = [r for r in rows if "error" in r]
    if args.queries:
        write_jsonl(args.out, rows)
        print(f"{len(rows)} queries ({len(failed)} failed) -> {args.out}")
        if not rows:
            print(f"sproutrag query: --queries {args.queries} holds no queries (an empty "
                  "file, or blank lines only): nothing was searched", file=sys.stderr)
        if not retriever.n_documents():
            print(_EMPTY.format(db=args.db), file=sys.stderr)
    elif "used_chars" in rows[0]:
        _print_context(args, rows[0])
        if not rows[0]["results"] and not retriever.n_documents():
            print(_EMPTY.format(db=args.db))
    else:
        _print_hits(args.question, rows[0])
        _print_hint(args, retriever, rows[0])
    for r in failed:  # a QUESTION's internal qid ("q") is no name the user gave
        what = f"query {r['qid']}" if args.queries else "the question"
        print(f"sproutrag query: {what} failed: {r['error']}", file=sys.stderr)
    if has_internal_errors(rows):  # a bug: its traceback was logged above
        return EXIT_ERROR
    return EXIT_DOCS_FAILED if failed else EXIT_OK


_EMPTY = ("no evidence found: the database {db} holds no documents (none indexed, or all "
          "deleted): run `sproutrag index CORPUS --db {db}` first")


def _check_out(out: str, queries: str | None) -> None:
    from sproutrag.flows.arguments import check_output_file
    from sproutrag.flows.preflight import UsageError

    if "://" in out:
        raise UsageError(f"--out {out}: sproutrag query writes a local file (the "
                         "query-corpus flow writes s3:// results)")
    try:
        check_output_file(out, source=queries)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def _printable(line: str) -> str:
    """LINE with control characters escaped ("\\x1b"): a document's escape sequences
    would otherwise drive the terminal (colours, a cleared screen, a moved cursor)."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", line)


def _print_context(args: argparse.Namespace, row: dict) -> None:
    """A context: its spans, grouped by document, and the budget used."""
    print(f"query: {args.question}")
    doc = None
    for hit in row["results"]:
        if hit["doc_id"] != doc:
            doc = hit["doc_id"]
            print(f"{doc}:")
        (s, e), = hit["spans"]
        cut = "  (cut to the budget)" if hit.get("cut") else ""
        print(f"  chars {s}-{e}  score {hit['score']:.3f}{cut}")
        for line in hit["text"].splitlines():
            print(f"     {_printable(line)}")
    used = [f"{row['used_chars']} of {args.budget_chars} characters"
            if args.budget_chars else f"{row['used_chars']} characters"]
    if "used_tokens" in row:
        used.append(f"{row['used_tokens']} of {args.budget_tokens} tokens")
    n = len(row["results"])
    print(f"({n} span{'' if n == 1 else 's'}, {', '.join(used)})")


def _print_hint(args: argparse.Namespace, retriever, row: dict) -> None:
    """Why a single question got fewer units than asked for."""
    from sproutrag.search.batch import DEFAULT_K
    if not row["results"] and "error" not in row:
        cut = retriever.threshold if args.mode != "flat" else retriever.flat_threshold
        if not retriever.n_documents():
            print(_EMPTY.format(db=args.db))
        elif cut is None:
            print("no evidence found")
        else:
            print(f"no evidence has cosine >= {cut:g} (the threshold); without "
                  "--threshold the best matches come back anyway")
    elif args.mode != "flat" and retriever.margin is not None and not retriever.fills_k:
        n = sum(len(h["spans"]) for h in row["results"])
        k = args.k if args.k is not None else DEFAULT_K
        if n < k:
            print(f"({n} of at most {k} units: the others scored more than margin "
                  f"{retriever.margin:g} below the best; --margin none fills k)")


def _print_hits(question: str, row: dict) -> None:
    print(f"query: {question}")
    for rank, hit in enumerate(row["results"], start=1):
        spans = ", ".join(f"{s}-{e}" for s, e in hit["spans"])
        print(f"{rank}. {hit['node_id']}  score {hit['score']:.3f}  chars {spans}")
        for line in hit["text"].splitlines():
            print(f"     {_printable(line)}")
