"""Atomic file writes shared by the client (exports) and the recorder (logs):
a reader never sees half a file, and a failed write leaves none behind."""

import os
import tempfile


def write_atomic(path, data, prefix):
    """Writes data (bytes or str) to path under a temporary name in the same
    folder, renamed when complete. Returns path."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=d)
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
