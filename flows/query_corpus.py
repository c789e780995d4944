"""Prefect flow `query-corpus`: a file of queries -> results as JSONL and a LanceDB table.

Input: JSONL or Parquet with columns {qid, query, doc_ids?, where?, budget_chars?,
budget_tokens?}. Output: one JSONL line per query ({qid, results[, used_chars,
budget_chars][, error]}, exactly as `sproutrag query --queries` writes; with a budget, the
line's or the flow's BUDGET_CHARS / BUDGET_TOKENS, the results are a context) and rows in
the `results` table of the same database (one row per hit; a query with no hit, failed
or not, gets one row with rank 0 and its error or none; a context's rows keep its
budget, characters used, nodes and cut flag), tagged with the query run's id and the
Prefect flow run's id (`run_id`, `flow_run_id`), each with its line's question. Lines
that cannot run (not JSON, a bad qid or doc_ids, a duplicate qid) get an error line; the
batch goes on. When more queries failed than `pipeline.max_failed_query_share`
tolerates (default: any), the flow run ends Failed, after writing everything; the
state's data is a `QueriesFailedError` whose `.row` is the summary this flow otherwise
returns.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Failed
from sproutrag.flows.arguments import check_output_file
from sproutrag.flows.parameters import flow_settings
from sproutrag.flows.preflight_s3 import check_s3_paths
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.search import read_queries, search_queries, write_results

from sproutrag.ingest.run_summary import QueriesFailedError, too_many_failed
from sproutrag.params import check_number
from sproutrag.search.batch import check_query_parameters
from sproutrag.search.context import DEFAULT_MARGIN


@flow(name="query-corpus", log_prints=True)
def query_corpus(
    queries: str,
    db: str = ".sproutrag/db",
    out: str = "results.jsonl",
    k: int | None = None,
    mode: str = "tree",
    beam: int = 5,
    config: str | None = None,
    settings: Settings | None = None,
    budget_chars: int | None = None,
    budget_tokens: int | None = None,
    selection: str | None = None,
    tokenizer: str | None = None,
    cutoff: float | None = DEFAULT_MARGIN,
):
    """Run every query of QUERIES against DB; write OUT and the `results` table.

    QUERIES, DB and OUT may be local or s3:// (storage settings from SETTINGS, or else
    CONFIG and the environment: `sproutrag.flows.parameters`). K: units per query (5 when not
    given); BUDGET_CHARS / BUDGET_TOKENS (and a line's own): a context for a reader
    instead (`sproutrag query --budget-chars`; SELECTION, TOKENIZER, CUTOFF as there:
    None fills the budget).
    """
    _check_parameters(queries, out, k=k, beam=beam, mode=mode, budget_chars=budget_chars,
                      budget_tokens=budget_tokens, selection=selection, cutoff=cutoff)
    settings = flow_settings(settings, config)
    check_s3_paths([("queries", queries), ("db", db), ("out", out)], settings)
    batch = read_queries(queries, settings)
    t0 = time.perf_counter()
    rows = search_queries(batch, db, k=k, mode=mode, beam=beam, settings=settings,
                          budget_chars=budget_chars, budget_tokens=budget_tokens,
                          selection=selection, tokenizer=tokenizer, cutoff=cutoff)
    get_run_logger().info("search: %d queries in %.1f s", len(rows), time.perf_counter() - t0)
    run_id = write_results(rows, db, out, k=k, mode=mode, settings=settings,
                           flow_run_id=flow_run.get_id(), queries=batch)
    return _outcome(rows, run_id, out, settings.pipeline.max_failed_query_share)


def _check_parameters(queries: str, out: str, *, k: int | None, beam: int, mode: str,
                      budget_chars: int | None, budget_tokens: int | None,
                      selection: str | None, cutoff: float | None) -> None:
    """The flow's parameters, checked before any work (an error names the bad one)."""
    check_query_parameters(k=k, beam=beam, mode=mode, budget_chars=budget_chars,
                           budget_tokens=budget_tokens, selection=selection)
    if cutoff is not None:
        check_number("cutoff", cutoff)
    check_output_file(out, source=queries, flag="out", source_flag="queries")


def _outcome(rows: list[dict[str, Any]], run_id: str, out: str, share: float) -> Any:
    """Log the run's summary and publish it (the artifact `query-run`); returns the
    flow's result, or a Failed state whose data is a `QueriesFailedError` holding it when
    more queries failed than SHARE (`pipeline.max_failed_query_share`) tolerates."""
    failed = [r for r in rows if "error" in r]
    summary = f"{len(rows)} queries, {len(failed)} failed, results in {out} and `results`"
    get_run_logger().info(summary)
    create_markdown_artifact(
        key="query-run",
        markdown=f"# Query run {run_id}\n\n{summary}\n\n"
        + "\n".join(f"- `{r['qid']}`: {r['error']}" for r in failed),
    )
    result = {"run_id": run_id, "flow_run_id": flow_run.get_id(), "n_queries": len(rows),
              "n_failed": len(failed), "out": out}
    if not too_many_failed(len(failed), len(rows), share):
        return result
    error = QueriesFailedError(
        f"{len(failed)} of {len(rows)} queries failed, more than "
        f"pipeline.max_failed_query_share ({share:.0%}) tolerates; results in {out}", result)
    return Failed(message=str(error), data=error)
