"""A run's work folder: what the next run of the same database removes, and what it leaves."""

from __future__ import annotations

from pathlib import Path

import fsspec
from fsspec.implementations.local import LocalFileSystem

from sproutrag.ingest.run_folder import (
    MARKER,
    create_run_dir,
    leftover_run_dirs,
    remove_run_dir,
)


class _Recording(LocalFileSystem):
    """The local filesystem, recording what `rm` is asked to remove, in order."""

    cachable = False  # a fresh record per instance

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.removed: list[str] = []

    def rm(self, path, recursive=False, maxdepth=None):
        self.removed.append(str(path).rstrip("/").rsplit("/", 1)[-1])
        super().rm(path, recursive=recursive, maxdepth=maxdepth)


def _cut_short(base: Path, run_id: str) -> Path:
    """A run folder whose removal a second Ctrl-C cut short: batches left, marker gone."""
    folder = Path(create_run_dir(fsspec.filesystem("file"), str(base), run_id=run_id,
                                 db=str(base.parent)))
    (folder / "batch-00001").mkdir()
    (folder / "batch-00001" / "chunks.parquet").write_bytes(b"PAR1")
    (folder / MARKER).unlink()
    return folder


def test_a_marker_less_run_folder_is_removed_only_from_the_database_s_own_base(tmp_path):
    db = tmp_path / "db"
    own, shared = db / "_work", tmp_path / "shared"
    fs = fsspec.filesystem("file")
    for base in (own, shared):
        base.mkdir(parents=True)
        dead = _cut_short(base, "0123456789ab")
        (base / "notes").mkdir()  # not the pipeline's name: never touched
        exclusive = base == own
        found = leftover_run_dirs(fs, str(base), db=str(db), keep="sproutrag-run-ffffffffffff",
                                  exclusive=exclusive)
        assert found == ([str(dead)] if exclusive else [])
        assert remove_run_dir(fs, str(dead), db=str(db), exclusive=exclusive) is exclusive
        assert dead.exists() is not exclusive and (base / "notes").is_dir()


def test_a_run_folder_loses_its_marker_last(tmp_path):
    fs = _Recording()
    folder = create_run_dir(fs, str(tmp_path), run_id="0123456789ab", db=str(tmp_path / "db"))
    Path(folder, "batch-00000").mkdir()
    assert remove_run_dir(fs, folder, db=str(tmp_path / "db"))
    assert fs.removed[-1] == Path(folder).name and "batch-00000" in fs.removed[:-1]
    assert MARKER not in fs.removed[:-1]
    assert not Path(folder).exists()
