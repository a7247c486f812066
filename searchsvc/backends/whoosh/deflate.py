"""`zlib.compress(data, level)` for many small inputs, through one reused zlib stream.

`zlib.compress` sets up a fresh deflate stream per call (~256 KiB of tables allocated and
cleared, then freed), which for the ~30-byte posting blocks of an index costs ten times the
compression itself. Here one stream is made once and `deflateReset` between inputs, calling the
same libz that Python's zlib module uses, so the output is byte for byte `zlib.compress`'s. If
that libz cannot be loaded, or its output differs on a self-check, `compress` is
`zlib.compress`.
"""

from __future__ import annotations

import ctypes
import zlib
from collections.abc import Callable
from ctypes import byref, c_char_p, c_int, c_uint, c_ulong, c_void_p, sizeof

_Z_FINISH, _Z_STREAM_END, _Z_OK = 4, 1, 0
_DEFLATED, _MAX_WBITS, _DEF_MEM_LEVEL, _Z_DEFAULT_STRATEGY = 8, 15, 8, 0


class _ZStream(ctypes.Structure):
    # zlib.h's z_stream.
    _fields_ = [
        ("next_in", c_void_p),
        ("avail_in", c_uint),
        ("total_in", c_ulong),
        ("next_out", c_void_p),
        ("avail_out", c_uint),
        ("total_out", c_ulong),
        ("msg", c_char_p),
        ("state", c_void_p),
        ("zalloc", c_void_p),
        ("zfree", c_void_p),
        ("opaque", c_void_p),
        ("data_type", c_int),
        ("adler", c_ulong),
        ("reserved", c_ulong),
    ]


class _ReusedStream:
    def __init__(self, libz, level: int) -> None:
        self._stream = _ZStream()
        self._ref = byref(self._stream)
        status = libz.deflateInit2_(
            self._ref,
            level,
            _DEFLATED,
            _MAX_WBITS,
            _DEF_MEM_LEVEL,
            _Z_DEFAULT_STRATEGY,
            libz.zlibVersion(),
            sizeof(_ZStream),
        )
        if status != _Z_OK:
            raise OSError(f"deflateInit2 failed: {status}")
        self._reset = libz.deflateReset
        self._deflate = libz.deflate
        self._resize(1 << 16)

    def _resize(self, size: int) -> None:
        self._buffer = ctypes.create_string_buffer(size)
        self._address = ctypes.addressof(self._buffer)
        self._size = size

    def compress(self, data: bytes) -> bytes:
        # zlib's compressBound, so one deflate call always finishes the stream.
        bound = len(data) + (len(data) >> 12) + (len(data) >> 14) + (len(data) >> 25) + 13
        if bound > self._size:
            self._resize(bound)
        stream = self._stream
        self._reset(self._ref)
        stream.next_in = ctypes.cast(data, c_void_p)
        stream.avail_in = len(data)
        stream.next_out = self._address
        stream.avail_out = self._size
        if self._deflate(self._ref, _Z_FINISH) != _Z_STREAM_END:
            raise OSError("deflate did not finish")
        return ctypes.string_at(self._address, stream.total_out)


def compressor(level: int) -> Callable[[bytes], bytes]:
    """A function equal to `zlib.compress(data, level)`, faster on small inputs when it can be."""
    try:
        libz = ctypes.CDLL("libz.so.1")
        libz.zlibVersion.restype = c_char_p
        if libz.zlibVersion().decode() != zlib.ZLIB_RUNTIME_VERSION:
            raise OSError("a different libz than the zlib module's")
        stream = _ReusedStream(libz, level)
        samples = (b"", b"x", b"\x80\x02" + bytes(range(256)) * 3, b"abc" * 5000)
        if any(stream.compress(s) != zlib.compress(s, level) for s in samples):
            raise OSError("output differs from zlib.compress")
    except (OSError, AttributeError):
        return lambda data: zlib.compress(data, level)
    return stream.compress
