"""The gemmtune:: custom operators (torch.library.custom_op).

gemmtune::linear, matmul, mm, bmm, addmm and baddbmm have the meaning of the
aten operator of the same name. Their fake (meta) implementation is that aten
operator on fake tensors, so torch.compile (Dynamo, AOTAutograd, Inductor)
traces them as one opaque op with the right output, without a graph break.
Their real implementation runs the aten operator with the active router (see
_router.py) watching the aten GEMMs it issues: a GEMM libgemmtune has a tuned
implementation for (this device model, full problem key) runs that; every
other GEMM, and everything without an active router, runs PyTorch's own path.
"""

from typing import Optional

import torch

from ._router import REFS, run

__all__ = ["linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "reference", "OPS"]


@torch.library.custom_op("gemmtune::linear", mutates_args=())
def linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    return run("linear", input, weight, bias)


@torch.library.custom_op("gemmtune::matmul", mutates_args=())
def matmul(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return run("matmul", input, other)


@torch.library.custom_op("gemmtune::mm", mutates_args=())
def mm(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    return run("mm", input, mat2)


@torch.library.custom_op("gemmtune::bmm", mutates_args=())
def bmm(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    return run("bmm", input, mat2)


@torch.library.custom_op("gemmtune::addmm", mutates_args=())
def addmm(input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, beta: float = 1.0, alpha: float = 1.0) -> torch.Tensor:
    return run("addmm", input, mat1, mat2, beta, alpha)


@torch.library.custom_op("gemmtune::baddbmm", mutates_args=())
def baddbmm(
    input: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, beta: float = 1.0, alpha: float = 1.0
) -> torch.Tensor:
    return run("baddbmm", input, batch1, batch2, beta, alpha)


# The fake implementations: the aten operator's own meta behaviour.
for _name, _op in (("linear", linear), ("matmul", matmul), ("mm", mm), ("bmm", bmm), ("addmm", addmm),
                   ("baddbmm", baddbmm)):
    _op.register_fake(REFS[_name])

OPS = tuple(REFS)


def reference(func):
    """The aten reference of a gemmtune:: op overload (or packet); None for
    any other operator."""
    name = getattr(func, "_schema", None)
    name = name.name if name is not None else getattr(func, "__name__", "")
    ns, _, op = name.partition("::")
    if ns != "gemmtune":
        return None
    return REFS.get(op)
