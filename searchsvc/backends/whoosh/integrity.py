"""Manifests: what each committed state of a generation holds, so that a damaged or foreign
generation is told apart from a good one before it is served.

A build or an update (holding the index's lock) writes, last, `searchsvc-manifest-<N>.json` for
the state it committed, N being Whoosh's TOC generation: every file of the state with its size
and CRC-32, and the formats it was written in. It is written to a temporary name and renamed, so
a reader finds a whole manifest or none; the one of the state before is removed after. Whoosh's
own clean-up leaves these files alone (they do not match its segment or TOC patterns).

A reader looks for the manifest of the newest TOC generation only. While an update is between
its Whoosh commit and its manifest, that state has none yet: it is *pending*, served as Whoosh
committed it (as before manifests existed), and verified once its manifest is there. A file that
an update rewrites in place (searchsvc.json) may change under a reader
that checks an older manifest: the caller looks again at the state after verifying and
discards a verdict made while it changed (store.py).

Checksums are remembered by file identity (device, inode, size, mtime and ctime, name): a file
is read in full once per version of it, and updates only hash the files they wrote. They are
remembered per process, and beside the state, in `.searchsvc-checksums-<N>.json`, by the
process that wrote the manifest or verified the state in full: a new server process (each
gunicorn worker, each restart) then verifies a state of a million records by a stat of each
file instead of reading gigabytes, which took most of its cold start. A change through the
file system changes the ctime (no call can set it back), so any rewrite, truncation or zero
fill is read again and caught. What that leaves undetected: a disk's silent corruption of a
file after its checksum was remembered. `searchsvc check` reads every file again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isal import isal_zlib

from searchsvc.backends.contract import Damage
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION

MANIFEST_PREFIX = "searchsvc-manifest-"
MANIFEST_FORMAT = 1
METADATA = "searchsvc.json"
# Whoosh's table of contents of each state, and its temporary name while being written.
_TOC = re.compile(r"^_MAIN_([0-9]+)\.toc$")
_TOC_TEMPORARY = re.compile(r"^_MAIN_[0-9]+\.toc\..+$")
_MANIFEST = re.compile(rf"^{re.escape(MANIFEST_PREFIX)}([0-9]+)\.json$")
_REMEMBERED_NAME = re.compile(r"^\.searchsvc-checksums-([0-9]+)\.json$")
# Whoosh's lock file: created and removed by its writers, never data.
_NOT_DATA = frozenset(("MAIN_WRITELOCK",))
# Accelerations derived from Whoosh's files (accel/: facet arrays, lexicons, posting arrays,
# vector graphs):
# each loader checks its own file (magic, format, the state it was made for) and computes the
# data again from Whoosh's files when it is missing or damaged, so such a file is no reason to
# stop serving a generation, and is left out of manifests.
_DERIVED = re.compile(r"^(facets\.npz|lexicons\.npz|.*\.postarrays|.*\.vectorgraph)$")
_CHUNK = 4 << 20
# Checksums remembered beside a state (see the module doc), and the format of that file.
_REMEMBERED_PREFIX = ".searchsvc-checksums-"
_REMEMBERED_FORMAT = 1
# Remembered checksums; cleared whole when it holds more (a long life of updates).
_MAX_REMEMBERED = 50_000


@dataclass(frozen=True)
class Verdict:
    """What verifying one state of a generation found."""

    toc_generation: int | None
    damage: tuple[Damage, ...] = ()
    # "verified" (against its manifest), "pending" (newest state without its manifest yet:
    # an update is between its commit and its manifest, or was killed there) or "legacy"
    # (no manifest at all: built before searchsvc wrote them).
    status: str = "verified"
    files: int = 0
    bytes: int = 0

    @property
    def ok(self) -> bool:
        return not self.damage


@dataclass
class _Checksums:
    lock: threading.Lock = field(default_factory=threading.Lock)
    known: dict[tuple[int, int, int, int, int, str], int] = field(default_factory=dict)


_REMEMBERED = _Checksums()


def manifest_name(toc_generation: int) -> str:
    return f"{MANIFEST_PREFIX}{toc_generation}.json"


def latest_toc(folder: Path) -> int | None:
    """The newest Whoosh TOC generation in `folder` (the state readers open), None if none."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = [int(m.group(1)) for m in map(_TOC.match, names) if m]
    return max(found) if found else None


