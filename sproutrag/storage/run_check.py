"""The checks at the start of an index run: what they cost is the tables' metadata plus
what the run would read anyway, never a scan of the database.

* `check_files`: every data file and deletion file each table's manifest names exists
  with the size the manifest recorded (a lost or truncated file: the table is
  unreadable). One stat per file, no data read; compaction keeps files few.
* `tree_damage` (`sproutrag.storage.garbage`): `nodes` holds exactly the rows of the
  current trees (its row count, a metadata read, equals the sum of 2n - 1 over the
  stored state the plan reads anyway); only when it does not (a run was killed, or
  `nodes` was rolled back) are the `doc_id` and `tree_id` columns of `nodes` read to
  name the damaged documents (their tree is missing or incomplete: re-indexed) and the
  stale trees (named by no document: removed).
* With `sproutrag index --verify` (not by default): `tree_damage` reads those columns
  whatever the row count, and every document `sproutrag check` names is re-indexed too
  (`sproutrag.storage.check.damaged_documents`: the check's own reads).

Damage that the default checks do not see (a rollback of `nodes` that kept its row
count, bytes changed inside a file) is found by `sproutrag check` (every column of every
table, every tree and its vectors validated); `sproutrag index --verify` re-indexes the
documents it names.
"""

from __future__ import annotations

import os
from typing import Any

from sproutrag.errors import short_error

#: The tables an index run reads or writes, in the order they are checked.
TABLES = ("nodes", "documents", "runs", "index_settings", "results")


def _file_problem(base: str, path: str, size: int | None, fs: Any) -> str | None:
    """Why the file PATH below BASE is damaged (missing, or not SIZE bytes), else None."""
    full = f"{base}/{path}"
    try:
        found = fs.size(full) if fs is not None else os.path.getsize(full)
    except (FileNotFoundError, OSError):
        return f"data file {path} is missing"
    if size and found != size:
        return f"data file {path} has {found} bytes, the manifest says {size}"
    return None


def _table_files(tbl: Any) -> list[tuple[str, int | None]]:
    """(path below the table folder, recorded size) of every data and deletion file of
    TBL's latest version, from its manifest."""
    out = []
    for fragment in tbl.to_lance().get_fragments():
        meta = fragment.metadata
        out += [(f"data/{f.path}", f.file_size_bytes) for f in meta.files]
        if meta.deletion_file is not None:
            out.append((meta.deletion_file.path(meta.id), None))
    return out


def check_files(uri: str, *, storage_options: dict[str, str] | None = None
                ) -> dict[str, str]:
    """Tables that cannot be read (name -> why, one line): a table that does not open,
    or whose manifest names a data or deletion file that is missing or truncated."""
    import lancedb

    db = lancedb.connect(str(uri), storage_options=storage_options)
    names = set(db.list_tables().tables)
    fs = None
    if "://" in str(uri):
        import fsspec

        fs = fsspec.filesystem(str(uri).split("://", 1)[0], **_fsspec(storage_options))
    bad = {}
    for name in (n for n in TABLES if n in names):
        try:
            tbl = db.open_table(name)
            base = f"{str(uri).rstrip('/')}/{name}.lance"
            problems = (_file_problem(base, p, s, fs) for p, s in _table_files(tbl))
            problem = next((p for p in problems if p), None)
        except Exception as exc:  # noqa: BLE001 - every error opening a table is damage
            problem = short_error(exc)
        if problem:
            bad[name] = problem
    return bad


def _fsspec(storage_options: dict[str, str] | None) -> dict[str, Any]:
    """s3fs options from LanceDB's storage options (credentials, endpoint, region)."""
    opts = storage_options or {}
    out: dict[str, Any] = {}
    if opts.get("aws_access_key_id"):
        out.update(key=opts["aws_access_key_id"], secret=opts.get("aws_secret_access_key"))
        if opts.get("aws_session_token"):
            out["token"] = opts["aws_session_token"]
    if opts.get("endpoint"):
        out["endpoint_url"] = opts["endpoint"]
    if opts.get("region"):
        out["client_kwargs"] = {"region_name": opts["region"]}
    return out
