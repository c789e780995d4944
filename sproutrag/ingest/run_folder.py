"""The run's own folder for Parquet intermediates, on local disk or S3 (any fsspec URL).

`pipeline.work_dir` (default `<db>/_work`) is a base the pipeline may share with anything
else: a run creates one folder of its own below it, `sproutrag-run-<run_id>`, holding a
marker file that names the database, and removes only that folder. The folders that
killed runs of the same database left behind are removed by the next run (under the
database's run lock); they are recognised by both the name and the marker. In the
database's own base (`<db>/_work`, the default: no other database's runs write there) a
folder of the pipeline's name without a marker is a leftover too (a removal cut short).
A run folder is removed marker last, so a removal cut short (a second Ctrl-C) still
leaves it recognisable. Nothing else below the base, and never the base itself, is
deleted.
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


def _ours(fs, folder: str, db: str, *, exclusive: bool) -> bool:
    """A run folder of this database: the pipeline's name and a marker naming the db, or
    (EXCLUSIVE: the database's own base) no readable marker."""
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    if not _RUN_DIR.fullmatch(name):
        return False
    marker = _marker(fs, folder)
    if marker is None:
        return exclusive
    return marker.get("db") == database_key(db)


def create_run_dir(fs, base: str, *, run_id: str, db: str) -> str:
    """Make BASE/sproutrag-run-<run_id> with its marker; returns its path."""
    path = f"{base.rstrip('/')}/{run_dir_name(run_id)}"
    if "file" in fs.protocol:  # on S3 a key needs no folder, and s3fs would make a bucket
        fs.makedirs(path, exist_ok=True)
    marker = {"db": database_key(db), "run_id": run_id,
              "created_at": datetime.now(UTC).isoformat(), "pid": os.getpid()}
    with fs.open(f"{path}/{MARKER}", "wb") as fh:
        fh.write(json.dumps(marker).encode())
    return path


def remove_run_dir(fs, path: str, *, db: str, exclusive: bool = False) -> bool:
    """Remove one run folder of this database (refuses anything else; EXCLUSIVE: as for
    `leftover_run_dirs`), its marker last; True if removed."""
    fs.invalidate_cache()
    if not _ours(fs, path, db, exclusive=exclusive):
        return False
    for entry in fs.ls(path, detail=False):
        if entry.rstrip("/").rsplit("/", 1)[-1] != MARKER:
            fs.rm(entry, recursive=True)
    fs.rm(path, recursive=True)
    return True


def leftover_run_dirs(fs, base: str, *, db: str, keep: str, exclusive: bool = False
                      ) -> list[str]:
    """The run folders of this database under BASE except `keep` (killed runs' debris).
    EXCLUSIVE: BASE is the database's own (`<db>/_work`), written by no other database,
    and the caller holds the run lock: a folder of the pipeline's name without a marker
    is debris too (a removal cut short; the lock rules out a live run of this database)."""
    fs.invalidate_cache()
    try:
        entries = fs.ls(base.rstrip("/"), detail=True)
    except FileNotFoundError:
        return []
    folders = [e["name"].rstrip("/") for e in entries if e.get("type") == "directory"]
    keep_name = keep.rstrip("/").rsplit("/", 1)[-1]
    return sorted(f for f in folders
                  if f.rsplit("/", 1)[-1] != keep_name
                  and _ours(fs, f, db, exclusive=exclusive))
