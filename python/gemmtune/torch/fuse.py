"""gemmtune.torch.fuse_linears: sibling nn.Linear layers that read the same input, run as one GEMM.

    groups = gemmtune.torch.fuse_linears(model, lambda: model(example))

HF models compute attention's q, k and v projections, and an MLP's gate and up
projections, as separate Linear layers over the same input. At decode sizes each is
a weight-streaming GEMM, and three short ones (k and v at 1024x4096 are the smallest
and hardest to feed) cost more than one of their combined width: one launch instead
of three, and a grid wide enough to keep every SM's loads in flight. Fused
inference stacks (vLLM's QKVParallelLinear, TensorRT-LLM) hold those weights
concatenated for that reason. This does the same to an existing model without
touching its code:

- `run` calls the model once. A forward pre-hook on every nn.Linear sees which
  layers are called one after another on the same input tensor (the same object:
  nothing is inferred from names or shapes); consecutive runs of two or more, with
  the same in_features, dtype and device, bias on all or none, each layer called
  once, form a group.
- Each group's weights (and biases) are concatenated once into one tensor, and
  every member's weight becomes a view of its rows in it: no memory is added,
  and the model's parameters keep their names, shapes and values.
- The members are replaced by FusedLinear modules. The group's first layer computes
  the whole group's F.linear (which gemmtune.torch.use() then routes like any other:
  tune the model's GEMMs after fusing, so the recorded shapes are the fused ones)
  and splits the result; each later member returns its slice when called on the
  same input object, and computes its own F.linear otherwise (called out of
  order, or on another input), so a different call pattern is slower, never wrong.

The slices are views of the fused output (strided in the last dimension); .view()
and elementwise ops take them as they are. Meant for inference: the weights are
read-only (a member's weight view, if written, changes the fused weight alike), and
an input changed in place between the group's calls is not detected (HF decoder
layers do not). Works in eager code, under CUDA graph capture and torch.compile
(Dynamo traces the group's state without a graph break). Fuse after moving the
model to its device and dtype.
"""

import warnings

import torch
import torch.nn.functional as F

__all__ = ["fuse_linears", "FusedLinear"]


class _Group:
    """The fused weight and bias of a group and the last fused call's input and slices.
    A plain object, not a module: the fused tensors are not parameters of their own
    (the members' weights are views of them), so state_dict and parameters() stay as
    they were."""

    def __init__(self, names, weight, bias, sizes):
        self.names = names
        self.weight = weight
        self.bias = bias
        self.sizes = sizes
        self.x = None
        self.outs = None

    def __repr__(self):
        return f"fused({', '.join(self.names)}: {sum(self.sizes)}x{self.weight.shape[1]})"


class FusedLinear(torch.nn.Module):
    """One member of a fused group (see the module doc)."""

    def __init__(self, group, index, linear):
        super().__init__()
        self.group = group
        self.index = index
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias

    def forward(self, x):
        g = self.group
        if self.index == 0:
            y = F.linear(x, g.weight, g.bias)
            g.x, g.outs = x, y.split(g.sizes, dim=-1)
            return g.outs[0]
        if g.outs is not None and g.x is x:
            out = g.outs[self.index]
            if self.index == len(g.sizes) - 1:
                g.x = g.outs = None  # the last member: nothing stays referenced
            return out
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, {self.group!r} [{self.index}]"


def _groups(calls):
    """Runs of consecutive calls on the same input object that can share one GEMM."""
    seen = {}
    for mod, _, _ in calls:
        seen[mod] = seen.get(mod, 0) + 1
    runs, cur = [], []
    for mod, name, x in calls:
        ok = (
            seen[mod] == 1
            and cur
            and cur[-1][2] is x
            and mod.in_features == cur[0][0].in_features
            and mod.weight.dtype == cur[0][0].weight.dtype
            and mod.weight.device == cur[0][0].weight.device
            and (mod.bias is None) == (cur[0][0].bias is None)
        )
        if ok:
            cur.append((mod, name, x))
            continue
        if len(cur) >= 2:
            runs.append(cur)
        cur = [(mod, name, x)] if seen[mod] == 1 else []
    if len(cur) >= 2:
        runs.append(cur)
    return runs


def _set(model, name, module):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def fuse_linears(model, run):
    """Fuses the sibling nn.Linear layers of model that run(), one forward pass, shows
    reading the same input (see the module doc). Returns the groups, each a list of the
    fused layers' names; [] when there was nothing to fuse."""
    names = {m: n for n, m in model.named_modules()}
    calls, hooks = [], []

    def hook(mod, args):
        if args and isinstance(args[0], torch.Tensor):
            calls.append((mod, names[mod], args[0]))

    try:
        for m in model.modules():
            if type(m) is torch.nn.Linear:  # not subclasses: their forward may differ
                hooks.append(m.register_forward_pre_hook(hook))
        with torch.no_grad():
            run()
    finally:
        for h in hooks:
            h.remove()
    out = []
    trained = []
    with torch.no_grad():
        for run_ in _groups(calls):
            mods = [m for m, _, _ in run_]
            trained += [n for m, n, _ in run_ if m.weight.requires_grad]
            weight = torch.cat([m.weight for m in mods])
            bias = torch.cat([m.bias for m in mods]) if mods[0].bias is not None else None
            sizes = [m.out_features for m in mods]
            group = _Group([n for _, n, _ in run_], weight, bias, sizes)
            off = 0
            for i, m in enumerate(mods):
                rows = slice(off, off + sizes[i])
                m.weight = torch.nn.Parameter(weight[rows], requires_grad=False)
                if bias is not None:
                    m.bias = torch.nn.Parameter(bias[rows], requires_grad=False)
                off += sizes[i]
                _set(model, group.names[i], FusedLinear(group, i, m))
            out.append(group.names)
    calls.clear()  # the probe's inputs
    if trained:
        # the fused GEMM reads a copy the members' gradients would never reach: frozen, said
        warnings.warn(f"gemmtune.torch.fuse_linears is for inference: the weights of {len(trained)} fused "
                      f"layers (e.g. {trained[0]}) required grad and are now frozen (requires_grad=False)",
                      stacklevel=2)
    return out
