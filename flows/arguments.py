"""Argument types and checks of the query side of the command line (and the flow).

Numbers are refused at parse time by the checks the search itself makes
(`sproutrag.params`, against `sproutrag.limits.LIMITS`: a k or beam past 2**31 - 1, a
threshold outside the cosine's [-1, 1], ...), so a bad value prints argparse's one line
naming the flag and exits 2 instead of failing deep in LanceDB. `check_output_file`
refuses an output path that would overwrite the input or cannot be written, before any
query runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from sproutrag.params import count_problem, number_problem


def count_type(limits: str) -> Callable[[str], int]:
    """An argparse type: an integer within `LIMITS[limits]` (k, beam width), checked by
    `sproutrag.params.count_problem`, the check of the search itself."""
    count_problem(limits, 1)  # an unknown LIMITS key fails here, when the parser is built

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if problem := count_problem(limits, value):
            raise argparse.ArgumentTypeError(f"{problem}, got {text}")
        return value

    parse.__name__ = f"integer {limits}"
    return parse


def number_type(limits: str, *, none: str | None = None) -> Callable[[str], float | None]:
    """An argparse type: a finite number within `LIMITS[limits]` (or None for the word
    NONE, when given: `--margin none`), checked by `sproutrag.params.number_problem`."""
    number_problem(limits, 0.0)  # an unknown LIMITS key fails here

    def parse(text: str) -> float | None:
        if none is not None and text.strip().lower() == none:
            return None
        try:
            value = float(text)
        except ValueError:
            alt = f" or {none!r}" if none is not None else ""
            raise argparse.ArgumentTypeError(f"expected a number{alt}, got {text!r}") from None
        if problem := number_problem(limits, value):  # also refuses nan and inf
            raise argparse.ArgumentTypeError(f"{problem}, got {text!r}")
        return value

    parse.__name__ = f"number {limits}"
    return parse


def check_output_file(out: str, *, source: str | None, flag: str = "--out",
                      source_flag: str = "--queries") -> None:
    """Refuse (ValueError naming FLAG) a local output file that is the input file SOURCE
    (by path or by inode: a symlink, a hard link), a folder, or whose folder can be
    neither found nor created. s3:// paths are checked by the writer."""
    if "://" in out:
        return
    path = Path(out).expanduser()
    if path.is_dir():
        raise ValueError(f"{flag} {out}: is a folder; name a file to write the results to")
    if source is not None and "://" not in source and _same_file(path, Path(source)):
        raise ValueError(f"{flag} {out} is the {source_flag} file {source}: the results "
                         "would overwrite the queries; name another file")
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {out}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {out}: cannot write in {parent} (read-only or not "
                         "yours); name a file in a folder you can write to")


def _same_file(a: Path, b: Path) -> bool:
    """A and B name one file: the same path once normalised, or the same inode."""
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False
