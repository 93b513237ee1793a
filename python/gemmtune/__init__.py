"""gemmtune: a thin Python layer over the gemmtune service and libgemmtune.

- gemmtune.client: the coordinator's HTTP API (submit, follow, export).
- gemmtune.Database / GemmDesc: libgemmtune's lookups (ctypes).
- gemmtune.torch: record a model's GEMMs; route them to tuned kernels.

The C library is loaded at first use (gemmtune.library_path()); the client
needs neither it nor torch.
"""

__version__ = "0.1.0"

from .client import Client, HTTPError  # noqa: E402
from .desc import GemmDesc  # noqa: E402
from .db import Database, Lookup  # noqa: E402
from ._lib import LibraryNotFound  # noqa: E402


def library_path():
    """The libgemmtune file this package uses (loads it)."""
    from . import _lib

    return _lib.path()


__all__ = ["Client", "HTTPError", "GemmDesc", "Database", "Lookup", "LibraryNotFound", "library_path", "__version__"]
