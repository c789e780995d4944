"""The task runner of the per-batch stages (chunk, encode, build_trees).

`pipeline.task_runner` picks it:

- `threads` (default): the flow's own thread pool, one machine.
- `dask`: prefect-dask's DaskTaskRunner, on the cluster at `pipeline.dask_address`
  (workers must be able to import this project and reach the Prefect API, the corpus,
  the work dir and the database: put those on S3) or, without an address, on a local
  cluster of `pipeline.dask_workers` worker processes on loopback.

The runner is chosen per run from the settings (the `config` parameter or SPROUTRAG_*
environment), so the CLI, a deployment and a test share one flow and one code path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from prefect.context import FlowRunContext
from prefect.task_runners import TaskRunner
from sproutrag.schemas.settings import Settings


def _api_url() -> str | None:
    """The Prefect API this flow run reports to (the temporary server's too)."""
    ctx = FlowRunContext.get()
    client = getattr(ctx, "client", None) if ctx else None
    url = getattr(client, "api_url", None)
    return str(url) if url else None


def dask_runner(settings: Settings) -> TaskRunner:
    from prefect_dask import DaskTaskRunner

    pipeline = settings.pipeline
    if pipeline.dask_address:
        return DaskTaskRunner(address=pipeline.dask_address)
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": pipeline.dask_workers,
            "threads_per_worker": 1,
            "processes": True,
            "host": "127.0.0.1",
            "dashboard_address": None,
        }
    )


@contextmanager
def batch_runner(settings: Settings) -> Iterator[TaskRunner]:
    """Yield the started task runner for the per-batch tasks; shut it down after."""
    if settings.pipeline.task_runner == "threads":
        ctx = FlowRunContext.get()
        if ctx is None or ctx.task_runner is None:
            raise RuntimeError("batch_runner is used inside a flow run")
        yield ctx.task_runner
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with ExitStack() as stack:
        url = _api_url()
        if not PREFECT_API_URL.value() and url:
            # Without an API URL every Dask worker would start its own temporary
            # server; the task runs' context (settings included) travels to the
            # workers, so they report to this run's server instead.
            stack.enter_context(temporary_settings(updates={PREFECT_API_URL: url}))
        yield stack.enter_context(dask_runner(settings))
