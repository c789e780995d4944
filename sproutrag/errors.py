"""Every exception class of the library, and operating-system errors as one clean line.

The classes live here so that any layer can raise or catch any of them without importing
another layer; each module that raises one also re-exports it (`from
sproutrag.storage.store import StaleIndexError` keeps working). `is_expected` tells the
command line which errors say all a user needs (one line, no traceback).

Operating-system errors: the database or disk, and what to do.

LanceDB reports I/O failures as `RuntimeError("lance error: LanceError(IO): No space left
on device (os error 28), /path/to/writer.rs:258:9")`; Python code raises OSError. Both
are recognised by their errno, so a read-only database or a full disk gives a sentence
rather than a traceback.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from typing import Any

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


#: What an S3 read or write failure says (botocore's, s3fs's or LanceDB's object store's
#: text) -> (the line a user reads: what to check; whether another attempt cannot pass
#: it). Matched in order, case-insensitively; the error's own text is never printed (it
#: can hold the access key id).
_STORAGE_PROBLEMS = (
    (("nosuchbucket",), "the bucket does not exist: create it first (the pipeline "
     "creates no bucket)", True),
    (("invalidaccesskeyid", "signaturedoesnotmatch", "forbidden", "accessdenied"),
     "the S3 server refused the credentials (403): check AWS_ACCESS_KEY_ID and "
     "AWS_SECRET_ACCESS_KEY (or SPROUTRAG_STORAGE__ACCESS_KEY_ID / __SECRET_ACCESS_KEY)",
     True),
    (("unable to locate credentials", "nocredentials"), "no S3 credentials: set "
     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", True),
    (("could not connect to the endpoint", "failed to connect to namespace",
      "tcp connect error"),  # botocore's, LanceDB's: not a Prefect server's refusal
     "cannot reach the S3 endpoint: check storage.endpoint (and that its server runs)",
     False),  # it may come back
)


def _storage_problem(exc: BaseException | str) -> tuple[str, bool] | None:
    """(line, permanent) of the `_STORAGE_PROBLEMS` entry EXC's text matches, or None."""
    text = (exc if isinstance(exc, str)
            else f"{type(exc).__name__} {exc} {exc.__cause__ or ''}").lower()
    return next(((line, permanent) for needles, line, permanent in _STORAGE_PROBLEMS
                 if any(n in text for n in needles)), None)


def permanent_storage_error(exc: BaseException) -> bool:
    """An S3 failure another attempt cannot pass: a missing bucket, credentials refused or
    missing (an endpoint that does not answer may come back)."""
    found = _storage_problem(exc)
    return found is not None and found[1]


def describe_storage_error(exc: BaseException | str, paths: Iterable[str] = (),
                           endpoint: str | None = None) -> str | None:
    """One line for a failure of S3 (None when EXC is not one): what to check, naming the
    s3:// PATHS of the command and the ENDPOINT (None: AWS). Never EXC's own text. EXC
    may be an S3 error code ("NoSuchBucket") where the exception lost it."""
    s3 = [p for p in paths if isinstance(p, str) and p.startswith("s3://")]
    found = _storage_problem(exc) if s3 else None
    return None if found is None else f"{', '.join(s3)} (endpoint {endpoint or 'AWS'}): {found[0]}"


#: Errors of the machine rather than of a document: a batch that hits one stops the run.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                errno.EPERM})


_RUST_FRAME = re.compile(r",\s*/\S+\.rs:\d+:\d+")


def short_error(exc: BaseException) -> str:
    """A Lance error as one short line (no Rust source locations)."""
    text = _RUST_FRAME.sub("", str(exc)).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    line = line.removeprefix("lance error: ")
    return line if len(line) <= 200 else line[:197] + "..."


def is_environment_error(exc: BaseException) -> bool:
    """A full disk, a read-only or forbidden database or work dir: retrying the next
    document cannot help, the run stops (and the next run goes on from there)."""
    return os_errno(exc) in ENVIRONMENT_ERRNOS


def is_expected(exc: BaseException) -> bool:
    """An error whose message says all a user needs (no traceback needed): bad settings
    or input, a refused run, the machine's (disk full, read-only), or a batch's task that
    did not start because a signal asked the run to stop."""
    from sproutrag.interrupt import StopRequested
    from sproutrag.schemas.settings import SettingsError

    clean = (SettingsError, CorpusNotFoundError, MassDeleteError, DatabaseBusyError,
             ModelNotFoundError, RunOutcome, DatabaseNotFoundError, StaleIndexError,
             WeightsFileError, DamagedTableError, StopRequested, StoragePathError)
    return isinstance(exc, clean) or describe_os_error(exc) is not None


# --- the project's exception classes (each module raising one re-exports it) ---------


class SproutragError(Exception):
    """An error of the project's own: its message says all a user needs (bad input or
    settings, a refused run, damaged data), so the command line prints it as one line.
    Any other exception reaching the command line is a bug: it prints its traceback."""