def state_files(folder: Path, toc_generation: int) -> list[str]:
    """The files of the state at `toc_generation`, as the writer holding the lock leaves them:
    every file but temporaries, Whoosh's lock, manifests and other states' TOCs."""
    names = []
    for name in sorted(os.listdir(folder)):
        toc = _TOC.match(name)
        if (
            name.startswith(".")
            or name in _NOT_DATA
            or _DERIVED.match(name)
            or _MANIFEST.match(name)
            or _TOC_TEMPORARY.match(name)
            or (toc and int(toc.group(1)) != toc_generation)
            or not (folder / name).is_file()
        ):
            continue
        names.append(name)
    return names


def write_manifest(folder: Path, toc_generation: int, write: Callable[[Path, str], None]) -> None:
    """Write the manifest of the state at `toc_generation` (call holding the index's lock, after
    every file of the state is written), then remove those of earlier states.

    `write(path, text)` writes a file atomically (state_files.write_atomically)."""
    files = {}
    names = state_files(folder, toc_generation)
    for name in names:
        size, crc = checksum(folder / name)
        files[name] = {"size": size, "crc32": f"{crc:08x}"}
    manifest = {
        "format": MANIFEST_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "toc_generation": toc_generation,
        "files": files,
    }
    _remember_beside(folder, toc_generation, names, write)
    write(folder / manifest_name(toc_generation), json.dumps(manifest, indent=1))
    for name in os.listdir(folder):
        match = _MANIFEST.match(name) or _REMEMBERED_NAME.match(name)
        if match and int(match.group(1)) != toc_generation:
            (folder / name).unlink(missing_ok=True)


def _remembered_name(toc_generation: int) -> str:
    return f"{_REMEMBERED_PREFIX}{toc_generation}.json"


def _remember_beside(
    folder: Path, toc_generation: int, names: Iterable[str], write: Callable[[Path, str], None]
) -> None:
    """Save the checksums this process remembers of `names` beside their state (see the module
    doc): only those of files whose identity is unchanged since they were summed."""
    entries = {}
    for name in names:
        key = _stat_key(folder / name)
        with _REMEMBERED.lock:
            crc = None if key is None else _REMEMBERED.known.get(key)
        if key is not None and crc is not None:
            entries[name] = [*key[:5], crc]
    content = {"format": _REMEMBERED_FORMAT, "toc_generation": toc_generation, "files": entries}
    write(folder / _remembered_name(toc_generation), json.dumps(content))


def _recall_beside(folder: Path, toc_generation: int) -> None:
    """Take the checksums remembered beside a state into this process's memory, for the files
    whose identity still matches (anything unreadable or malformed is ignored)."""
    try:
        saved = json.loads((folder / _remembered_name(toc_generation)).read_bytes())
        if saved.get("format") != _REMEMBERED_FORMAT:
            return
        entries = saved["files"]
        for name, entry in entries.items():
            key = _stat_key(folder / name)
            if key is None or "/" in name or not isinstance(entry, list) or len(entry) != 6:
                continue
            if list(key[:5]) == entry[:5] and _is_int(entry[5]):
                with _REMEMBERED.lock:
                    _REMEMBERED.known[key] = entry[5]
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return


def remove_manifest(folder: Path, toc_generation: int) -> None:
    """Remove the manifest of a state whose files are about to be rewritten (holding the lock)."""
    (folder / manifest_name(toc_generation)).unlink(missing_ok=True)


def has_manifests(folder: Path) -> bool:
    try:
        return any(_MANIFEST.match(name) for name in os.listdir(folder))
    except OSError:
        return False


def state_key(folder: Path) -> tuple[Any, ...]:
    """A cheap fingerprint of the newest state and of its files' sizes and times: when it is
    unchanged since a verification, so is what was verified (up to what the module doc says)."""
    toc = latest_toc(folder)
    if toc is None:
        return (None,)
    manifest = folder / manifest_name(toc)
    try:
        files = json.loads(manifest.read_bytes()).get("files")
    except (OSError, ValueError, AttributeError):
        files = None
    if not isinstance(files, dict):
        return (toc, _stat_key(manifest))
    return (toc, _stat_key(manifest), tuple(_stat_key(folder / str(name)) for name in files))


