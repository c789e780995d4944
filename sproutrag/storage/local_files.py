"""What LanceDB leaves on a local disk that an index run tidies at its end
(`Store.maintain`; S3 has neither: an object is whole or absent, and has no mode).

* `share_modes`: Lance writes a compacted data file or an index file to a private
  temporary file (mode 0600) and renames it, so a downstream job running as another user
  could read some files of a table and not others (102 of 357 files of a QA database).
  Every file and folder of the database gets the read permissions the process's umask
  gives a new file (0644 under umask 022), as any other file it writes.
* `remove_temp_files`: a writer killed mid-file (`kill -9` during a compaction) leaves its
  temporary file (``.tmpXXXXXX``, 10-20 MB) in the table's folder, named by no version,
  so no cleanup of versions ever removes it. Under the run lock no other index run
  writes, and a file still being written was modified within the last minutes: those
  untouched for `TEMP_AGE_S` are debris.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

#: A temporary file untouched this long is a killed writer's (seconds).
TEMP_AGE_S = 600


def _umask() -> int:
    """The process's umask, read without changing it (Linux's /proc; 022 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def share_modes(uri: str) -> int:
    """Give every file and folder under the local database URI the read permissions
    (and search permission, for folders) its umask allows; returns how many changed."""
    umask = _umask()
    changed = 0
    for top, folders, files in os.walk(uri):
        for names, bits in ((folders, 0o555 & ~umask), (files, 0o444 & ~umask)):
            changed += sum(_add_bits(os.path.join(top, name), bits) for name in names)
    return changed


def _add_bits(path: str, bits: int) -> int:
    """Add BITS to the mode of PATH (not a symlink's): 1 when it changed."""
    try:
        st = os.lstat(path)
        mode = st.st_mode & 0o7777
        if stat.S_ISLNK(st.st_mode) or mode | bits == mode:
            return 0
        os.chmod(path, mode | bits)
        return 1
    except OSError:  # removed meanwhile, or another user's
        return 0


def remove_temp_files(uri: str, *, age_s: float = TEMP_AGE_S) -> tuple[int, int]:
    """Remove the temporary files killed writers left in the tables of the local
    database URI (untouched for AGE_S seconds); returns (files, bytes) removed."""
    now, files, size = time.time(), 0, 0
    for table in Path(uri).glob("*.lance"):
        for path in table.rglob(".tmp*"):
            try:
                found = path.lstat()
                if stat.S_ISREG(found.st_mode) and now - found.st_mtime > age_s:
                    path.unlink()
                    files, size = files + 1, size + found.st_size
            except OSError:
                continue
    return files, size
