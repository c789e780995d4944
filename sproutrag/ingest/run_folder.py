"""The run's own folder for Parquet intermediates, on local disk or S3 (any fsspec URL).

`pipeline.work_dir` (default `<db>/_work`) is a base the pipeline may share with anything
else: a run creates one folder of its own below it, `sproutrag-run-<run_id>`, holding a
marker file that names the database, and removes only that folder. The folders that
killed runs of the same database left behind are removed by the next run (under the
database's run lock); they are recognised by both the name and the marker. Nothing else
below the base, and never the base itself, is deleted.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime

MARKER = ".sproutrag-run.json"
_RUN_DIR = re.compile(r"sproutrag-run-[0-9a-f]{12}")


def run_dir_name(run_id: str) -> str:
    return f"sproutrag-run-{run_id}"


def database_key(db: str) -> str:
    """The database as a marker names it: URIs as given, local paths absolute."""
    return db.rstrip("/") if "://" in db else os.path.abspath(db)


def _marker(fs, folder: str) -> dict | None:
    try:
        with fs.open(f"{folder}/{MARKER}", "rb") as fh:
            found = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _ours(fs, folder: str, db: str) -> bool:
    """A run folder of this database: the pipeline's name and a marker naming the db."""
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    marker = _marker(fs, folder) if _RUN_DIR.fullmatch(name) else None
    return marker is not None and marker.get("db") == database_key(db)


def create_run_dir(fs, base: str, *, run_id: str, db: str) -> str:
    """Make BASE/sproutrag-run-<run_id> with its marker; returns its path."""
    path = f"{base.rstrip('/')}/{run_dir_name(run_id)}"
    fs.makedirs(path, exist_ok=True)
    marker = {"db": database_key(db), "run_id": run_id,
              "created_at": datetime.now(UTC).isoformat(), "pid": os.getpid()}
    with fs.open(f"{path}/{MARKER}", "wb") as fh:
        fh.write(json.dumps(marker).encode())
    return path


def remove_run_dir(fs, path: str, *, db: str) -> bool:
    """Remove one run folder of this database (refuses anything else); True if removed."""
    fs.invalidate_cache()
    if not _ours(fs, path, db):
        return False
    fs.rm(path, recursive=True)
    return True


def leftover_run_dirs(fs, base: str, *, db: str, keep: str) -> list[str]:
    """The run folders of this database under BASE except `keep` (killed runs' debris)."""
    fs.invalidate_cache()
    try:
        entries = fs.ls(base.rstrip("/"), detail=True)
    except FileNotFoundError:
        return []
    folders = [e["name"].rstrip("/") for e in entries if e.get("type") == "directory"]
    keep_name = keep.rstrip("/").rsplit("/", 1)[-1]
    return sorted(f for f in folders
                  if f.rsplit("/", 1)[-1] != keep_name and _ours(fs, f, db))
