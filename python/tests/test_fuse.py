"""gemmtune.torch.fuse_linears on CPU: which layers group, the fused model's outputs equal
the original's, no memory is added, torch.compile traces it without a graph break, and a
call pattern the probe did not see falls back to each layer's own GEMM."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import gemmtune.torch as gt


class Block(nn.Module):
    """An attention-like block (q, k, v over one input, then o) and an MLP (gate, up over
    one input, then down), as HF decoder layers call them."""

    def __init__(self, d=32, kv=8, ff=48, bias=False):
        super().__init__()
        self.q = nn.Linear(d, d, bias=bias)
        self.k = nn.Linear(d, kv, bias=bias)
        self.v = nn.Linear(d, kv, bias=bias)
        self.o = nn.Linear(d, d, bias=bias)
        self.gate = nn.Linear(d, ff, bias=bias)
        self.up = nn.Linear(d, ff, bias=bias)
        self.down = nn.Linear(ff, d, bias=bias)
        self.odd = nn.Linear(d, 4, bias=not bias)  # bias unlike its neighbours: not fused

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        a = q.view(*q.shape[:-1], 4, -1) * k.view(*k.shape[:-1], 4, -1).sum(-1, keepdim=True)
        h = x + self.o(a.flatten(-2) + v.repeat_interleave(4, -1))
        h = h + self.down(F.silu(self.gate(h)) * self.up(h))
        return h + self.odd(h).sum(-1, keepdim=True)


class Shapes(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.weights = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is F.linear:
            self.weights.append(tuple(args[1].shape))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("bias", [False, True])
def test_siblings_fuse_and_outputs_match(bias):
    torch.manual_seed(0)
    m = nn.Sequential(Block(bias=bias), Block(bias=bias)).eval()
    x = torch.randn(3, 5, 32)
    with torch.no_grad():
        ref = m(x)
    before = {n: p.clone() for n, p in m.named_parameters()}
    with pytest.warns(UserWarning, match="for inference: the weights of 10 fused layers"):
        groups = gt.fuse_linears(m, lambda: m(x))
    assert not m[0].q.weight.requires_grad
    assert groups == [["0.q", "0.k", "0.v"], ["0.gate", "0.up"], ["1.q", "1.k", "1.v"], ["1.gate", "1.up"]]
    # the parameters keep their names and values; a member's weight is a view of the fused one
    after = dict(m.named_parameters())
    assert after.keys() == before.keys()
    for n, p in after.items():
        assert torch.equal(p, before[n]), n
    q, k = m[0].q, m[0].k
    assert isinstance(q, gt.FusedLinear) and q.group is k.group
    assert q.weight.untyped_storage().data_ptr() == q.group.weight.untyped_storage().data_ptr()
    assert isinstance(m[0].odd, nn.Linear) and not isinstance(m[0].odd, gt.FusedLinear)
    with torch.no_grad(), Shapes() as s:
        out = m(x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # one GEMM per group: q/k/v as 48 rows, gate/up as 96, then o, down, odd (per block)
    assert s.weights == [(48, 32), (32, 32), (96, 32), (32, 48), (4, 32)] * 2
    assert q.group.x is None and q.group.outs is None  # the last member let go of the input


def test_compile_traces_the_group_without_a_graph_break():
    torch.manual_seed(0)
    m = Block().eval().requires_grad_(False)
    x = torch.randn(2, 7, 32)
    with torch.no_grad():
        ref = m(x)
    gt.fuse_linears(m, lambda: m(x))
    torch._dynamo.reset()
    cm = torch.compile(m, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(cm(x), ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(cm(x + 1), m.__class__.forward(m, x + 1), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()


def test_other_call_patterns_fall_back_per_layer():
    torch.manual_seed(0)
    m = Block().eval().requires_grad_(False)
    x = torch.randn(4, 32)
    gt.fuse_linears(m, lambda: m(x))
    a, b = torch.randn(4, 32), torch.randn(4, 32)
    with torch.no_grad():
        ref_k = F.linear(b, m.k.weight)
        ref_v = F.linear(a, m.v.weight)
        m.q(a)  # the group's GEMM for a
        # k on another input: its own GEMM, not a's slice
        torch.testing.assert_close(m.k(b), ref_k)
        torch.testing.assert_close(m.v(a), ref_v)  # still a's slice
        # a member alone, without the first one: its own GEMM
        torch.testing.assert_close(m.v(b), F.linear(b, m.v.weight))


def test_nothing_to_fuse():
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    x = torch.randn(2, 8)
    assert gt.fuse_linears(m, lambda: m(x)) == []
    assert all(type(l) is not gt.FusedLinear for l in m)
