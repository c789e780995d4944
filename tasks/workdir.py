"""work_dir: the run's own folder for Parquet intermediates (see sproutrag/ingest/run_folder.py)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.files import filesystem
from sproutrag.tasks.retries import IO_RETRIES

from sproutrag.ingest.run_folder import (
    create_run_dir,
    leftover_run_dirs,
    remove_run_dir,
    run_dir_name,
)


def work_base(db: str, settings: Settings) -> str:
    return (settings.pipeline.work_dir or f"{db.rstrip('/')}/_work").rstrip("/")


@task(name="open_work_dir", cache_policy=NO_CACHE, **IO_RETRIES)
def open_work_dir(db: str, settings: Settings, run_id: str) -> tuple[str, int]:
    """Create this run's folder; remove the folders killed runs of DB left (in the
    default base `<db>/_work` also those without a marker). Returns (the folder as a
    path or s3:// URL, how many leftovers were removed)."""
    base = work_base(db, settings)
    fs, root = filesystem(base, settings)
    own = settings.pipeline.work_dir is None
    leftovers = leftover_run_dirs(fs, root, db=db, keep=run_dir_name(run_id), exclusive=own)
    removed = sum(remove_run_dir(fs, old, db=db, exclusive=own) for old in leftovers)
    create_run_dir(fs, root, run_id=run_id, db=db)
    return f"{base}/{run_dir_name(run_id)}", removed


@task(name="close_work_dir", cache_policy=NO_CACHE, **IO_RETRIES)
def close_work_dir(path: str, db: str, settings: Settings) -> None:
    fs, where = filesystem(path, settings)
    remove_run_dir(fs, where, db=db)
