"""What an index reports of itself to whoever keeps it: what a write did, and what checking its
parts found (the engines make them, the service and the CLI read them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What one write did, and the engine's version token once it is visible."""

    added: int = 0  # records whose id was not indexed before
    replaced: int = 0  # records that replaced one with the same id
    deleted: int = 0  # ids that were indexed and are gone
    version: str = ""
    writer: str = ""  # how the engine wrote it (e.g. "2 writer processes"), for reports


@dataclass(frozen=True, slots=True)
class Damage:
    """One thing wrong with a part of an index, as `check` finds it."""

    file: str  # the file (or part) concerned, relative to the part; "" for the part as a whole
    kind: str  # missing, truncated, size, checksum, version, unreadable, unavailable
    detail: str  # what is wrong, in words (never a filesystem path)

    def __str__(self) -> str:
        return f"{self.file}: {self.detail}" if self.file else self.detail


@dataclass(frozen=True, slots=True)
class CheckedPart:
    """A part of an index (a generation, a collection) and what checking it found."""

    name: str
    role: str  # "live": what the location names; "previous": kept to fall back on
    damage: tuple[Damage, ...] = ()
    notes: tuple[str, ...] = ()  # what was checked, and what could not be

    @property
    def ok(self) -> bool:
        return not self.damage
