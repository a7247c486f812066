"""What makes a committed state survive a power cut: its files' contents on disk, then the
directory entries that name them, in that order, before anything vouches for the state.

A file's content is durable once fsynced; its name (a creation, a rename, a removal) only once
its directory is fsynced. Without both, a power cut can leave a new name whose content never
reached the disk: a table of contents (TOC) of zero bytes that has replaced the previous one,
a segment of zeros. Then the live generation fails verification, the previous one is served,
and every write acknowledged since it was built is gone (issue 33).

So, in this order (`tests/whoosh/test_durability.py` records the calls and checks it):

1. Whoosh's commit (patches.py): the files of the segments the new TOC names are fsynced
   before the TOC is written; the TOC's temporary file is fsynced before it is renamed to its
   name, and the directory after, before Whoosh removes the previous TOC. A commit's new state
   is durable when the commit returns, whatever happens next.
2. The seal (state_files.seal): every file of the generation (Whoosh's, the derived ones, the
   metadata), then its directory, before the manifest; the manifest is written to a temporary,
   fsynced, renamed, and the directory fsynced again. Only then does the writer mark its tasks
   succeeded (and drop their payloads).
3. A build (store.build): its directory is sealed as above; renamed to its generation name,
   the index directory is fsynced before CURRENT names it; CURRENT is written as the manifest
   is.

An fsync of a file nothing changed since the last one costs a system call and no disk write, so
the whole generation is synced rather than each writer tracking what it wrote.
"""

from __future__ import annotations

import os
from pathlib import Path


def sync_directory(path: str | os.PathLike[str]) -> None:
    """Make the names in a directory durable (creations, renames and removals in it)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_file(path: str | os.PathLike[str]) -> None:
    """Make a file's content durable (a read-only descriptor fsyncs the file all the same)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_files(folder: str | os.PathLike[str]) -> None:
    """Make the content of every file of `folder` durable (not its subfolders: Whoosh's temporary
    storage; not the temporaries of write_atomically, which fsyncs what it keeps)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False) and not _temporary(entry.name):
                try:
                    sync_file(entry.path)
                except FileNotFoundError:
                    continue  # removed meanwhile: nothing of it to keep


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """Every file's content, then the names: `folder` as it is now survives a power cut."""
    sync_files(folder)
    sync_directory(folder)


def _temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def sync_parent(path: Path) -> None:
    """Make `path`'s own name durable in its parent directory (best effort: the parent of an
    index directory may not be ours to open)."""
    try:
        sync_directory(path.parent)
    except OSError:
        return
