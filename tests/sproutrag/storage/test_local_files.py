"""What an index run tidies in a local database's folders at its end: temporary files
killed writers left, and files Lance wrote private (sproutrag.storage.local_files)."""

from __future__ import annotations

import os
import time

from sproutrag.storage.local_files import TEMP_AGE_S, remove_temp_files, share_modes


def test_old_temporary_files_in_the_tables_are_removed_and_nothing_else(tmp_path):
    data = tmp_path / "nodes.lance" / "data"
    data.mkdir(parents=True)
    old, fresh, kept = data / ".tmp88nzUv", data / ".tmpyOumdo", data / "0001.lance"
    outside = tmp_path / ".tmpOther"  # not in a table's folder
    for path in (old, fresh, kept, outside):
        path.write_bytes(b"x" * 100)
    past = time.time() - TEMP_AGE_S - 60
    for path in (old, kept, outside):
        os.utime(path, (past, past))
    assert remove_temp_files(str(tmp_path)) == (1, 100)
    assert not old.exists() and fresh.exists() and kept.exists() and outside.exists()
    assert remove_temp_files(str(tmp_path)) == (0, 0)


def test_files_lance_wrote_private_get_the_read_permissions_of_the_umask(tmp_path):
    index = tmp_path / "nodes.lance" / "_indices" / "a1"
    index.mkdir(parents=True)
    private, public = index / "page_data.lance", tmp_path / "nodes.lance" / "x.manifest"
    for path in (private, public):
        path.write_bytes(b"x")
    private.chmod(0o600)
    index.chmod(0o700)
    public.chmod(0o640)
    umask = os.umask(0o022)
    try:
        assert share_modes(str(tmp_path)) == 3
    finally:
        os.umask(umask)
    assert private.stat().st_mode & 0o777 == 0o644
    assert index.stat().st_mode & 0o777 == 0o755
    assert public.stat().st_mode & 0o777 == 0o644
    assert share_modes(str(tmp_path)) == 0
