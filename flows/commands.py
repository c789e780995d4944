"""What the `sproutrag` commands do (`sproutrag.flows.cli` parses the arguments).

`index` (and `evaluate --db`) run the Prefect flow `index-corpus` (the same code path as a
deployment) under a temporary local Prefect server when PREFECT_API_URL is not set
(`sproutrag.flows.server`), handing it the settings preflight loaded as its `settings` parameter
(never through environment variables); `query` (`sproutrag.flows.query_command`), `train`
and `evaluate` call the library directly, with encoders from
`sproutrag.encoder.factory.encoder_from_settings` (one command per process: nothing to
cache).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from sproutrag.schemas.settings import Settings

from sproutrag.documents import failure_line
from sproutrag.encoder.factory import encoder_from_settings
from sproutrag.errors import MassDeleteError

EXIT_OK = 0
EXIT_ERROR = 1  # the command could not run or finish (bad input, interrupted, ...)
EXIT_USAGE = 2  # argparse's code for bad arguments
EXIT_DOCS_FAILED = 3  # the run completed, but some documents (or queries) failed (`runs`)

def with_setting(settings: Settings, section: str, **values: Any) -> Settings:
    """SETTINGS with fields of one section replaced (validated like every setting)."""
    part = getattr(settings, section).model_copy(update=values)
    return settings.model_copy(update={section: type(part).model_validate(part.model_dump())})


def cmd_index(args: argparse.Namespace) -> int:
    settings = args.settings  # --config, SPROUTRAG_* environment (checked by preflight)
    if args.no_progress:
        settings = with_setting(settings, "pipeline", progress=False)
    return run_index(args.corpus, args.db, settings, full=args.full, verify=args.verify,
                     allow_mass_delete=args.allow_mass_delete)


def index_result(state: Any, db: str, settings: Settings | None = None) -> Any:
    """What a finished `index-corpus` flow run STATE returned (its `runs` row, or its
    `RunOutcome`). When Prefect's server answered the run's final state from its own
    record (a retried request under load: the state holds no data), the row the run
    wrote to DB's `runs` table, found by the flow run's id."""
    from prefect.exceptions import MissingResult

    from sproutrag.storage.store import Store

    try:
        return state.result(raise_on_failure=False)
    except MissingResult:
        if not state.is_completed():
            raise
        options = settings.storage.lance_options(db) if settings is not None else None
        runs = Store.open_existing(db, storage_options=options).table("runs")
        flow_run_id = str(state.state_details.flow_run_id)
        rows = [] if runs is None else runs.search().where(
            f"flow_run_id = '{flow_run_id}'").limit(None).to_list()
        if len(rows) != 1:
            raise
        return rows[0]


def run_index(corpus: str, db: str, settings: Settings, *, full: bool = False,
              verify: bool = False, allow_mass_delete: bool = False,
              raise_outcome: bool = False) -> int:
    """Run the flow `index-corpus` as `sproutrag index` does (a temporary Prefect server
    without PREFECT_API_URL, SETTINGS as the flow's parameter), print its summary; returns
    the exit code. RAISE_OUTCOME: raise a run that did not succeed (failed documents past
    the tolerated share, interrupted) after printing, instead of returning its code."""
    from sproutrag.flows.console import quiet_expected_tracebacks
    from sproutrag.flows.index_corpus import index_corpus
    from sproutrag.flows.server import temporary_server

    from sproutrag.ingest.run_summary import RunInterruptedError, RunOutcome
    from sproutrag.storage.locking import DatabaseLock

    # The run lock before the server starts: a busy database is refused in a second; the
    # flow takes the same lock again (re-entrant within this process).
    lock = DatabaseLock(db, timeout=settings.pipeline.lock_timeout)
    with lock, temporary_server(), quiet_expected_tracebacks():
        state = index_corpus(
            corpus=corpus, db=db, settings=settings, full=full, verify=verify,
            allow_mass_delete=allow_mass_delete, return_state=True,
        )
        result = index_result(state, db, settings)
    if isinstance(result, BaseException) and not isinstance(result, RunOutcome):
        raise result  # the run stopped on an error: main() prints it
    row = result.row if isinstance(result, RunOutcome) else result
    failures = __import__("json").loads(row["failures_json"])
    print(
        f"indexed {corpus} into {db}: {row['n_new']} new, {row['n_changed']} changed, "
        f"{row['n_deleted']} deleted, {row['n_unchanged']} unchanged, {row['n_failed']} failed; "
        f"{row['n_chunks']} chunks, {row['n_nodes']} nodes, {row['n_chars']} chars in "
        f"{row['seconds']:.1f} s ({row['n_chars'] / max(row['seconds'], 1e-9):,.0f} chars/s)"
    )
    for f in failures:
        print(f"FAILED {failure_line(f['doc_id'], f['reason'])}", file=sys.stderr)
    if row.get("message"):
        print(f"note: {row['message']}", file=sys.stderr)
    if raise_outcome and isinstance(result, RunOutcome):
        raise result  # main() prints it
    if isinstance(result, RunInterruptedError):
        print(f"sproutrag index: {result}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_DOCS_FAILED if failures else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """`sproutrag check`: 0 healthy, 1 problems found, 2 no database at --db. A progress
    bar of the rows read goes to stderr when it is a terminal and pipeline.progress is on."""
    from sproutrag.flows.preflight import UsageError

    from sproutrag.storage.check import check_database
    from sproutrag.storage.store import DatabaseNotFoundError

    bar = _rows_bar(args.settings)
    try:
        report = check_database(
            args.db, storage_options=args.settings.storage.lance_options(args.db),
            progress=None if bar is None else lambda done, total: _advance(bar, done, total))
    except DatabaseNotFoundError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    for line in report.lines():
        print(line)
    return EXIT_OK if report.healthy else EXIT_ERROR


def _rows_bar(settings: Settings):
    """A tqdm bar on stderr, or None when stderr is not a terminal or the settings'
    pipeline.progress is off (`SPROUTRAG_PIPELINE__PROGRESS=false`, --config)."""
    if not settings.pipeline.progress or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(desc="check", unit=" rows", unit_scale=True, file=sys.stderr)


def _advance(bar, done: int, total: int) -> None:
    bar.total = total
    bar.update(done - bar.n)


#: Default rows of `sproutrag evaluate`: the baselines, the shipped tree, what each part
#: of its search adds, and the paper's Table 3 ablations.
EVAL_MODES = ("flat", "leaves", "flat_lexical", "tree", "tree_paper", "tree_cosine", "tree_nocalib",
              "tree_noseed", "untrained", "untrained_search", "embedding", "b1", "b3", "b10",
              "lancedb_bm25", "lancedb_hybrid")


def _evaluate_command(args: argparse.Namespace) -> str:
    import shlex

    parts = ["sproutrag", "evaluate", "--docs", args.docs, "--queries", args.queries,
             "--k", *map(str, args.k), "--modes", *args.modes]
    for flag in ("weights", "config", "db", "out", "cache"):
        if getattr(args, flag, None):
            parts += [f"--{flag}", str(getattr(args, flag))]
    if getattr(args, "corpus_wide", False):
        parts.append("--corpus-wide")
    if getattr(args, "budgets", None):
        parts += ["--budgets", *map(str, args.budgets)]
    return shlex.join(parts)


def cmd_train(args: argparse.Namespace) -> int:
    import time

    from sproutrag.flows.preflight import UsageError

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.learn.training import train_corpus

    if len(args.docs) != len(args.queries):
        raise UsageError(f"--docs names {len(args.docs)} files and --queries "
                         f"{len(args.queries)}: give one queries file per docs file, in the "
                         "same order")
    settings = args.settings
    encoder = encoder_from_settings(settings.encoding)
    if args.layers is not None and args.layers > encoder.n_layers:
        raise UsageError(f"--layers {args.layers}: the encoder has {encoder.n_layers} layers; "
                         f"give 1 to {encoder.n_layers}")
    t0 = time.perf_counter()
    weights, config = train_corpus(
        list(zip(args.docs, args.queries)), args.out,
        encoder=encoder,
        chunking=settings.chunking.model_dump(),
        parent_embedding=args.parent_embedding or settings.tree.parent_embedding,
        attn_kind=args.attn_loss, epochs=args.epochs, lr=args.lr, learn_margin=args.learn_margin,
        finetune={"epochs": args.finetune_epochs, "lr": args.finetune_lr}
        if args.finetune_encoder else None,
        layers=args.layers,
        search=TrainedWeights.load(args.search_from).search if args.search_from else None,
        cache_dir=args.cache or os.path.join(args.out, "cache"),
    )
    print(
        f"trained alpha and the search ({_learned(weights.search)}) on "
        f"{config['data']['n_queries']} queries "
        f"({config['data']['n_gold_pairs']} gold pairs) in {time.perf_counter() - t0:.1f} s "
        f"-> {os.path.join(args.out, 'weights.json')} (fingerprint {weights.fingerprint()})"
    )
    return EXIT_OK


def _learned(search) -> str:
    """The learned search parameters as `name value, ...` (delta 0.1, margin None, ...)."""
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in search.learned().items())


def cmd_evaluate(args: argparse.Namespace) -> int:
    from sproutrag.flows.preflight import UsageError

    from sproutrag.encoder.weights import load_default_weights
    from sproutrag.learn.anchors import ANCHORS, quiet_lance_deprecations
    from sproutrag.learn.evaluation import evaluate_corpus, read_inputs
    from sproutrag.learn.report import write_report
    from sproutrag.learn.variants import VARIANT_NAMES, make_variants

    quiet_lance_deprecations()  # before LanceDB loads (none of the above loads it)
    unknown = [m for m in args.modes if m not in VARIANT_NAMES and m not in ANCHORS]
    if unknown:
        raise UsageError(f"--modes: unknown {', '.join(unknown)}; choose from "
                         f"{' '.join([*VARIANT_NAMES, *ANCHORS])}")
    args.k = list(dict.fromkeys(args.k))  # a k given twice is one column (as --budgets)
    settings = args.settings
    weights = load_default_weights(args.weights or settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    weights = encoder.weights  # fitted to the model (uniform alpha for another shape)
    trained = _trained_with(weights, args.queries)
    anchors = [m for m in args.modes if m in ANCHORS]
    variants = make_variants([m for m in args.modes if m not in ANCHORS], weights,
                             settings.tree.parent_embedding)
    inputs = read_inputs(args.docs, args.queries)  # checked before any encoding
    if args.db:  # first: refused at once for another corpus; no fork once LanceDB runs
        db_settings = _index_for_evaluation(args, settings)
    rows, meta = evaluate_corpus(
        args.docs, args.queries, encoder=encoder, chunking=settings.chunking.model_dump(),
        inputs=inputs,
        variants=variants, ks=args.k, cache_dir=args.cache or os.path.join(args.out, "cache"),
        anchors=anchors, budgets=args.budgets or (),
        search=None if any(v.mode == "tree" for v in variants) else make_variants(
            ["tree"], weights, settings.tree.parent_embedding)[0],
        name_free_leaves=settings.search.name_free_leaves,
    )
    if args.db:
        rows += _db_rows(args, db_settings, encoder, meta, inputs)
    meta["command"] = _evaluate_command(args)
    meta["trained_on_queries"] = str(trained) if trained else None
    meta["weights"] = {"source": weights.source, "fingerprint": weights.fingerprint(),
                       "delta": weights.search.threshold, "margin": weights.search.margin,
                       "search": weights.search.learned()}
    flat = next((v.name for v in variants if v.mode == "flat" and v.search.threshold == 0),
                None)
    leaves = next((v.name for v in variants if v.mode == "leaves"), None)
    paths = write_report(rows, args.out, meta, flat_name=flat, leaves_name=leaves)
    print(paths["markdown"].read_text(encoding="utf-8"))
    print(f"-> {paths['markdown']}, {paths['json']}, {paths['png']}")
    return EXIT_OK


def _trained_with(weights, queries: str):
    """The `config.json` that names QUERIES among the sets WEIGHTS were trained on (said
    as a warning: its figures are training figures), else None."""
    from sproutrag.learn.datasets import trained_with

    trained = trained_with(weights.source, queries)
    if trained:
        print(f"warning: {queries} trained these weights ({trained} names it): its "
              "figures are training figures, not held-out ones")
    return trained


def _index_for_evaluation(args: argparse.Namespace, settings: Settings) -> Settings:
    """Index --docs into --db (incremental) as `sproutrag index` does, with the weights
    being evaluated (the settings it ran with are returned). It deletes no document (one
    --docs lacks is another corpus's: refused), and a document that cannot be indexed
    (a blank one) is reported, not fatal: the in-memory evaluation leaves it out too."""
    if args.weights:  # index with the weights being evaluated
        settings = with_setting(settings, "encoding", weights=os.path.abspath(args.weights))
    try:
        run_index(args.docs, args.db, with_setting(settings, "pipeline", max_delete_share=0.0,
                                                   max_failed_share=1.0), raise_outcome=True)
    except MassDeleteError:  # --db holds another corpus: evaluate would replace it
        raise MassDeleteError(
            f"--db {args.db} holds documents that {args.docs} does not: `sproutrag "
            "evaluate --db` indexes --docs into it and would delete them; give evaluate a "
            "folder of its own (a new one)") from None
    return settings


def _db_rows(args: argparse.Namespace, settings, encoder, meta: dict, inputs) -> list[dict]:
    """The stored path: the --db `_index_for_evaluation` wrote (with SETTINGS), queried
    with `Retriever`."""
    from sproutrag.learn.datasets import usable_queries
    from sproutrag.learn.evaluation import (
        corpus_wide_loss,
        describe_loss,
        filled_runs,
        result_row,
        retriever_runs,
    )
    from sproutrag.learn.features import load_features
    from sproutrag.search.retriever import Retriever

    feats = load_features(meta["features"])  # the file this evaluation used, not the newest
    docs, labelled = inputs  # `read_inputs`' (the files are not read again)
    queries = usable_queries(labelled, feats, {str(d.get("doc_id")) for d in docs})
    retriever = Retriever(args.db, encoder=encoder, **settings.search.retriever_options())
    rows = []
    for mode in ("tree", "leaves", "flat"):
        own = retriever_runs(retriever, queries, args.k, mode)
        within = result_row(f"{mode} [database {args.db}]", own, feats, queries, mode=mode,
                            notes="stored path", stats={})
        rows.append(within)
        if args.corpus_wide:
            runs = retriever_runs(retriever, queries, args.k, mode, corpus_wide=True)
            row = result_row(f"{mode} corpus-wide [database {args.db}]", runs, feats,
                             queries, mode=mode, notes="stored path, no doc_ids", stats={})
            filled = result_row("filled", filled_runs(own, runs, queries), feats, queries)
            loss = corpus_wide_loss(retriever, queries, runs, within, row, mode, filled)
            row["corpus_wide"] = loss
            row["notes"] += "; " + describe_loss(loss, retriever.n_docs,
                                                 retriever.searching.settings, mode,
                                                 retriever.entity_ranking)
            rows.append(row)
    if args.budgets:  # the shipped context through the database, under each budget
        from sproutrag.learn.budgets import retriever_budget_rows

        meta.setdefault("budget_rows", []).extend(retriever_budget_rows(
            retriever, queries, args.budgets, f"database {args.db}",
            corpus_wide=args.corpus_wide))
    return rows


