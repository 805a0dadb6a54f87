"""One error hierarchy for the whole package.

Parsers raise :class:`FormatError` (a ``ValueError``) naming the file, the byte offset and what
was wrong; the command line turns any :class:`WowgrassError` into ``error: ...`` and exit status 2.
"""

from __future__ import annotations


class WowgrassError(Exception):
    """Base class of every error wowgrass raises on purpose."""


class FormatError(WowgrassError, ValueError):
    """Bytes that do not follow the format: carries ``path``, ``offset`` and ``reason``."""

    def __init__(self, reason: str, *, path: str | None = None, offset: int | None = None):
        self.reason = reason
        self.path = path
        self.offset = offset
        super().__init__(self._message())

    def _message(self) -> str:
        where = self.path or "<bytes>"
        if self.offset is not None:
            where += f" at 0x{self.offset:X}"
        return f"{where}: {self.reason}"

    def __reduce__(self):  # across processes (Exception's own would call __init__ with the message)
        return (_rebuilt_format_error, (type(self), self.reason, self.path, self.offset))

    def with_path(self, path: str) -> "FormatError":
        """Return a copy naming ``path`` where the raiser did not know the file name."""
        if self.path:
            return self
        err = type(self).__new__(type(self))
        FormatError.__init__(err, self.reason, path=path, offset=self.offset)
        return err


def _rebuilt_format_error(cls, reason, path, offset):
    err = cls.__new__(cls)
    FormatError.__init__(err, reason, path=path, offset=offset)
    return err


class TruncatedError(FormatError):
    """The data ends before a declared size or count says it should."""


class UnsupportedError(FormatError):
    """Valid data that wowgrass does not handle (a version, a codec, an encoding)."""


class ChecksumError(FormatError):
    """A stored checksum does not match the bytes."""


class GameFileNotFound(WowgrassError, FileNotFoundError):
    """A path that no archive or folder of the data source holds."""


class StaleBundleError(FormatError):
    """A bundle whose provenance or version no longer matches its inputs: rebake it."""


class UsageError(WowgrassError):
    """A request that cannot be carried out as given (missing table, bad option combination)."""


#: what the user is told for the errno values a full or protected output place gives
OUTPUT_REASONS = {28: "no space left on the device", 122: "disk quota exceeded", 30: "read-only file system",
                  13: "permission denied", 1: "operation not permitted", 27: "file too large"}


class OutputError(WowgrassError, OSError):
    """An output (file, folder, cache entry) that cannot be written: a full disk, a read-only
    file system, no permission. Carries ``errno`` and ``filename`` like the OSError behind it."""

    def __init__(self, path, errno: int | None, detail: str | None = None):
        import os

        reason = detail or OUTPUT_REASONS.get(errno) or (os.strerror(errno) if errno else "cannot be written")
        super().__init__(errno, reason, str(path))

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"

    def __reduce__(self):  # across a process pool (OSError's own would call __init__ with its args)
        return (type(self), (self.filename, self.errno, self.strerror))

    @classmethod
    def from_os(cls, path, exc: OSError) -> "OutputError":
        """``exc`` as an OutputError naming ``path`` (unchanged when it is one already)."""
        if isinstance(exc, OutputError):
            return exc
        # an OSError without an errno (raised by hand, a library's own) keeps its message as the reason
        return cls(path, exc.errno, OUTPUT_REASONS.get(exc.errno) or exc.strerror or str(exc) or None)
