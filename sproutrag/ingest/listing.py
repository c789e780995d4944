"""List a corpus folder and know what could not be seen.

A local folder is walked with `os.scandir` (no recursion, no symlinked folders followed):
a subfolder that cannot be listed (permission denied, removed meanwhile) is reported in
`Listing.unlisted`, never silently taken as empty, and a symlink to a folder is reported
in `Listing.folder_links` (not followed: no cycles, no document under two doc_ids).
fsspec's own `find` would skip an unlistable folder without a word.

On object stores (s3://...) a listing error propagates: s3fs lists a prefix in one flat
request that raises on any error, and a backend whose `find` is fsspec's generic
folder walk is asked to raise (`on_error="raise"`) instead of skipping the folder.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

TEXT_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True, slots=True)
class Entry:
    """A corpus file to read: its path, its doc_id (path below the folder), and what the
    listing said of it when it gave it: size in bytes, modification time (UTC), ETag."""

    path: str
    rel: str
    size: int | None = None
    modified_at: datetime | None = None
    etag: str | None = None


def _link_changed_ns(path: str) -> int:
    """The latest change time (ctime, ns) of the symlinks PATH goes through to its file
    (0: PATH is no symlink). Re-pointing a link (`ln -sfn`) makes a new link: its ctime
    is the moment of the change and, unlike an mtime, cannot be set back."""
    latest = 0
    for _ in range(40):  # the kernel's own limit of links followed
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode):
            break
        latest = max(latest, st.st_ctime_ns)
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    return latest


def local_facts(path: str, st: os.stat_result) -> tuple[int, datetime]:
    """(size, modification time) of the local file PATH as the listing records them, ST:
    its stat (symlinks followed). The time is the file's mtime or, when PATH is a symlink,
    the latest change of a link on the way if later: a link re-pointed at another file of
    the same size and time is read again, never taken as unchanged."""
    ns = max(st.st_mtime_ns, _link_changed_ns(path))
    return st.st_size, datetime.fromtimestamp(ns / 1e9, UTC)


def _local_entry(entry: os.DirEntry, rel: str) -> Entry:
    """ENTRY with its size and modification time (`local_facts`); without them when it
    cannot be stat'ed (reading it then reports why)."""
    try:
        st = entry.stat(follow_symlinks=True)
        facts = local_facts(entry.path, st) if entry.is_symlink() else (
            st.st_size, datetime.fromtimestamp(st.st_mtime_ns / 1e9, UTC))
    except OSError:
        return Entry(entry.path, rel)
    return Entry(entry.path, rel, *facts)


@dataclass
class Listing:
    entries: list[Entry] = field(default_factory=list)
    unlisted: list[tuple[str, str]] = field(default_factory=list)  # (rel folder + "/", why)
    folder_links: list[tuple[str, str]] = field(default_factory=list)  # (rel + "/", target)


def is_local(fs) -> bool:
    return "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))


def _is_dir(entry: os.DirEntry, *, follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:  # cannot tell: it is read as a file, and that read reports the error
        return False


def hidden(rel: str) -> bool:
    """Whether the path REL (below a corpus folder) is hidden: one of its names starts
    with a dot (".git/", ".ipynb_checkpoints/", ".notes.md"), as file browsers and
    most document loaders treat it."""
    return any(part.startswith(".") for part in rel.split("/"))


def list_local(root: str, *, include_hidden: bool = False) -> Listing:
    """The .txt/.md files below ROOT (sorted by doc_id), the subfolders that could not be
    listed and the symlinks to folders; hidden files and folders (`hidden`) only with
    INCLUDE_HIDDEN. ROOT itself unlistable raises OSError."""
    out, stack = Listing(), [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            if folder == root:
                raise
            out.unlisted.append((folder[len(root) + 1 :] + "/", exc.strerror or str(exc)))
            continue
        for entry in entries:
            rel = entry.path[len(root) + 1 :]
            if not include_hidden and entry.name.startswith("."):
                continue
            if _is_dir(entry, follow=False):
                stack.append(entry.path)
            elif entry.is_symlink() and _is_dir(entry, follow=True):
                out.folder_links.append((rel + "/", os.path.realpath(entry.path)))
            elif entry.name.lower().endswith(TEXT_SUFFIXES):
                out.entries.append(_local_entry(entry, rel))
    out.entries.sort(key=lambda e: e.rel)
    out.unlisted.sort()
    out.folder_links.sort()
    return out


def _generic_find(fs) -> bool:
    """FS's `find` is fsspec's folder walk (which skips unlistable folders by default)."""
    from fsspec.asyn import AsyncFileSystem
    from fsspec.spec import AbstractFileSystem

    if isinstance(fs, AsyncFileSystem):
        return type(fs)._find is AsyncFileSystem._find
    return type(fs).find is AbstractFileSystem.find


def fsspec_entry(name: str, rel: str, info: dict[str, Any]) -> Entry:
    """An object store's listing INFO of NAME as an Entry: size, last modification
    (s3fs: LastModified) and ETag (quotes stripped)."""
    when = info.get("LastModified") or info.get("mtime")
    if isinstance(when, int | float):
        when = datetime.fromtimestamp(when, UTC)
    elif isinstance(when, datetime) and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    etag = info.get("ETag") or info.get("etag")
    return Entry(name, rel, info.get("size"), when if isinstance(when, datetime) else None,
                 str(etag).strip('"') if etag else None)


def list_fsspec(fs, root: str, *, include_hidden: bool = False) -> Listing:
    """The .txt/.md objects below ROOT with their sizes, times and ETags, hidden ones
    (`hidden`) only with INCLUDE_HIDDEN; a listing error raises."""
    kwargs = {"on_error": "raise"} if _generic_find(fs) else {}
    found = fs.find(root, detail=True, **kwargs)
    entries = [
        fsspec_entry(name, name[len(root) + 1 :], info)
        for name, info in found.items()
        if info.get("type") != "directory" and name.lower().endswith(TEXT_SUFFIXES)
        and (include_hidden or not hidden(name[len(root) + 1 :]))
    ]
    return Listing(sorted(entries, key=lambda e: e.rel))


def bounded_lines(fh: BinaryIO, limit: int, block: int = 1 << 20
                  ) -> Iterator[tuple[int, bytes | None]]:
    """FH's lines (newline stripped), each with the byte offset it starts at; None for a
    line longer than LIMIT bytes, whose bytes are skipped, never held in memory."""
    buf, over, scan = bytearray(), False, 0
    base = line_start = 0  # base: the offset of buf[0] in FH
    while True:
        chunk = fh.read(block)
        buf += chunk
        while (i := buf.find(b"\n", scan)) >= 0:
            yield line_start, None if over or i > limit else bytes(buf[:i])
            base += i + 1
            del buf[: i + 1]
            line_start, over, scan = base, False, 0
        if not chunk:
            if buf or over:
                yield line_start, None if over or len(buf) > limit else bytes(buf)
            return
        scan = len(buf)
        if len(buf) > limit:  # the line is too long: drop what was read of it
            base += len(buf)
            over, buf, scan = True, bytearray(), 0
