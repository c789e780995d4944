"""Retries of the I/O tasks: only errors that another attempt may pass."""

from __future__ import annotations

import errno

#: OSErrors that another attempt cannot fix (missing, forbidden, read-only, disk full).
_PERMANENT_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS,
                               errno.ENOSPC, errno.EDQUOT, errno.EISDIR, errno.ENOTDIR})


def retry_transient(task, task_run, state) -> bool:  # Prefect passes all three
    """Prefect `retry_condition_fn`: retry only errors that another attempt may pass
    (a dropped connection, a timeout), not a missing corpus, a bad setting, a read-only
    database or a full disk."""
    from sproutrag.errors import os_errno, permanent_storage_error

    exc = state.data if isinstance(getattr(state, "data", None), BaseException) else None
    if exc is None:
        return True
    if permanent_storage_error(exc):  # a missing bucket, credentials refused or missing
        return False
    if isinstance(exc, ValueError | LookupError | TypeError | FileNotFoundError
                  | PermissionError | IsADirectoryError | NotADirectoryError):
        return False  # a missing corpus, bad input or settings: the same next time
    code = os_errno(exc)
    return code is None or code not in _PERMANENT_ERRNOS


#: Retries of the I/O tasks: two, after 2 s and 10 s, only for errors that may pass.
IO_RETRIES = {"retries": 2, "retry_delay_seconds": [2, 10], "retry_condition_fn": retry_transient}
