"""A commit survives a power cut: what it wrote is fsynced, files then their directory, before
the manifest vouches for it (and so before the writer marks its tasks succeeded and drops their
payloads), and the manifest's own name is made durable after its rename (issue 33).

The tests record the file-system calls of a commit (opens for writing, fsyncs, renames,
removals: wrappers around `open`, `os.open`, `os.fsync`, `os.replace`, `os.rename`, `os.remove`
and `os.unlink`) and check their order. benchmarks/power_loss.py cuts the power for real (in a
model of a disk that keeps only what was fsynced) and counts what is lost.
"""

from __future__ import annotations

import builtins
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from searchsvc.backends import open_backend
from searchsvc.backends.whoosh import integrity
from searchsvc.backends.whoosh.store import CURRENT, IndexDirectory
from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS, build_index

_WRITING_MODES = frozenset("wax+")
_WRITING_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT


@dataclass(frozen=True)
class Call:
    kind: str  # "open" (for writing), "fsync", "rename", "remove"
    path: str  # the file opened, fsynced, renamed to or removed
    inode: int
    source: str = ""  # what a rename renamed
    directory: bool = False  # an fsync of a directory


class FileSystemCalls:
    """The file-system calls of this process while installed, in order."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open, real_os_open, real_fsync = builtins.open, os.open, os.fsync

        def recording_open(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            if not isinstance(file, int) and _WRITING_MODES & set(mode):
                self._add("open", file, os.fstat(handle.fileno()).st_ino)
            return handle

        def recording_os_open(path, flags, mode=0o777, *, dir_fd=None):
            descriptor = real_os_open(path, flags, mode, dir_fd=dir_fd)
            if flags & _WRITING_FLAGS:
                self._add("open", path, os.fstat(descriptor).st_ino)
            return descriptor

        def recording_fsync(descriptor):
            status = os.fstat(descriptor)
            path = os.readlink(f"/proc/self/fd/{descriptor}")
            real_fsync(descriptor)
            self._add("fsync", path, status.st_ino, directory=stat.S_ISDIR(status.st_mode))

        def recording_rename(real: Callable) -> Callable:
            def rename(source, destination, *args, **kwargs):
                inode = os.stat(source).st_ino
                real(source, destination, *args, **kwargs)
                self._add("rename", destination, inode, source=os.path.abspath(source))

            return rename

        def recording_remove(real: Callable) -> Callable:
            def remove(path, *args, **kwargs):
                inode = os.stat(path).st_ino
                real(path, *args, **kwargs)
                self._add("remove", path, inode)

            return remove

        monkeypatch.setattr(builtins, "open", recording_open)
        monkeypatch.setattr(io, "open", recording_open)
        monkeypatch.setattr(os, "open", recording_os_open)
        monkeypatch.setattr(os, "fsync", recording_fsync)
        monkeypatch.setattr(os, "replace", recording_rename(os.replace))
        monkeypatch.setattr(os, "rename", recording_rename(os.rename))
        monkeypatch.setattr(os, "remove", recording_remove(os.remove))
        monkeypatch.setattr(os, "unlink", recording_remove(os.unlink))

    def _add(self, kind: str, path, inode: int, **more) -> None:
        self.calls.append(Call(kind, os.path.abspath(os.fsdecode(path)), inode, **more))

    def find(self, kind: str, start: int = 0, stop: int | None = None, **match) -> list[int]:
        """Positions of the calls of `kind` in [start, stop) whose fields equal `match`."""
        stop = len(self.calls) if stop is None else stop
        return [
            n
            for n in range(start, stop)
            if self.calls[n].kind == kind
            and all(getattr(self.calls[n], name) == value for name, value in match.items())
        ]

    def renamed_to(self, path: Path) -> int:
        [position] = self.find("rename", path=str(path))
        return position

    def directory_synced(self, inode: int, start: int, stop: int | None = None) -> bool:
        return bool(self.find("fsync", start, stop, inode=inode, directory=True))


def assert_sealed_durably(record: FileSystemCalls, folder: Path, sealed_at: Path) -> int:
    """Check the seal of the newest state of `folder` (a generation, sealed under the name
    `sealed_at`); the position of the manifest's rename."""
    toc = integrity.latest_toc(folder)
    assert toc is not None
    folder_inode = folder.stat().st_ino
    manifest = sealed_at / integrity.manifest_name(toc)
    # The manifest: a temporary written and fsynced, renamed to its name, then the directory.
    sealed = record.renamed_to(manifest)
    temporary = record.calls[sealed].source
    # The last open of that name before the rename: earlier commits may have used it too.
    opened = record.find("open", 0, sealed, path=temporary)[-1]
    assert record.find("fsync", opened, sealed, inode=record.calls[sealed].inode)
    assert record.directory_synced(folder_inode, sealed + 1), "the manifest's name not synced"

    # Every file the commit wrote that the state keeps: fsynced after it was last opened for
    # writing and before the manifest was, then the directory, before the manifest too.
    # (Whoosh's lock file holds nothing: its writers create it empty to lock the index.)
    kept = {
        entry.stat().st_ino: entry.name
        for entry in folder.iterdir()
        if entry.is_file() and entry.name != "MAIN_WRITELOCK"
    }
    written = {
        record.calls[n].inode: n
        for n in record.find("open", 0, opened)
        if record.calls[n].inode in kept and record.calls[n].inode != record.calls[sealed].inode
    }
    names = {kept[inode] for inode in written}
    assert f"_MAIN_{toc}.toc" in names and any(name.endswith(".seg") for name in names)
    synced = []
    for inode, last_opened in written.items():
        fsyncs = record.find("fsync", last_opened, opened, inode=inode)
        assert fsyncs, f"{kept[inode]} was written and never fsynced before the manifest"
        synced.append(fsyncs[-1])
    assert record.directory_synced(folder_inode, max(synced), opened), (
        "the directory was not fsynced between its files and the manifest"
    )

    # Whoosh's commit (patches.py): the segments, then the TOC, before the TOC's name, then
    # the directory before the previous TOC goes.
    toc_renamed = record.renamed_to(sealed_at / f"_MAIN_{toc}.toc")
    toc_inode = record.calls[toc_renamed].inode
    # The last open before the rename: Linux gives a removed file's inode number to a new file,
    # so an earlier, removed file may have had the TOC's number.
    toc_opened = record.find("open", 0, toc_renamed, inode=toc_inode)[-1]
    assert record.find("fsync", toc_opened, toc_renamed, inode=toc_inode)
    for inode, last_opened in written.items():
        if kept[inode].endswith(".seg"):
            assert record.find("fsync", last_opened, toc_opened, inode=inode), kept[inode]
    previous = record.find("remove", toc_renamed, path=str(sealed_at / f"_MAIN_{toc - 1}.toc"))
    next_change = previous[0] if previous else opened
    assert record.directory_synced(folder_inode, toc_renamed, next_change)
    return sealed