def verify(folder: Path, remembered: bool = True) -> Verdict:
    """Verify the newest state of a generation: its format versions, and every file of its
    manifest by size and checksum. `remembered=False` reads every file again (`check`)."""
    toc = latest_toc(folder)
    if toc is None:
        what = (
            "no Whoosh table of contents (_MAIN_<n>.toc): not an index"
            if folder.is_dir()
            else "its directory is missing"
        )
        return Verdict(None, (Damage("", "missing", what),))
    damage = list(_metadata_damage(folder))
    manifest_path = folder / manifest_name(toc)
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except FileNotFoundError:
        status = "pending" if has_manifests(folder) else "legacy"
        return Verdict(toc, tuple(damage), status)
    except (OSError, ValueError) as exc:
        damage.append(Damage(manifest_path.name, "unreadable", reason(exc)))
        return Verdict(toc, tuple(damage))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        damage.append(Damage(manifest_path.name, "unreadable", "not a manifest"))
        return Verdict(toc, tuple(damage))
    damage += _format_damage(manifest_path.name, manifest)
    files = manifest["files"]
    if remembered:
        _recall_beside(folder, toc)
    summed: list[str] = []
    damage += _file_damage(folder, files, remembered, summed)
    if remembered and summed and not damage:
        # What this process summed, a later one need not (best effort: the folder may be
        # read-only to a server).
        with contextlib.suppress(OSError):
            _remember_beside(folder, toc, list(files), _write_quietly)
    total = sum(e["size"] for e in files.values() if isinstance(e, dict) and _is_int(e.get("size")))
    return Verdict(toc, tuple(damage), "verified", len(files), total)


def checksum(
    path: Path, remembered: bool = True, summed: list[str] | None = None
) -> tuple[int, int]:
    """(size, CRC-32) of a file, read once per version of the file (see the module doc); the
    name of a file read is added to `summed`."""
    key = _stat_key(path)
    if remembered and key is not None:
        with _REMEMBERED.lock:
            crc = _REMEMBERED.known.get(key)
        if crc is not None:
            return key[2], crc
    if summed is not None:
        summed.append(path.name)
    size, crc = 0, 0
    # ISA-L's CRC-32 runs at memory speed: reading the file costs more than summing it.
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            crc = isal_zlib.crc32(view[:count], crc)
            size += count
    if key is not None and key[2] == size:
        with _REMEMBERED.lock:
            if len(_REMEMBERED.known) >= _MAX_REMEMBERED:
                _REMEMBERED.known.clear()
            _REMEMBERED.known[key] = crc
    return size, crc


def _file_damage(
    folder: Path, files: dict[str, Any], remembered: bool, summed: list[str]
) -> Iterable[Damage]:
    for name, entry in sorted(files.items()):
        expected = entry.get("size") if isinstance(entry, dict) else None
        if not isinstance(expected, int) or "/" in name or name.startswith("."):
            yield Damage(name, "unreadable", "the manifest's entry for it is malformed")
            continue
        try:
            size = (folder / name).stat().st_size
        except FileNotFoundError:
            yield Damage(name, "missing", "missing")
            continue
        except OSError as exc:
            yield Damage(name, "unreadable", reason(exc))
            continue
        if size < expected:
            yield Damage(name, "truncated", f"truncated: {size:,} of {expected:,} bytes")
            continue
        if size > expected:
            yield Damage(name, "size", f"{size:,} bytes, {expected:,} expected")
            continue
        try:
            _, crc = checksum(folder / name, remembered, summed)
        except OSError as exc:
            yield Damage(name, "unreadable", reason(exc))
            continue
        if f"{crc:08x}" != entry.get("crc32"):
            zeros = " (it is all zero bytes)" if _all_zeros(folder / name) else ""
            yield Damage(name, "checksum", f"content does not match its checksum{zeros}")


def _metadata_damage(folder: Path) -> Iterable[Damage]:
    try:
        metadata = json.loads((folder / METADATA).read_bytes())
    except FileNotFoundError:
        yield Damage(METADATA, "missing", "missing")
        return
    except (OSError, ValueError) as exc:
        yield Damage(METADATA, "unreadable", reason(exc))
        return
    version = metadata.get("schema_version") if isinstance(metadata, dict) else None
    if version != SCHEMA_VERSION:
        yield Damage(METADATA, "version", _version_message("index format", version))


def _format_damage(name: str, manifest: dict[str, Any]) -> Iterable[Damage]:
    if manifest.get("format") != MANIFEST_FORMAT:
        yield Damage(name, "version", _version_message("manifest format", manifest.get("format")))
    if manifest.get("schema_version") != SCHEMA_VERSION:
        version = manifest.get("schema_version")
        yield Damage(name, "version", _version_message("index format", version))


def _version_message(what: str, found: Any) -> str:
    current = MANIFEST_FORMAT if what == "manifest format" else SCHEMA_VERSION
    return f"written in {what} {found}, this searchsvc reads {what} {current}: rebuild it"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stat_key(path: Path) -> tuple[int, int, int, int, int, str] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, path.name)


def _write_quietly(path: Path, text: str) -> None:
    """Write a file atomically (a temporary name, then a rename), as readers may."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _all_zeros(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                if chunk.count(0) != len(chunk):
                    return False
    except OSError:
        return False
    return True


def reason(exc: Exception) -> str:
    # The OS's words without the path it names: messages may reach HTTP answers.
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
