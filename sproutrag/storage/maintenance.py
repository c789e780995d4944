"""Keeping `documents` and `nodes` small and fast while an index run writes them.

Every commit of a batch adds a fragment (a data file) and a version (a manifest) to a
table. Left alone, a run of many batches leaves thousands of small fragments, and every
version keeps the files of the rows it saw, so a database grows far past its rows. Three
things bound both, each a Lance operation on one table (each commit atomic: readers see
the same rows before and after):

* **Compaction** (`compact`): fragments below `TARGET_ROWS` rows are merged into
  fragments of about that size; a run calls it whenever `SMALL_FRAGMENTS` of them pile
  up (`tidy`), so a fragment is rewritten a bounded number of times (about twice) and
  the cost per batch does not grow with the table.
* **Scalar indexes** (`sproutrag.storage.indexes`): BTREE indexes on `documents.doc_id`
  and `nodes.tree_id` / `nodes.doc_id`, so replacing a document finds its row and its
  old trees through an index, never by scanning the table; rows appended since the last
  fold are scanned until `tidy` folds them in.
* **Versions** (`protect_version`, `prune_versions`): a run tags the version it starts
  from (`sproutrag-before-<run id>`); pruning removes every untagged version but the
  latest, and the tags of runs older than `keep_versions_days` (never the current run's).
  After a run a table keeps: the version before the run, the final one, and the start
  versions of the runs of the last `keep_versions_days`. A reader that holds an
  intermediate version of a running run may find its files gone and must re-open the
  table (the `Retriever` does, once).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sproutrag.interrupt import crash_point
from sproutrag.storage import indexes

#: Rows per fragment that compaction aims at (about 150 MB of `nodes` rows with 384-d
#: vectors; small `documents` rows make smaller files).
TARGET_ROWS = 100_000
#: A run compacts a table once this many of its fragments hold fewer than TARGET_ROWS
#: (`pipeline.compact_fragments`).
SMALL_FRAGMENTS = 32
#: Version tags a run creates: this prefix and the run's id.
TAG_PREFIX = "sproutrag-before-"
def _dataset(tbl: Any):
    """The Lance dataset of a LanceDB table at its latest version."""
    tbl.checkout_latest()
    return tbl.to_lance()


def small_fragments(tbl: Any, target_rows: int = TARGET_ROWS) -> int:
    """Fragments of TBL below TARGET_ROWS physical rows (from the manifest: no data read)."""
    return sum(f.metadata.physical_rows < target_rows
               for f in _dataset(tbl).get_fragments())


def compact(tbl: Any, *, target_rows: int = TARGET_ROWS) -> bool:
    """Merge TBL's small fragments (and those holding many deleted rows) into fragments of
    about TARGET_ROWS rows; indexes are remapped in the same commit. Returns whether a
    commit was made."""
    metrics = _dataset(tbl).optimize.compact_files(target_rows_per_fragment=target_rows)
    tbl.checkout_latest()
    return metrics.fragments_removed > 0


def protect_version(tbl: Any, run_id: str) -> None:
    """Tag TBL's latest version as the one run RUN_ID started from (kept by pruning)."""
    tbl.checkout_latest()
    tag = TAG_PREFIX + run_id
    if tag not in tbl.tags.list():
        tbl.tags.create(tag, tbl.version)


def _expired_tags(tbl: Any, keep_days: float, current: str, now: datetime) -> list[str]:
    """This project's tags on TBL older than KEEP_DAYS, except CURRENT."""
    when = {v["version"]: v["timestamp"] for v in tbl.list_versions()}
    cutoff = now - timedelta(days=keep_days)
    return [name for name, tag in tbl.tags.list().items()
            if name.startswith(TAG_PREFIX) and name != current
            and when.get(tag["version"], cutoff) <= cutoff]


def prune_versions(tbl: Any, *, run_id: str, keep_days: float) -> int:
    """Remove TBL's versions but the latest and the tagged ones, after dropping the tags of
    runs older than KEEP_DAYS (never run RUN_ID's); returns versions removed. Only data
    files that no kept version uses are deleted."""
    tbl.checkout_latest()
    for name in _expired_tags(tbl, keep_days, TAG_PREFIX + run_id, datetime.now()):
        tbl.tags.delete(name)
    tagged = {tag["version"] for tag in tbl.tags.list().values()}
    if all(v["version"] in tagged for v in tbl.list_versions()[:-1]):
        return 0  # nothing to remove
    stats = tbl.to_lance().cleanup_old_versions(
        older_than=timedelta(0), error_if_tagged_old_versions=False)
    tbl.checkout_latest()
    return int(stats.old_versions)


def tidy(tables: dict[str, Any], *, run_id: str, keep_days: float,
         min_small: int = SMALL_FRAGMENTS, names: Iterable[str] = ("nodes", "documents")
         ) -> dict[str, int]:
    """What a run does between batches: compact a table whose small fragments reached
    MIN_SMALL, fold its new rows into its scalar indexes and prune its intermediate
    versions. Returns versions removed per table tidied (nothing is done, and nothing
    committed, to a table below the threshold)."""
    removed = {}
    for name in names:
        tbl = tables.get(name)
        if tbl is None or small_fragments(tbl) < min_small:
            continue
        crash_point("tidy-start")
        compact(tbl)
        crash_point("tidy-compacted")
        indexes.fold_new_rows(tbl)
        removed[name] = prune_versions(tbl, run_id=run_id, keep_days=keep_days)
    return removed


def optimize_runs(tbl: Any, *, keep_days: float, min_fragments: int,
                  min_old_versions: int) -> int:
    """The end of a run for the small `runs` table: optimized (compacted, versions older
    than KEEP_DAYS removed) once it holds MIN_FRAGMENTS fragments or MIN_OLD_VERSIONS
    versions older than the retention; returns versions removed (0: left alone)."""
    keep = timedelta(days=keep_days)
    versions = tbl.list_versions()
    cutoff = datetime.now() - keep  # list_versions gives naive local times
    old = sum(v["timestamp"] < cutoff for v in versions[:-1])  # removable
    fragments = tbl.stats()["fragment_stats"]["num_fragments"]
    if fragments < min_fragments and old < min_old_versions:
        return 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # retention 0 is allowed
        tbl.optimize(cleanup_older_than=keep)
    return len(versions) - len(tbl.list_versions())
