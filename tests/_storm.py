"""ctypes binding to Debian's libstorm9 (StormLib 9.x), for cross-checks in tests and benchmarks.

Only the handful of calls the checks need: create an archive and add files from memory, open an
archive and read a file into memory. ``load()`` returns None when the library is not loadable.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_bool, c_char_p, c_uint32, c_uint64, c_void_p

MPQ_OPEN_READ_ONLY = 0x00000100
MPQ_OPEN_CHECK_SECTOR_CRC = 0x00100000
MPQ_CREATE_LISTFILE = 0x00100000
MPQ_CREATE_ATTRIBUTES = 0x00200000
MPQ_CREATE_ARCHIVE_V1 = 0x00000000
MPQ_CREATE_ARCHIVE_V2 = 0x01000000

MPQ_FILE_IMPLODE = 0x00000100
MPQ_FILE_COMPRESS = 0x00000200
MPQ_FILE_ENCRYPTED = 0x00010000
MPQ_FILE_FIX_KEY = 0x00020000
MPQ_FILE_SINGLE_UNIT = 0x01000000
MPQ_FILE_SECTOR_CRC = 0x04000000
MPQ_FILE_REPLACEEXISTING = 0x80000000

MPQ_COMPRESSION_HUFFMANN = 0x01
MPQ_COMPRESSION_ZLIB = 0x02
MPQ_COMPRESSION_PKWARE = 0x08
MPQ_COMPRESSION_BZIP2 = 0x10
MPQ_COMPRESSION_LZMA = 0x12


class StormError(RuntimeError):
    pass


class Storm:
    def __init__(self, lib):
        self.lib = lib
        L = lib
        L.SFileOpenArchive.argtypes = [c_char_p, c_uint32, c_uint32, POINTER(c_void_p)]
        L.SFileCreateArchive.argtypes = [c_char_p, c_uint32, c_uint32, POINTER(c_void_p)]
        L.SFileCloseArchive.argtypes = [c_void_p]
        L.SFileOpenFileEx.argtypes = [c_void_p, c_char_p, c_uint32, POINTER(c_void_p)]
        L.SFileGetFileSize.argtypes = [c_void_p, POINTER(c_uint32)]
        L.SFileGetFileSize.restype = c_uint32
        L.SFileReadFile.argtypes = [c_void_p, c_void_p, c_uint32, POINTER(c_uint32), c_void_p]
        L.SFileCloseFile.argtypes = [c_void_p]
        L.SFileCreateFile.argtypes = [c_void_p, c_char_p, c_uint64, c_uint32, c_uint32, c_uint32, POINTER(c_void_p)]
        L.SFileWriteFile.argtypes = [c_void_p, c_void_p, c_uint32, c_uint32]
        L.SFileFinishFile.argtypes = [c_void_p]
        L.SFileHasFile.argtypes = [c_void_p, c_char_p]
        L.SFileSetLocale.argtypes = [c_uint32]
        L.SFileSetLocale.restype = c_uint32
        L.GetLastError.restype = c_uint32
        for name in ("SFileOpenArchive", "SFileCreateArchive", "SFileCloseArchive", "SFileOpenFileEx",
                     "SFileReadFile", "SFileCloseFile", "SFileCreateFile", "SFileWriteFile",
                     "SFileFinishFile", "SFileHasFile"):
            getattr(L, name).restype = c_bool

    def _check(self, ok, what):
        if not ok:
            raise StormError(f"{what} failed (error {self.lib.GetLastError()})")

    # reading ----------------------------------------------------------------------------------
    def open(self, path, check_crc=True) -> c_void_p:
        h = c_void_p()
        flags = MPQ_OPEN_READ_ONLY | (MPQ_OPEN_CHECK_SECTOR_CRC if check_crc else 0)
        self._check(self.lib.SFileOpenArchive(str(path).encode(), 0, flags, byref(h)), f"SFileOpenArchive({path})")
        return h

    def close(self, h) -> None:
        self.lib.SFileCloseArchive(h)

    def has(self, h, name: str) -> bool:
        return bool(self.lib.SFileHasFile(h, name.encode()))

    def read(self, h, name: str, locale: int = 0) -> bytes:
        self.lib.SFileSetLocale(locale)
        hf = c_void_p()
        self._check(self.lib.SFileOpenFileEx(h, name.encode(), 0, byref(hf)), f"SFileOpenFileEx({name})")
        try:
            size = self.lib.SFileGetFileSize(hf, None)
            buf = ctypes.create_string_buffer(max(size, 1))
            got = c_uint32()
            ok = self.lib.SFileReadFile(hf, buf, size, byref(got), None)
            if not ok and got.value != size:
                self._check(False, f"SFileReadFile({name})")
            return buf.raw[:got.value]
        finally:
            self.lib.SFileCloseFile(hf)

    def read_archive(self, path, names, check_crc=True) -> dict[str, bytes]:
        h = self.open(path, check_crc)
        try:
            return {n: self.read(h, n) for n in names}
        finally:
            self.close(h)

    # writing ----------------------------------------------------------------------------------
    def create(self, path, files, *, v2=False, max_files=64, listfile=True) -> None:
        """``files``: (name, data, flags, compression[, locale]) tuples, added in order."""
        h = c_void_p()
        flags = (MPQ_CREATE_ARCHIVE_V2 if v2 else MPQ_CREATE_ARCHIVE_V1) | (MPQ_CREATE_LISTFILE if listfile else 0)
        self._check(self.lib.SFileCreateArchive(str(path).encode(), flags, max_files, byref(h)), "SFileCreateArchive")
        try:
            for item in files:
                name, data, fflags, comp = item[:4]
                locale = item[4] if len(item) > 4 else 0
                hf = c_void_p()
                self._check(self.lib.SFileCreateFile(h, name.encode(), 0, len(data), locale,
                                                     fflags | MPQ_FILE_REPLACEEXISTING, byref(hf)),
                            f"SFileCreateFile({name})")
                try:
                    if data:
                        self._check(self.lib.SFileWriteFile(hf, data, len(data), comp), f"SFileWriteFile({name})")
                finally:
                    self._check(self.lib.SFileFinishFile(hf), f"SFileFinishFile({name})")
        finally:
            self._check(self.lib.SFileCloseArchive(h), "SFileCloseArchive")


def load() -> Storm | None:
    try:
        return Storm(ctypes.CDLL("libstorm.so.9"))
    except OSError:
        return None


def required() -> Storm:
    """StormLib, or the test stops: skipped here, failed under CI=true (conftest.require_tool)."""
    from conftest import require_tool

    return require_tool("libstorm9", "the StormLib cross-checks load libstorm.so.9 (apt-get install libstorm9)",
                        found=load())
