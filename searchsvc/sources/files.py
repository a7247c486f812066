"""Input files: opening them (plain or gzipped), numbered lines of bounded size, skip reports."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from isal import igzip, isal_zlib

from searchsvc.domain.errors import SourceError

GZIP_MAGIC = b"\x1f\x8b"
# No record or line of any supported format comes near this; anything larger is hostile or broken
# and is skipped without ever being held in memory as one string.
MAX_RECORD_BYTES = 1024 * 1024
RECORD_TOO_LARGE = f"record too large (over {MAX_RECORD_BYTES // 1024 // 1024} MiB)"
_DISCARD_CHUNK = 1024 * 1024
# Errors a damaged gzip stream raises while being read (BadGzipFile is an OSError).
# isal's error type is untyped to the type checker; it is an Exception subclass.
_ISAL_ERROR = cast("type[Exception]", isal_zlib.error)
_READ_ERRORS = (OSError, EOFError, zlib.error, _ISAL_ERROR)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A malformed record, reported and skipped; `line` is where it starts (1-based)."""

    path: str
    line: int
    reason: str


SkipHandler = Callable[[Skipped], None]

# One line of input: (1-based number, text, None), or (number, None, why the line is unusable).
NumberedLine = tuple[int, str | None, str | None]


def open_binary(path: Path) -> BinaryIO:
    """Open `path` for reading bytes, decompressing it when it starts with the gzip magic."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    try:
        is_gzip = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    if is_gzip:
        # ISA-L's gzip reader (python-isal): the same stream in much less time than gzip's.
        return igzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def read_head(path: Path, size: int) -> bytes:
    """Up to `size` leading bytes of the (decompressed) content of `path`."""
    with open_binary(path) as stream:
        try:
            return stream.read(size)
        except _READ_ERRORS as exc:
            raise SourceError(f"cannot read {path}: {exc}", path=str(path)) from exc


def numbered_lines(path: Path) -> Iterator[NumberedLine]:
    """Yield `(number, text, problem)` for each line; text is None when the line is unusable."""
    with open_binary(path) as stream:
        number = 0
        while True:
            try:
                raw = stream.readline(MAX_RECORD_BYTES + 1)
            except _READ_ERRORS as exc:
                raise SourceError(
                    f"cannot read {path} after line {number}: {exc}", path=str(path)
                ) from exc
            if not raw:
                return
            number += 1
            if len(raw) > MAX_RECORD_BYTES:
                _discard_rest_of_line(stream, raw, path, number)
                yield number, None, RECORD_TOO_LARGE
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, None, f"not valid UTF-8 text (byte {exc.start + 1} of the line)"
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield number, text.rstrip("\r\n"), None


def _discard_rest_of_line(stream: BinaryIO, head: bytes, path: Path, number: int) -> None:
    # Read the remainder in bounded chunks so a huge line costs time proportional to its size
    # but never more than one chunk of memory.
    chunk = head
    while chunk and not chunk.endswith(b"\n"):
        try:
            chunk = stream.readline(_DISCARD_CHUNK)
        except _READ_ERRORS as exc:
            message = f"cannot read {path} at line {number}: {exc}"
            raise SourceError(message, path=str(path)) from exc
