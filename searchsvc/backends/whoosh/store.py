"""The index directory on disk: each build is a new generation, swapped in atomically.

Layout of an index directory::

    CURRENT             one line: the name of the live generation (replaced with os.replace)
    gen-<stamp>-<pid>/  a complete Whoosh index plus searchsvc.json (build metadata),
                        facets.npz (the facet arrays of its latest state,
                        accel/facet_table_file.py),
                        lexicons.npz (its spelling and title terms, accel/lexicon_file.py),
                        a MAIN_<segment>.postarrays per segment (accel/posting_arrays_file.py)
                        and searchsvc-manifest-<N>.json, the files of its state N with their
                        sizes and checksums (integrity.py)
    build-<stamp>-<pid>/  a build in progress; never read; removed on failure or by the next build
    .lock               fcntl lock held by the one process building or updating

Readers only ever follow CURRENT, so they never see a half-built index; a build killed with
SIGKILL leaves CURRENT and the live generation untouched, and its build dir is removed by the
next build (which holds the lock, so nothing else can be using it). A power cut leaves the last
sealed state of each generation, and CURRENT naming a sealed one: what a commit, a seal and a
build fsync, and in which order, is in durability.py.

A generation is served only once verified (`choose`): its format versions, its files against
its manifest, and Whoosh opening it. When the live one fails, the previous one (KEEP_PREVIOUS
keeps one) is served with a warning; a build never swaps in a generation that fails, and an
update refuses to write onto one. The PID in names tells builds apart; it never reaches clients:
the version token is a digest of the name (`version_token`), and errors that HTTP answers carry
no path (the command line prints `local_message`, which names the directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.index import Index

from searchsvc.backends.contract import CheckedPart, Damage
from searchsvc.backends.whoosh import durability, integrity
from searchsvc.backends.whoosh.accel.posting_arrays_file import (
    remove_leftover_files,
    write_missing_posting_arrays,
)
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.integrity import METADATA, Verdict
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION, build_schema
from searchsvc.backends.whoosh.state_files import (
    save_state_files,
    saved_facet_table,
    seal,
    write_atomically,
    write_vector_graphs,
)
from searchsvc.domain.errors import BuildInProgress, IndexUnavailable
from searchsvc.domain.records import Record

CURRENT = "CURRENT"
LOCK = ".lock"
GENERATION_PREFIX = "gen-"
BUILD_PREFIX = "build-"
# Generations kept besides the live one, so readers still holding the previous one can finish,
# and so that a damaged live generation has one to fall back on.
KEEP_PREVIOUS = 1
# Verifications of a state that changed meanwhile (an update committing) are made again.
VERIFY_ATTEMPTS = 3


def version_token(generation: str, toc_generation: int) -> str:
    """The version of one state: changes with every build (new generation) and every update
    (new Whoosh TOC); a digest, so that the generation's name (and the builder's PID in it)
    stays on the server."""
    digest = hashlib.blake2b(generation.encode("utf-8"), digest_size=8).hexdigest()
    return f"{digest}-{toc_generation}"


@dataclass(frozen=True)
class Served:
    """The generation chosen to answer reads, opened, and why it is not the live one."""

    name: str
    index: Index
    toc_generation: int
    warning: str | None = None


class IndexDirectory:
    """An index location (default `index/`) holding generations of a Whoosh index."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        # Absolute, so that messages name the directory whatever the reader's working directory.
        self.root = Path(os.path.abspath(root))

    # -- reading ---------------------------------------------------------------------------
    def live_name(self) -> str | None:
        """Name of the live generation, or None when no index was ever built here."""
        try:
            name = (self.root / CURRENT).read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _unavailable(
                f"cannot read the index's {CURRENT} file: {integrity.reason(exc)}",
                f"cannot read {self.root / CURRENT}: {exc}",
            ) from exc
        return name or None

    def live_path(self) -> Path:
        name = self.live_name()
        if name is None:
            raise self._no_index()
        return self.root / name

    def exists(self) -> bool:
        return self.live_name() is not None

    def generations(self) -> list[str]:
        """Names of the generations on disk, newest first (names start with a UTC stamp)."""
        try:
            names = [p.name for p in self.root.glob(f"{GENERATION_PREFIX}*") if p.is_dir()]
        except OSError:
            return []
        return sorted(names, reverse=True)

    def open(self, name: str | None = None) -> Index:
        """Open a generation (default: the live one) for reading, unverified."""
        path = self.live_path() if name is None else self.root / name
        try:
            return whoosh_index.open_dir(str(path))
        except Exception as exc:  # whoosh raises several unrelated types for a broken index
            raise _unavailable(
                f"cannot open the index: {_words(exc, path)}",
                f"cannot open index at {path}: {exc}",
            ) from exc

    def metadata(self, name: str | None = None) -> dict[str, Any]:
        """Build metadata of a generation (default: live): built_at, sources, counts..."""
        path = self.live_path() if name is None else self.root / name
        try:
            saved = json.loads((path / METADATA).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return saved if isinstance(saved, dict) else {}

    def built_at(self, name: str | None = None) -> datetime | None:
        stamp = self.metadata(name).get("built_at")
        try:
            return datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
        except ValueError:
            return None

    def size_bytes(self, name: str | None = None) -> int:
        path = self.live_path() if name is None else self.root / name
        return sum(f.stat().st_size for f in path.iterdir() if f.is_file())

    def records(self, name: str | None = None) -> Iterator[Record]:
        """Every record of a generation (default: live), in index order (`searchsvc export`)."""
        with self.open(name).searcher() as searcher:
            # all_stored_fields skips documents deleted by an update and not yet merged away.
            for stored in searcher.all_stored_fields():
                yield from_stored(stored)

    # -- verifying ---------------------------------------------------------------------------
    def state_key(self) -> tuple[Any, ...]:
        """A cheap fingerprint of what `choose` depends on (the live name, each generation's
        newest state and its files' sizes and times); IndexUnavailable when there is no index."""
        live = self.live_name()
        if live is None:
            raise self._no_index()
        return (
            live,
            *((name, integrity.state_key(self.root / name)) for name in self.generations()),
        )

    def verify(self, name: str, remembered: bool = True) -> tuple[Verdict, Index | None]:
        """Verify a generation's newest state and open it; the Index only when it passes."""
        path = self.root / name
        for _ in range(VERIFY_ATTEMPTS):
            before = integrity.state_key(path)
            try:
                verdict = integrity.verify(path, remembered)
            except Exception as exc:  # whatever a damaged directory makes of the checks
                damage = Damage("", "unreadable", f"cannot be verified: {_words(exc, path)}")
                verdict = Verdict(None, (damage,))
            if verdict.ok or integrity.state_key(path) == before:
                break  # else it changed under the verification (an update committing): again
        if not verdict.ok:
            return verdict, None
        try:
            index = whoosh_index.open_dir(str(path))
            # A reader opens every segment (its compound file's directory, its term index).
            with index.reader() as reader:
                reader.doc_count()
        except Exception as exc:  # whoosh raises many unrelated types for broken files
            damage = Damage("", "unreadable", f"Whoosh cannot read it: {_words(exc, path)}")
            return replace(verdict, damage=(damage,)), None
        return verdict, index

    def choose(self) -> Served:
        """The generation to serve: the live one when it verifies, else the newest earlier one
        that does, with a warning; IndexUnavailable (saying why, without paths) when none."""
        live = self.live_name()
        if live is None:
            raise self._no_index()
        verdict, index = self.verify(live)
        if index is not None and verdict.toc_generation is not None:
            return Served(live, index, verdict.toc_generation)
        what = _summary(verdict.damage)
        for name in self.generations():
            if name >= live:
                continue  # only generations older than the live one are fallbacks
            earlier, index = self.verify(name)
            if index is not None and earlier.toc_generation is not None:
                built = self.built_at(name)
                when = f", built {built:%Y-%m-%d %H:%M} UTC" if built else ""
                warning = (
                    f"the live index is damaged ({what}): reads are answered from the previous "
                    f"one{when}; rebuild the index (`searchsvc check` says what is wrong)"
                )
                return Served(name, index, earlier.toc_generation, warning)
        message = (
            f"the index is damaged ({what}) and no earlier good one is left: rebuild it "
            "(`searchsvc check` says what is wrong)"
        )
        error = _unavailable(message, f"the index at {self.root / live} is damaged ({what})")
        error.details["damage"] = [str(item) for item in verdict.damage]
        raise error

    def check(self) -> tuple[CheckedPart, ...]:
        """Every generation verified from its files (read again, nothing remembered), live
        first: what `searchsvc check` prints."""
        live = self.live_name()
        if live is None:
            raise self._no_index()
        names = [live, *(name for name in self.generations() if name != live)]
        parts = []
        for name in names:
            verdict, index = self.verify(name, remembered=False)
            role = "live" if name == live else "previous"
            parts.append(CheckedPart(name, role, verdict.damage, _notes(verdict, index)))
        return tuple(parts)

    def _no_index(self) -> IndexUnavailable:
        hint = "build one with `searchsvc index SOURCE...`"
        return _unavailable(f"no index yet: {hint}", f"no index at {self.root}: {hint}")

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock; BuildInProgress when another process has it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                error = BuildInProgress("another build or update is running on this index")
                error.local_message = f"another build or update is running on {self.root}"
                raise error from exc
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def build(self, metadata: dict[str, Any] | None = None) -> Iterator[Index]:
        """Create a new generation; on normal exit it becomes live, on any error it vanishes.

        The caller fills the yielded (empty) index and commits its writers; `metadata` is a
        dict the caller may keep filling while building, saved beside the index at the swap.
        """
        metadata = {} if metadata is None else metadata
        first = not self.root.exists()
        with self.lock():
            self._remove_orphan_builds()
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            build_dir = self.root / f"{BUILD_PREFIX}{stamp}-{os.getpid()}"
            generation = build_dir.with_name(f"{GENERATION_PREFIX}{stamp}-{os.getpid()}")
            build_dir.mkdir()
            try:
                index = whoosh_index.create_in(str(build_dir), build_schema())
                yield index
                save_state_files(index, build_dir)
                # The fast writer saved every segment's; one written by Whoosh's gets them here.
                write_missing_posting_arrays(index)
                write_vector_graphs(index, metadata)
                metadata.setdefault("built_at", datetime.now(UTC).isoformat())
                metadata["schema_version"] = SCHEMA_VERSION
                write_atomically(build_dir / METADATA, json.dumps(metadata, indent=2))
                seal(build_dir, index.latest_generation())
                # Verified as readers will verify it: a generation that fails is never live.
                verdict, _ = self.verify(build_dir.name)
                if not verdict.ok:
                    raise _unavailable(
                        f"the new index failed verification ({_summary(verdict.damage)}); "
                        "the live index is left as it was",
                        f"the new index at {build_dir} failed verification "
                        f"({_summary(verdict.damage)}); the live index is left as it was",
                    )
                os.rename(build_dir, generation)
                # The generation's name before CURRENT's: a power cut must not leave CURRENT
                # naming a directory whose rename was lost (durability.py).
                durability.sync_directory(self.root)
                write_atomically(self.root / CURRENT, generation.name + "\n")
                if first:
                    durability.sync_parent(self.root)  # the index directory's own name
            except BaseException:
                shutil.rmtree(build_dir, ignore_errors=True)
                if self.live_name() != generation.name:  # renamed, but never made live
                    shutil.rmtree(generation, ignore_errors=True)
                raise
            self._remove_old_generations()

    @contextlib.contextmanager
    def update(self, metadata: dict[str, Any] | None = None) -> Iterator[Index]:
        """The live index, locked for an in-place update (Whoosh commits are atomic).

        `metadata`, which the caller may fill while updating, is merged into the saved metadata.
        """
        metadata = {} if metadata is None else metadata
        with self.lock():
            live = self.live_path()
            # Never written onto: an update would carry the damage forward in a manifest that
            # vouches for it. (Checksums this process verified before are not read again.)
            verdict, index = self.verify(live.name)
            if index is None:
                what = _summary(verdict.damage)
                raise _unavailable(
                    f"the live index is damaged ({what}): rebuild it before updating it",
                    f"the index at {live} is damaged ({what}): rebuild it before updating it",
                )
            previous = saved_facet_table(index, live)
            yield index
            # Files of the state are rewritten below: a manifest still naming this state (no
            # commit happened) would no longer match them. Without one, readers take the state
            # as pending until seal writes the new one.
            integrity.remove_manifest(live, index.latest_generation())
            # The update committed a new Whoosh generation in place: save its arrays before a
            # new process opens it (one that opens it earlier computes them, as before).
            save_state_files(index, self.live_path(), previous)
            # Segments Whoosh's writer added or merged have no posting arrays yet; those of
            # merged-away segments went with them (Whoosh deletes files named after a segment).
            remove_leftover_files(self.live_path())
            write_missing_posting_arrays(index)
            write_vector_graphs(index, self.metadata())
            meta_path = self.live_path() / METADATA
            saved = self.metadata()
            saved.update(metadata)
            saved["updated_at"] = datetime.now(UTC).isoformat()
            write_atomically(meta_path, json.dumps(saved, indent=2))
            # Last: the manifest makes the new state verifiable (only new files are read).
            seal(live, index.latest_generation())

    def _remove_orphan_builds(self) -> None:
        # Called with the lock held: any build dir left is from a killed or crashed build.
        for path in self.root.glob(f"{BUILD_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)

    def _remove_old_generations(self) -> None:
        live = self.live_name()
        # Names start with a UTC stamp, so they sort by age; mtimes change on in-place updates.
        # The newest good ones are kept to fall back on: a damaged one is no use for that.
        kept = 0
        for name in self.generations():
            if name == live:
                continue
            if kept < KEEP_PREVIOUS and self.verify(name)[0].ok:
                kept += 1
                continue
            shutil.rmtree(self.root / name, ignore_errors=True)


# The facet table of an index state, with the first document number of each of its segments.
def _summary(damage: tuple[Damage, ...]) -> str:
    shown = "; ".join(str(item) for item in damage[:3])
    return shown + (f"; {len(damage) - 3} more" if len(damage) > 3 else "")


def _notes(verdict: Verdict, index: Index | None) -> tuple[str, ...]:
    notes = []
    if verdict.status == "verified":
        notes.append(
            f"state {verdict.toc_generation}: {verdict.files} files ({verdict.bytes:,} bytes) "
            "checked against its manifest"
        )
    elif verdict.status == "pending":
        notes.append(
            f"state {verdict.toc_generation} has no manifest yet: an update is committing it, "
            "or was stopped before writing it (the next update or build writes one); its "
            "files could not be checked"
        )
    else:
        notes.append(
            "no manifest: built by an older searchsvc; its files could not be checked "
            "(a rebuild writes one)"
        )
    if index is not None:
        with index.reader() as reader:
            notes.append(f"Whoosh reads it: {reader.doc_count():,} records")
    return tuple(notes)


def _unavailable(message: str, local_message: str) -> IndexUnavailable:
    error = IndexUnavailable(message)
    error.local_message = local_message
    return error


def _words(exc: Exception, path: Path) -> str:
    """An exception in words fit for a client: its type and message, without paths (those of
    files in the generation become their names)."""
    text = str(exc)
    for folder, instead in ((path, "the index"), (path.parent, "the index directory")):
        text = text.replace(str(folder) + os.sep, "").replace(str(folder), instead)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
