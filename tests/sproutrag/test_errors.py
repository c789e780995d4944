"""A full disk and a read-only database give one clean line, and are not retried."""

from __future__ import annotations

import errno
import subprocess
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from sproutrag.errors import describe_os_error, is_environment_error, os_errno


@pytest.fixture
def tiny_fs(tmp_path):
    """A 64 KB tmpfs (needs the privilege to mount; skipped without it)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs privileges)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_lance_full_disk_and_read_only_are_named(tiny_fs, tmp_path, capsys):
    import lancedb
    from sproutrag.flows.cli import main

    with pytest.raises(RuntimeError) as full:  # LanceDB's own error type
        lancedb.connect(str(tiny_fs / "db")).create_table(
            "t", data=pa.table({"x": np.arange(100_000)}))
    assert os_errno(full.value) == errno.ENOSPC and is_environment_error(full.value)
    line = describe_os_error(full.value)
    assert line.startswith("No space left on device: free disk space") and ".rs:" not in line

    subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("One sentence.", encoding="utf-8")
    assert main(["index", str(corpus), "--db", str(tiny_fs / "newdb")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the database folder" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_only_transient_errors_are_retried():
    from sproutrag.tasks.retries import retry_transient

    from sproutrag.ingest.corpus import CorpusNotFoundError

    def retried(exc: BaseException) -> bool:
        return retry_transient(None, None, SimpleNamespace(data=exc))

    assert retried(ConnectionResetError("peer reset")) and retried(TimeoutError())
    assert retried(RuntimeError("lance error: commit conflict"))
    assert not retried(CorpusNotFoundError("corpus 'x' does not exist"))
    assert not retried(OSError(errno.ENOSPC, "No space left on device"))
    assert not retried(RuntimeError("LanceError(IO): Read-only file system (os error 30)"))
    assert not retried(ValueError("bad input")) and not retried(PermissionError("no"))
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError

    assert not retried(NoCredentialsError())  # S3: the same next time (it was retried)
    assert not retried(OSError("404 <Code>NoSuchBucket</Code>"))
    assert retried(EndpointConnectionError(endpoint_url="http://h:1"))  # may come back


def test_an_s3_failure_is_one_line_that_never_holds_its_text():
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError

    from sproutrag.errors import describe_storage_error

    paths = ["s3://corpus/docs", "local/db"]
    cases = [
        (EndpointConnectionError(endpoint_url="http://h:1/x"), "cannot reach the S3 endpoint"),
        (ValueError("Failed to connect to namespace: IO { tcp connect error AKIAKEY }"),
         "cannot reach the S3 endpoint"),
        (NoCredentialsError(), "no S3 credentials"),
        (PermissionError("Forbidden AKIAKEY"), "refused the credentials (403)"),
        (OSError("404 <Code>NoSuchBucket</Code> AKIAKEY"), "the bucket does not exist"),
    ]
    for exc, said in cases:
        line = describe_storage_error(exc, paths, "http://h:1")
        assert line.startswith("s3://corpus/docs (endpoint http://h:1): ") and said in line
        assert "AKIAKEY" not in line and "local/db" not in line
    assert describe_storage_error(PermissionError("Forbidden"), ["local/db"]) is None
    assert describe_storage_error(KeyError("x"), paths) is None
    prefect_down = OSError("All connection attempts failed: [Errno 111] Connection refused")
    assert describe_storage_error(prefect_down, paths) is None  # not S3's: not said so
