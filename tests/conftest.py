"""The test environment (offline, no analytics) and the fixtures every package's tests share.
Shared helpers (not fixtures) are in tests/helpers.py and tests/processes.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import CONTRACTNLI, SAMPLE

for key, value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "SPROUTRAG_PIPELINE__PROGRESS": "false",
}.items():
    os.environ.setdefault(key, value)

# Prefect configures its logging when `prefect.main` is first imported (`from prefect
# import flow`), and its console handler keeps the stream that is sys.stderr then.
# Imported here, under pytest's session-wide capture: a test with `capsys` that imported
# it first would hand the handler that test's stream, closed when the test ends, and every
# later flow's log line would fail ("I/O operation on closed file") in whichever test runs
# next.
import prefect.main  # noqa: E402, F401  (after the environment above)


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server (SQLite) for every flow test in the session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def contractnli() -> Path:
    if not (CONTRACTNLI / "dev.docs.jsonl").is_file():
        pytest.skip("../shared/data/contractnli is not here (only on the project's machines)")
    return CONTRACTNLI


@pytest.fixture(scope="session")
def sample_index(prefect_harness, tmp_path_factory):
    """The sample corpus indexed once by the index-corpus flow: (db path, run row).

    Tests must not write to this database except the incremental re-run test.
    """
    from sproutrag.flows.index_corpus import index_corpus

    db = str(tmp_path_factory.mktemp("sample") / "db")
    return db, index_corpus(corpus=str(SAMPLE), db=db)