def test_an_update_is_durable_before_its_manifest_seals_it(tmp_path, monkeypatch):
    location = build_index(tmp_path / "index")
    generation = IndexDirectory(location).live_path()
    with open_backend(location) as backend:
        record = FileSystemCalls()
        record.install(monkeypatch)
        result = backend.write(
            upserts=[
                replace(FIXTURE_RECORDS[0], title="Durable Scheduling"),
                Record(id="durable-1", title="Written Before The Power Cut"),
            ],
            deletes=[FIXTURE_RECORDS[1].id],
        )
        monkeypatch.undo()
    assert (result.added, result.replaced, result.deleted) == (1, 1, 1)
    assert IndexDirectory(location).live_path() == generation  # updated in place
    assert_sealed_durably(record, generation, generation)


def test_a_rebuild_is_durable_before_current_names_it(tmp_path, monkeypatch):
    location = build_index(tmp_path / "index")
    directory = IndexDirectory(location)
    root_inode = directory.root.stat().st_ino
    with open_backend(location) as backend:
        record = FileSystemCalls()
        record.install(monkeypatch)
        backend.rebuild([*FIXTURE_RECORDS, Record(id="durable-2", title="Rebuilt")])
        monkeypatch.undo()
    generation = directory.live_path()
    # The build's directory is sealed, then renamed to its generation's name.
    [named] = [
        n
        for n in record.find("rename", path=str(generation))
        if Path(record.calls[n].source).parent == directory.root
    ]
    build_dir = Path(record.calls[named].source)
    sealed = assert_sealed_durably(record, generation, build_dir)
    assert sealed < named
    # The index directory is fsynced after that rename, before CURRENT names the generation;
    # CURRENT is written as the manifest is.
    current = record.renamed_to(directory.root / CURRENT)
    temporary = record.calls[current].source
    [opened] = record.find("open", 0, current, path=temporary)
    assert named < opened
    assert record.directory_synced(root_inode, named, opened), "the rename was not synced"
    assert record.find("fsync", opened, current, inode=record.calls[current].inode)
    assert record.directory_synced(root_inode, current + 1)
