"""gemmtune.torch: record a PyTorch model's GEMMs, run them tuned.

    import gemmtune.torch as gt
    with gt.record("gemms.log"):                 # 1. the GEMMs the model issues
        model(x)
    # 2. gemmtune submit gemms.log --backend cuda; gemmtune export RUN -o tuned.db
    with torch.no_grad(), gt.use("tuned.db"):    # 3. tuned GEMMs run tuned
        model(x)

Needs torch >= 2.4 (torch.library.custom_op).
"""

import torch as _torch

_v = tuple(int(x) for x in _torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
if _v < (2, 4):
    raise ImportError(f"gemmtune.torch needs torch >= 2.4 (torch.library.custom_op); this is {_torch.__version__}")

from . import ops  # noqa: E402  (registers the gemmtune:: operators)
from ._blas import BlasCall, describe  # noqa: E402
from .recorder import Recorder, record  # noqa: E402
from .fuse import FusedLinear, fuse_linears  # noqa: E402
from .routing import Routing, disable, enabled, native_status, reset_stats, stats, use  # noqa: E402

__all__ = [
    "record",
    "Recorder",
    "fuse_linears",
    "FusedLinear",
    "use",
    "disable",
    "enabled",
    "stats",
    "reset_stats",
    "native_status",
    "Routing",
    "describe",
    "BlasCall",
    "ops",
]