class InvalidTreeError(SproutragError, ValueError):
    """A tree's arrays are inconsistent (raised by `validate_tree`)."""


class ModelNotFoundError(SproutragError, FileNotFoundError):
    """`encoding.model` names no model folder (and no cached hub model)."""


class WeightsFileError(SproutragError, ValueError):
    """A weights file cannot be read: names the file and the problem."""


class WeightsMismatchError(WeightsFileError):
    """A weights file learned for a model of another shape (layers x heads) than
    `encoding.model`: names both and what to do."""


class TrainingDataError(SproutragError, ValueError):
    """Labelled data `sproutrag train` cannot learn from: says what is missing."""


class DatasetError(SproutragError, ValueError):
    """A labelled JSONL file (`evaluate` / `train` --docs or --queries) that cannot be
    used: names the file, the line and the problem (the command line exits 2)."""


class QueryError(SproutragError, ValueError):
    """A query that cannot run (empty text, bad k, only unknown doc_ids)."""


class SearchParamsError(QueryError):
    """A search parameter (k, beam width, threshold, margin, ...) out of its range, or
    unknown: names it and its range."""


class DatabaseBusyError(SproutragError, RuntimeError):
    """Another index run holds the database."""


class DamagedTableError(SproutragError, OSError):
    """Tables of the database cannot be read (a data file lost, truncated or damaged)."""

    def __init__(self, uri: str, problems: dict[str, str]) -> None:
        names = ", ".join(repr(n) for n in problems)
        first = next(iter(problems.values()), "")
        s = "s" if len(problems) > 1 else ""
        super().__init__(
            f"table{s} {names} of {uri!r} cannot be read ({first}): run `sproutrag check "
            f"--db {uri}` for a report; `sproutrag index CORPUS --db {uri} --full` rebuilds "
            "the database from the corpus (it moves the damaged tables aside, deleting "
            "nothing)"
        )
        self.uri, self.tables = uri, dict(problems)


class DamagedDocumentError(SproutragError, LookupError):
    """Documents whose `documents` row names a tree `nodes` does not hold (a `nodes` table
    rolled back, or moved aside without its `documents`), or whose stored tree is
    invalid (WHY says so): a search cannot read them."""

    def __init__(self, uri: str, doc_ids: list[str], why: str | None = None) -> None:
        more = f" (and {len(doc_ids) - 1} more)" if len(doc_ids) > 1 else ""
        why = why or "names a tree the nodes table does not hold"
        super().__init__(
            f"document {doc_ids[0]!r}{more} of {uri!r} {why} (a damaged database): "
            f"`sproutrag check --db {uri}` names every such document; "
            f"`sproutrag index CORPUS --db {uri} --verify` re-indexes them")
        self.uri, self.doc_ids = uri, list(doc_ids)


class DamagedIndexError(SproutragError, OSError):
    """An index of the database cannot be read (derived data: an index run rebuilds it)."""

    def __init__(self, uri: str, problems: dict[str, str]) -> None:
        first, why = next(iter(problems.items()))
        table, index = first.split(".", 1)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(
            f"index {index!r} of table {table!r} in {uri!r} cannot be read ({why}){more}: "
            f"the next `sproutrag index CORPUS --db {uri}` rebuilds it (indexes are derived "
            "from the rows: nothing is lost)")
        self.uri, self.indexes = uri, dict(problems)


class StaleIndexError(SproutragError, ValueError):
    """The database was built with another encoder or schema version."""


class OldSchemaError(StaleIndexError):
    """The database has an older schema version that an index run migrates in place."""


class DatabaseNotFoundError(SproutragError, FileNotFoundError):
    """No SproutRAG database at the given location."""


class MassDeleteError(SproutragError, ValueError):
    """The run would delete more of the index than the settings allow."""


class RunOutcome(SproutragError):  # noqa: N818 - an outcome carrying the run's summary row
    """A run that did all the work it could but did not succeed; `.row` is its summary."""

    def __init__(self, message: str, row: dict[str, Any]) -> None:
        super().__init__(message, row)  # both in args: the exception pickles
        self.message, self.row = message, row

    def __str__(self) -> str:
        return self.message


class DocumentsFailedError(RunOutcome):
    """More documents of an index run failed than `pipeline.max_failed_share` tolerates."""


class QueriesFailedError(RunOutcome):
    """More queries of a query run failed than `pipeline.max_failed_query_share` tolerates."""


class RunInterruptedError(RunOutcome):
    """The run stopped early on SIGTERM / SIGINT; what it stored stays."""


class StoragePathError(SproutragError):
    """An s3:// path of the command cannot be used: its bucket is missing, refuses the
    credentials or cannot be reached (checked before the command starts)."""


class CorpusNotFoundError(SproutragError, FileNotFoundError):
    """The corpus path does not exist or holds nothing to index."""


class CorpusUnreadableError(CorpusNotFoundError):
    """The corpus folder itself (or the JSONL file) cannot be listed or opened."""
