"""Standard output while a command runs: the one place a failed write to it is read (closed, full, a bad
encoding: one line, exit 2; a reader gone: a quiet exit 141)."""

import errno
import os
import sys

from ..errors import RooflabError

#: Exit status when the reader of standard output went away (`rooflab list models | head -n 1`): 128 + SIGPIPE, the
#: status `cat` or `seq` end with in the same pipeline, so `set -o pipefail` scripts see rooflab as they see them.
EXIT_BROKEN_PIPE = 141


class StdoutError(RooflabError):
    """Standard output cannot take the result: closed, full, an I/O error, or an encoding that cannot show it."""


class BrokenPipe(BaseException):
    """The reader of standard output has gone: end quietly (a BaseException, so no `except Exception` hides it)."""


class GuardedStdout:
    """sys.stdout while a command runs: the one place a failed write to standard output is read.

    A broken pipe becomes BrokenPipe (a quiet exit); any other OSError (a full device, an I/O error) and a
    character the stream's encoding cannot hold (PYTHONIOENCODING=latin-1:strict) become a StdoutError, a one-line
    error with exit 2. After the first failure the real descriptor is pointed at /dev/null, so Python's flush at exit
    does not fail a second time ("Exception ignored ... BrokenPipeError"). It has no `buffer`, so click writes through
    it instead of re-wrapping the bytes underneath.
    """

    def __init__(self, stream) -> None:
        self._stream = stream
        self._failed = False

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self):
        return getattr(self._stream, "errors", None) or "strict"

    def __getattr__(self, name: str):
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        if not isinstance(text, str):       # click probes a stream with b"" to learn whether it takes bytes
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._failed or not text:        # nothing to write (/dev/full fails even an empty write)
            return len(text)
        return self._guard(lambda: self._stream.write(text))

    def flush(self) -> None:
        if not self._failed:
            self._guard(self._stream.flush)

    def _guard(self, call):
        try:
            return call()
        except UnicodeEncodeError as exc:
            raise StdoutError(f"standard output's encoding ({self.encoding}) cannot show "
                              f"{exc.object[exc.start:exc.end]!r}; set PYTHONIOENCODING=utf-8") from None
        except OSError as exc:
            self._failed = True
            self._silence()
            if exc.errno == errno.EPIPE or isinstance(exc, BrokenPipeError):
                raise BrokenPipe() from None
            raise StdoutError(f"cannot write standard output: {exc.strerror or exc}") from None

    def _silence(self) -> None:
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (AttributeError, OSError, ValueError):    # not a real descriptor (a test's stream)
            return
        os.dup2(null, fd)
        os.close(null)


def stdout_closed() -> bool:
    """Standard output is closed (`>&-`): Python then starts with sys.stdout None, and click would print nothing."""
    if sys.stdout is None:
        return True
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):     # a stream with no descriptor (a test's): open
        return False
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False
