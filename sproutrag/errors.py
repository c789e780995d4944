"""Operating-system errors as one clean line: the database or disk, and what to do.

LanceDB reports I/O failures as `RuntimeError("lance error: LanceError(IO): No space left
on device (os error 28), /path/to/writer.rs:258:9")`; Python code raises OSError. Both
are recognised by their errno, so a read-only database or a full disk gives a sentence
rather than a traceback.
"""

from __future__ import annotations

import errno
import os
import re

_LANCE_OS_ERROR = re.compile(r"\(os error (\d+)\)")

_HINTS = {
    errno.ENOSPC: "free disk space (or point --db / pipeline.work_dir elsewhere) and run "
    "again; a run continues where it stopped",
    errno.EDQUOT: "the disk quota is exhausted: free space and run again",
    errno.EROFS: "the file system is read-only: choose a --db (or pipeline.work_dir) "
    "you can write to",
    errno.EACCES: "permission denied: choose a --db (or pipeline.work_dir) you can write to",
    errno.EPERM: "operation not permitted: choose a --db you can write to",
}


def os_errno(exc: BaseException) -> int | None:
    """The errno behind EXC: an OSError's, or the one LanceDB quotes in its message."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    if isinstance(exc, RuntimeError):
        found = _LANCE_OS_ERROR.search(str(exc))
        return int(found.group(1)) if found else None
    return None


def describe_os_error(exc: BaseException) -> str | None:
    """One line for an OS-level failure (None when EXC is not one)."""
    code = os_errno(exc)
    if code is None:
        return None
    where = getattr(exc, "filename", None)
    what = os.strerror(code)
    head = f"{what} ({where})" if where else what
    hint = _HINTS.get(code)
    return f"{head}: {hint}" if hint else head


#: Errors of the machine rather than of a document: a batch that hits one stops the run.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                errno.EPERM})


def is_environment_error(exc: BaseException) -> bool:
    """A full disk, a read-only or forbidden database or work dir: retrying the next
    document cannot help, the run stops (and the next run goes on from there)."""
    return os_errno(exc) in ENVIRONMENT_ERRNOS


def is_expected(exc: BaseException) -> bool:
    """An error whose message says all a user needs (no traceback needed): bad settings
    or input, a refused run, the machine's (disk full, read-only), or a batch's task that
    did not start because a signal asked the run to stop."""
    from schemas.settings import SettingsError
    from sproutrag.check import DamagedTableError
    from sproutrag.corpus import CorpusNotFoundError
    from sproutrag.indexing import MassDeleteError
    from sproutrag.interrupt import StopRequested
    from sproutrag.locking import DatabaseBusyError
    from sproutrag.modelid import ModelNotFoundError
    from sproutrag.run_summary import RunOutcome
    from sproutrag.store import DatabaseNotFoundError, StaleIndexError
    from sproutrag.weights import WeightsFileError

    clean = (SettingsError, CorpusNotFoundError, MassDeleteError, DatabaseBusyError,
             ModelNotFoundError, RunOutcome, DatabaseNotFoundError, StaleIndexError,
             WeightsFileError, DamagedTableError, StopRequested)
    return isinstance(exc, clean) or describe_os_error(exc) is not None
