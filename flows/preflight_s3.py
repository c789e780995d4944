"""The s3:// paths of a command, checked before Prefect starts: each bucket answers a
listing of the path's prefix with these credentials (what the run's first request of it
does), and an s3:// batch of queries exists.

Without it a missing `pipeline.work_dir` bucket failed the run with a bare "Invalid
argument" (or, in another region, was created: s3fs makes a bucket for a folder), a
missing corpus bucket was "does not exist" without the endpoint, and a missing bucket
of the database printed the server's reply through Prefect's log before the one line.
What a user reads is one line naming the setting or argument, the path, the endpoint
and what to check (`sproutrag.errors.describe_storage_error`'s words); never the
server's own text.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sproutrag.schemas.paths import is_s3

if TYPE_CHECKING:
    from sproutrag.schemas.settings import Settings

#: Arguments holding a path the command reads or writes, by command (`--out` of a query
#: batch is a local file; a flow run writes s3:// results).
_PATHS = {"index": ("corpus", "db"), "query": ("db", "queries"), "check": ("db",)}


def cli_paths(args: argparse.Namespace, settings: Settings) -> list[tuple[str, str | None]]:
    """(what names it, path) of each path the command uses that may be on S3."""
    named = [("CORPUS" if flag == "corpus" else f"--{flag}", getattr(args, flag, None))
             for flag in _PATHS.get(args.command, ())]
    if args.command == "index":
        named.append(("pipeline.work_dir", settings.pipeline.work_dir))
    return named


def check_s3_paths(named: list[tuple[str, str | None]], settings: Settings) -> None:
    """For each s3:// path of NAMED ((what names it, path)): StoragePathError (exit 1)
    when its bucket is missing, refuses these credentials or cannot be reached; for one
    named "--queries", UsageError (exit 2) when it is no object."""
    from sproutrag.flows.preflight import UsageError

    checked: set[tuple[str, str]] = set()
    for what, url in named:
        if not (isinstance(url, str) and is_s3(url)):
            continue
        fs, path = _filesystem(url, settings)
        bucket, _, prefix = path.partition("/")
        if (bucket, prefix) not in checked:
            checked.add((bucket, prefix))
            _list_prefix(fs, bucket, prefix, what, url, settings)
        if what == "--queries" and not fs.isfile(path):
            raise UsageError(f"--queries {url}: no such object")


def _filesystem(url: str, settings: Settings):
    import fsspec.core

    return fsspec.core.url_to_fs(url, **settings.storage.fsspec_options(url))


def _list_prefix(fs, bucket: str, prefix: str, what: str, url: str,
                 settings: Settings) -> None:
    from sproutrag.errors import StoragePathError, describe_storage_error

    try:
        fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1)
    except Exception as exc:  # noqa: BLE001 - described below, or raised as it is
        # s3fs turns the listing's 404 (it can only be the bucket's) into a bare "Not Found"
        problem = "NoSuchBucket" if isinstance(exc, FileNotFoundError) else exc
        line = describe_storage_error(problem, [url], settings.storage.endpoint)
        if line is None:
            raise
        raise StoragePathError(f"{what} {line}") from None
