#!/usr/bin/env python3
"""e2e_llama.py: gemmtune inside a real PyTorch model, end to end, as a user would run it.

Builds HF transformers' LlamaForCausalLM with Llama-3-8B's dimensions (random weights,
bf16, 32 layers), then in one script:

  record   the GEMMs the model issues at the batch sizes it will run (gemmtune.torch.record:
           one decode step per batch size, one prefill)
  tune     them through the real coordinator and worker (gemmtuned + gemmtune-worker from
           --build, started here on loopback; gemmtune.Client submits, waits, exports)
  time     decode (static KV cache, prompt --prompt, one step captured in a CUDA graph and
           replayed, --steps steps, CUDA events) at each --batches size, and prefill of
           --prefill tokens at batch 1, for each configuration:
             default       PyTorch's own kernels (eager; decode captured)
             gemmtune      gemmtune.torch.use(): its ops in eager code, then captured
             compile       torch.compile(--gt-compile-mode) without gemmtune, captured: what
                           gemmtune_compile owes to Inductor alone
             autotune_nocg torch.compile(mode="max-autotune-no-cudagraphs"), captured like
                           the others
             autotune      torch.compile(mode="max-autotune"), Inductor's own CUDA graphs
             gemmtune_compile  gemmtune.torch.use() under torch.compile(--gt-compile-mode):
                           Inductor fuses the rest, gemmtune's op runs the tuned GEMMs
             gemmtune_autotune gemmtune.torch.use() under max-autotune-no-cudagraphs,
                           captured: Inductor also autotunes the GEMMs gemmtune has no gain
                           for (and its fused kernels' launch configs)
  --fuse   (before all of it) gemmtune.torch.fuse_linears: q/k/v and gate/up as one GEMM each,
           in every configuration alike, so the torch.compile peers get the fused model too
  check    logits against the default run (norm-wise and max relative error) and greedy
           token agreement over the decode steps (a divergence is checked for a logit tie).

Each phase appends to STATE/e2e.json (default STATE: $OUT/e2e or ./e2e_out), so phases can
run in separate processes (--phases); the default's logits and tokens are kept in STATE so
later processes check against them. `--report` prints the tables from STATE/e2e.json.

Timing: ms per decode step is the CUDA-event time of --steps replays (each followed by the
greedy argmax and the feed of the next token, in every configuration alike) divided by the
steps; the median of --reps repetitions (each after a fresh prefill). Compile time is the
wall clock of the first calls (Dynamo, Inductor, autotuning, Inductor's CUDA graph
recording), measured with a fresh Inductor cache directory per process (--cold-cache, the
default), so it is what a new process without a warm cache pays.

Isolation: every measurement (a configuration at one batch size, or its prefill) runs in a
fresh process of this script, and record, tune and check in one before them; this process
only starts them in order and prints the report. A configuration timed after others in the
same process inherits their state: on the H100 at batch 8 the attention's K/V expansion (the
same Triton kernel in every compiled configuration) took 16.7 us a layer in gemmtune_compile
timed in a process of its own, 19.7 after `compile` in the same process and 24 after
max-autotune's (bench/results/h100_37_e2e_order.txt), which put 0.4 ms a step on whichever
configuration came later. --in-process runs everything in this one process, in the fixed
order of CONFIGS.

--tiny runs the same code on a 2-layer model with small dimensions (CPU or GPU), with the
cpu backend when on CPU: the whole script is then checked without a GPU (the CUDA-graph
and CUDA-event parts are skipped on CPU).

Usage (after `cmake -S . -B build && cmake --build build` with CUDA and
`GEMMTUNE_BUILD_DIR=build python3 -m pip install --no-build-isolation ./python`):
  python3 bench/e2e_llama.py --build build [--batches 1,8,32] [--phases all]
  python3 bench/e2e_llama.py --report --state DIR
"""

import argparse
import contextlib
import gc
import inspect
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from gt_service import Service

CONFIGS = ("default", "gemmtune", "compile", "autotune_nocg", "autotune", "gemmtune_compile",
           "gemmtune_autotune")
PHASES = ("record", "tune", "check") + CONFIGS


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- state ---


class State:
    """STATE/e2e.json: what every phase measured, merged across processes."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "e2e.json")
        self.data = {}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)

    def put(self, *keys, value):
        d = self.data
        for k in keys[:-1]:
            d = d.setdefault(k, {})
        d[keys[-1]] = value
        self._write()

    def drop(self, *keys):
        """Removes the value at keys, if there is one."""
        d = self.get(*keys[:-1])
        if isinstance(d, dict) and keys[-1] in d:
            del d[keys[-1]]  # d is part of self.data
            self._write()

    def _write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def get(self, *keys, default=None):
        d = self.data
        for k in keys:
            if not isinstance(d, dict) or k not in d:
                return default
            d = d[k]
        return d

    def file(self, name):
        return os.path.join(self.folder, name)


# ---------------------------------------------------------------- model ---


def build_model(torch, a):
    from transformers import LlamaConfig, LlamaForCausalLM

    if a.tiny:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=704, num_attention_heads=8,
                          num_key_value_heads=2, num_hidden_layers=2, vocab_size=1024,
                          max_position_embeddings=8192, rope_theta=500000.0, tie_word_embeddings=False)
    else:
        # Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json), a.layers decoder layers
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                          num_key_value_heads=8, num_hidden_layers=a.layers, vocab_size=128256,
                          max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-5,
                          tie_word_embeddings=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(a.dtype)
    try:
        with torch.device(a.device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class Calls:
    """The keyword names this transformers version's forward takes (5.17: past_key_values and
    cache_position; later 5.x: cache and position_ids only)."""

    def __init__(self, model):
        from transformers.models.llama import modeling_llama

        params = inspect.signature(modeling_llama.LlamaModel.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.cache_pos = "cache_position" in params

    def kwargs(self, cache, pos):
        kw = {self.cache_kw: cache, "position_ids": pos[None, :], "use_cache": True}
        if self.cache_pos:
            kw["cache_position"] = pos
        return kw


def make_cache(model, batch, max_len, device, dtype):
    from transformers import StaticCache

    try:
        return StaticCache(config=model.config, max_cache_len=max_len)
    except TypeError:
        return StaticCache(config=model.config, max_batch_size=batch, max_cache_len=max_len,
                           device=device, dtype=dtype)


# ---------------------------------------------------------------- timing ---


class Timer:
    """CUDA events on a GPU, perf_counter on CPU: ms of what runs between start and stop."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.startswith("cuda")

    def __enter__(self):
        if self.cuda:
            self.e0 = self.torch.cuda.Event(enable_timing=True)
            self.e1 = self.torch.cuda.Event(enable_timing=True)
            self.e0.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.e1.record()
            self.e1.synchronize()
            self.ms = self.e0.elapsed_time(self.e1)
        else:
            self.ms = (time.perf_counter() - self.t0) * 1e3


def sync(torch, device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def compare(torch, out, ref):
    """(norm-wise relative error, max relative error) of out against ref, in float64."""
    o, r = out.double(), ref.double()
    norm = (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r)).item()
    mx = ((o - r).abs().max() / r.abs().max()).item()
    if not (math.isfinite(norm) and math.isfinite(mx)):
        return float("inf"), float("inf")
    return norm, mx


def agreement(torch, toks, ref_toks, ref_logits, logits):
    """Greedy-token agreement with the default run, and the first divergence: the step, the
    row, and whether it is a logit tie: at that step the default's logit of the token this
    run chose is within the step's numerical difference between the two runs (max |logits -
    default's|) of the default's top logit, so either choice is within the noise."""
    same = (toks == ref_toks)
    frac = same.float().mean().item()
    first = None
    bad = (~same).nonzero()
    if len(bad):
        step = int(bad[:, 1].min().item())
        row = int(bad[bad[:, 1] == step][0, 0].item())
        tie = None
        if ref_logits is not None and logits is not None and step < min(ref_logits.shape[0], logits.shape[0]):
            r, o = ref_logits[step, row].float(), logits[step, row].float()
            gap = (r[ref_toks[row, step]] - r[toks[row, step]]).item()
            noise = (o - r).abs().max().item()
            tie = {"gap": gap, "noise": noise, "tie": gap <= noise}
        first = {"row": row, "step": step, "tie": None if tie is None else tie["tie"], "detail": tie}
    return frac, first


def check_phase(torch, a, state):
    """Each tuned bf16 GEMM of the log as the model calls it (F.linear of x [n, k] and W [m, k]),
    against a float64 reference: PyTorch's own result and the routed one, side by side. On a
    GPU also their times (torch_timing): the tuner's baseline is cuBLASLt's default, and what
    a routed call must beat in the model is PyTorch's own call."""
    import torch.nn.functional as F

    rows = []
    best = state.get("tune", "best") or []
    shapes = []  # (m, n, k, the tuner's uplift over cuBLASLt's default)
    for b in best:
        parts = (b.get("label") or "").split()
        if len(parts) >= 3 and parts[0] == ("bf16" if a.dtype == torch.bfloat16 else "f32") and parts[1] == "TN":
            shapes.append((*(int(x) for x in parts[2].split("x")), b.get("uplift")))
    if not shapes:
        log("check: no bf16 TN GEMMs in the tune results (run tune first, or carry STATE/e2e.json)")
        return
    g = torch.Generator(device="cpu").manual_seed(7)
    for m, n, k, claimed in shapes:
        w = (torch.randn(m, k, generator=g) * 0.02).to(a.device, a.dtype)
        x = torch.randn(n, k, generator=g).to(a.device, a.dtype)
        ref = x.double() @ w.double().t()
        with torch.no_grad():
            dflt = F.linear(x, w)
            with routing(a, "gemmtune", state) as r:
                tuned = F.linear(x, w)
                st = r.stats()
        e_d, e_t = compare(torch, dflt, ref)[0], compare(torch, tuned, ref)[0]
        e_dt = compare(torch, tuned, dflt)[0]
        row = {"m": m, "n": n, "k": k, "default_err": e_d, "tuned_err": e_t, "tuned_vs_default": e_dt,
               "routed": st.get("tuned_run", 0) > 0}
        if a.device.startswith("cuda") and row["routed"]:
            row.update(torch_timing(torch, a, state, w, x))
            row["claimed_uplift"] = claimed
        rows.append(row)
        log(f"check {m}x{n}x{k}: default {e_d:.2e}, tuned {e_t:.2e} (vs default {e_dt:.2e}), "
            f"routed {row['routed']}"
            + (f"; PyTorch {row['torch_us']:.2f} us, routed {row['routed_us']:.2f} us: "
               f"{row['torch_us'] / row['routed_us']:.3f}x (tuned against cuBLASLt's default: "
               f"{_fmt(row['claimed_uplift'], '.3f')}x)" if "torch_us" in row else ""))
    state.put("check", value=rows)


def torch_timing(torch, a, state, w, x, rounds=7):
    """PyTorch's F.linear against the routed one on copies of w and x (enough copies that the
    weights of one pass exceed 100 MB, twice an H100's L2), in interleaved rounds of CUDA-event
    timed blocks (about 2 ms each): the median us per call of each."""
    import torch.nn.functional as F

    sets = max(1, min(8, -(-100 * 2**20 // (w.numel() * w.element_size()))))
    ws = [w.clone() for _ in range(sets)]
    xs = [x.clone() for _ in range(sets)]

    def block(reps):
        with Timer(torch, a.device) as t:
            for i in range(reps):
                F.linear(xs[i % sets], ws[i % sets])
        return t.ms * 1e3 / reps

    with torch.no_grad():
        block(3)
        reps = max(5, min(400, int(2000 / max(block(5), 1.0))))
        d, r = [], []
        for _ in range(rounds):
            d.append(block(reps))
            with routing(a, "gemmtune", state):
                block(1)  # a fresh use() plans and loads its kernel at its first call: not timed
                r.append(block(reps))
    return {"torch_us": statistics.median(d), "routed_us": statistics.median(r), "timing_rounds": rounds,
            "timing_reps": reps, "timing_sets": sets}


# ---------------------------------------------------------------- decode ---


class Decode:
    """One batch size's decode: static cache, input buffers, prefill, step functions."""

    KEEP = 8  # decode steps whose logits are kept for the accuracy check

    def __init__(self, torch, model, calls, a, batch):
        self.torch, self.model, self.calls, self.a, self.batch = torch, model, calls, a, batch
        self.P = a.prompt
        self.cache = make_cache(model, batch, a.prompt + a.steps + 8, a.device, a.dtype)
        g = torch.Generator(device="cpu").manual_seed(1234 + batch)
        self.prompt = torch.randint(0, model.config.vocab_size, (batch, self.P), generator=g).to(a.device)
        self.ppos = torch.arange(self.P, device=a.device)
        self.tok = torch.zeros(batch, 1, dtype=torch.long, device=a.device)
        self.pos = torch.full((1,), self.P, dtype=torch.long, device=a.device)

    def prefill(self):
        """Resets the cache in place (captured graphs keep its addresses) and fills the prompt."""
        torch = self.torch
        with torch.no_grad():
            self.cache.reset() if hasattr(self.cache, "reset") else None
            out = self.model(self.prompt, logits_to_keep=1, **self.calls.kwargs(self.cache, self.ppos))
        nxt = out.logits[:, -1].argmax(-1)
        self.tok.copy_(nxt[:, None])
        self.pos.fill_(self.P)
        return nxt

    def fn(self, tok, pos):
        return self.model(tok, **self.calls.kwargs(self.cache, pos)).logits[:, -1, :]

    def loop(self, step, steps, keep=False):
        """Runs steps decode steps from a fresh prefill; (tokens [B, steps], kept logits)."""
        torch = self.torch
        nxt = self.prefill()
        toks, kept = [], []
        for i in range(steps):
            out = step()
            if keep and i < self.KEEP:
                kept.append(out.detach().clone())
            nxt = out.argmax(-1)
            toks.append(nxt)
            self.tok.copy_(nxt[:, None])
            self.pos.add_(1)
        return torch.stack(toks, 1), (torch.stack(kept) if kept else None)

    def timed(self, step, steps, reps):
        """Median ms per step over reps runs of steps steps (each after its own prefill)."""
        torch = self.torch
        ms = []
        for _ in range(reps):
            self.prefill()
            sync(torch, self.a.device)
            with Timer(torch, self.a.device) as t:
                for _ in range(steps):
                    out = step()
                    self.tok.copy_(out.argmax(-1)[:, None])
                    self.pos.add_(1)
            ms.append(t.ms / steps)
        return statistics.median(ms), ms


def capture(torch, fn, *args):
    """fn(*args) captured once in a CUDA graph (after the caller's warm-up); the replay step."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(*args)  # one more warm-up on the capture stream (workspaces, lazy state)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=s):
        out = fn(*args)
    torch.cuda.synchronize()

    def step():
        g.replay()
        return out

    step.graph = g
    return step


# kernel names that are GEMMs: cuBLAS/cuBLASLt (nvjet, gemm, cutlass, xmma), gemmtune's
# generated kernels (gt_gemv, gt_mma, gt_wgmma...), Inductor's Triton mm templates (triton_tem)
# and its GEMV-as-reduction kernels are not told apart from other reductions: they count as "other"
_GEMM_NAMES = ("nvjet", "gemm", "gemv", "cutlass", "xmma", "gt_mma", "gt_wgmma", "triton_tem", "splitk",
               "splitKreduce")


def _is_gemm(kernel_name):
    return any(g.lower() in kernel_name.lower() for g in _GEMM_NAMES)


def _config_dict(cfg):
    """A triton.Config as {block sizes, num_warps, num_stages, found_by_coordesc}."""
    out = {k: v for k, v in (getattr(cfg, "kwargs", None) or {}).items() if k.isupper()}
    for k in ("num_warps", "num_stages", "found_by_coordesc"):
        if hasattr(cfg, k):
            out[k] = getattr(cfg, k)
    return out


def loaded_kernel_configs(objects=None):
    """The launch configs of the Triton kernels Inductor compiled and autotuned in this
    process, read off its kernel objects (CachingAutotuner: one launcher left after
    autotuning, its .config): {kernel name: config}. Not from the .best_config files of
    TORCHINDUCTOR_CACHE_DIR: torch 2.11 and later name them by a hash of the key, so they
    do not say which kernel a config belongs to. Between two runs of one configuration whose
    times differ, a kernel whose config changed is where to look. objects: what to search
    (default: every object the garbage collector tracks)."""
    import gc

    out = {}
    for o in gc.get_objects() if objects is None else objects:
        # by class name, never getattr on arbitrary objects (ctypes' loaders open a library
        # for any attribute asked of them)
        if not any(c.__name__ == "CachingAutotuner" for c in type(o).__mro__):
            continue
        launchers = getattr(o, "launchers", None)
        if not isinstance(launchers, list) or len(launchers) != 1 or not hasattr(o, "fn"):
            continue
        name = (getattr(o, "inductor_meta", None) or {}).get("kernel_name") or getattr(o.fn, "__name__", None)
        cfg = getattr(launchers[0], "config", None)
        if isinstance(name, str) and name.startswith("triton_") and cfg is not None:
            out[name] = _config_dict(cfg)
    return out


def _profile_lines(p, cfg, pr, ic, unit, what):
    """The report's lines for one profile_calls result: per `unit` (a decode step, a prefill)."""
    p(f"kernels of {cfg} (per {unit}, {pr['steps']} {what} profiled): {pr['kernel_us']:.0f} us in "
      f"{pr['kernels']:.0f} kernels, GEMM-named {pr['gemm_us']:.0f} us, other "
      f"{pr['kernel_us'] - pr['gemm_us']:.0f} us; top: "
      + "; ".join(f"{t['name'][:60]} {t['us']:.0f} us x{t['calls']:g}"
                  + (f" [{_cfg_text(ic[t['name']])}]" if t["name"] in ic else "")
                  for t in pr["top"][:8]))
    tl = pr.get("timeline")
    if tl and "error" in tl:
        p(f"  kernel timeline not read: {tl['error']}")
    elif tl:
        p(f"  between kernels per {unit}: {tl['gap_us_gemm_side']:.0f} us next to a GEMM, "
          f"{tl['gap_us_other']:.0f} us elsewhere, {tl['overlapping_boundaries']:g} boundaries "
          "overlapped; one layer in order (us, gap before): "
          + "; ".join(f"{k['name'][:40]} {k['us']:.1f} ({k['gap_us']:+.1f})" for k in tl["sequence"]))


def _cfg_text(c):
    """XBLOCK=1024,w4 style: the block sizes, then warps and stages."""
    if not c:
        return ""
    parts = [f"{k}={v}" for k, v in sorted(c.items()) if k.isupper()]
    parts.append(f"w{c.get('num_warps', '?')}")
    if c.get("num_stages", 1) != 1:
        parts.append(f"s{c['num_stages']}")
    if c.get("found_by_coordesc"):
        parts.append("cd")
    return ",".join(parts)


def kernel_profile(torch, d, step, n):
    """Kernel time per decode step over n steps of step from a fresh prefill, each fed its
    next token as the timed loop does (profile_calls)."""
    n = max(1, min(n, d.a.steps - 1))  # the positions stay inside the static cache
    d.prefill()

    def fed():
        out = step()
        d.tok.copy_(out.argmax(-1)[:, None])
        d.pos.add_(1)

    return profile_calls(torch, fed, n)


def profile_calls(torch, fn, n):
    """Kernel time per call of fn over n calls after one unprofiled call (torch.profiler, CUDA
    activity): the total, the part in kernels named as GEMMs (_GEMM_NAMES), the kernel count
    per call, the 12 kernels with the most time and the timeline, so a configuration's gap can
    be put on its kernels: its GEMMs, or every kernel (clocks)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    per = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0)
        # kernels only: device events that are not the profiler's own or memcpys
        if t <= 0 or getattr(e, "device_type", None) not in (None, torch.autograd.DeviceType.CUDA):
            continue
        if e.key.startswith(("Memcpy", "Memset", "cudaGraph", "ProfilerStep")):
            continue
        k = per.setdefault(e.key, [0.0, 0])
        k[0] += t / n
        k[1] += e.count / n
    total = sum(v[0] for v in per.values())
    gemm = sum(v[0] for k, v in per.items() if _is_gemm(k))
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:12]
    return {"steps": n, "kernel_us": round(total, 1), "gemm_us": round(gemm, 1),
            "kernels": round(sum(v[1] for v in per.values()), 1),
            "top": [{"name": k[:90], "us": round(v[0], 1), "calls": round(v[1], 1)} for k, v in top],
            "timeline": _timeline_or_error(torch, prof, n)}


def _timeline_or_error(torch, prof, n):
    # the timeline reads profiler internals that differ between torch versions: a failure
    # there names itself instead of losing the configuration's measured numbers
    try:
        return kernel_timeline(torch, prof, n)
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"}


def kernel_timeline(torch, prof, n):
    """Where a step's time goes between its kernels: the kernels in device order, the idle time
    between one's end and the next one's start (negative: they overlapped, as a chained launch
    lets them), per step, split by whether a GEMM-named kernel is on either side; and the
    sequence of the 24 kernels from the second GEMM-named one of the last step on (one layer's
    order: which kernels sit next to each GEMM)."""
    ks = []
    for e in prof.events():
        if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        if e.name.startswith(("Memcpy", "Memset", "cudaGraph", "ProfilerStep")):
            continue
        tr = getattr(e, "time_range", None)
        if tr is None or tr.end <= tr.start:
            continue
        ks.append((tr.start, tr.end, e.name))
    ks.sort()
    if len(ks) < 2:
        return None
    is_gemm = [_is_gemm(k[2]) for k in ks]
    gap = {"gemm": 0.0, "other": 0.0}
    overlaps = 0
    for i in range(1, len(ks)):
        g = ks[i][0] - ks[i - 1][1]
        if g > 200:  # between steps (the host feeds the next token): not a kernel boundary
            continue
        overlaps += g < 0
        gap["gemm" if is_gemm[i] or is_gemm[i - 1] else "other"] += g
    per_step = len(ks) // n
    last = ks[len(ks) - per_step:]
    gi = [i for i, k in enumerate(last) if _is_gemm(k[2])]
    start = gi[1] if len(gi) > 1 else 0
    seq = []
    for i in range(start, min(start + 24, len(last))):
        prev_end = last[i - 1][1] if i > 0 else last[i][0]
        seq.append({"name": last[i][2][:48], "us": round(last[i][1] - last[i][0], 2),
                    "gap_us": round(last[i][0] - prev_end, 2)})
    return {"gap_us_gemm_side": round(gap["gemm"] / n, 1), "gap_us_other": round(gap["other"] / n, 1),
            "overlapping_boundaries": round(overlaps / n, 1), "sequence": seq}


def reset_dynamo(torch):
    import torch._dynamo

    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ------------------------------------------------------------ configurations ---


@contextlib.contextmanager
def routing(a, cfg, state):
    """gemmtune.torch.use() for the gemmtune configurations, nothing for the others."""
    if not cfg.startswith("gemmtune"):
        yield None
        return
    import gemmtune.torch as gt

    db = a.db or state.file("tuned.db")
    if not os.path.exists(db):
        raise SystemExit(f"{cfg}: no tuned database {db}: run the record and tune phases first (or --db)")
    kw = {}
    if not a.device.startswith("cuda"):
        kw = {"device": "cpu", "device_model": state.get("tune", "device_model") or a.device_model,
              "backend": "cpu"}
    if a.gt_launch == "chained":  # graph-timed winners launch plainly, in the model's graph
        kw["launch"] = a.gt_launch
    if a.gt_min_uplift != 1.0:
        kw["min_uplift"] = a.gt_min_uplift
    if a.gt_no_trace or a.gt_trace:
        kw["trace"] = bool(a.gt_trace)
    with gt.use(db, **kw) as r:
        r.reset_stats()
        yield r


_COMPILED = set()  # batch keys compiled in this process


def compile_mode(cfg, a):
    return {"autotune_nocg": "max-autotune-no-cudagraphs", "autotune": "max-autotune",
            "gemmtune_compile": a.gt_compile_mode, "compile": a.gt_compile_mode,
            "gemmtune_autotune": "max-autotune-no-cudagraphs"}.get(cfg)


# --gt-pointwise-tuning: what max-autotune turns on for Inductor's own (non-GEMM) kernels:
# more launch configs benchmarked per pointwise kernel, then coordinate descent over them.
# Off by default: measured in processes of their own (h100_38_e2e_repeats.txt) it made
# gemmtune_compile slower and unsteady (batch 1: 6.35-6.71 ms against 6.20-6.21 without;
# batch 8: 8.63-8.81 against 8.50-8.51), coordinate descent picking for some RMSNorm
# kernels of one 4096 row R0_BLOCK=64 (28 us a call; 2.4-2.7 with Inductor's heuristic).
# (The in-process gain that brought it in, h100_36_e2e_b8b1_pw.txt, was the order effect.)
POINTWISE_TUNING = {"max_autotune_pointwise": True, "coordinate_descent_tuning": True}


@contextlib.contextmanager
def pointwise_tuning(torch, a, cfg):
    """--gt-pointwise-tuning: POINTWISE_TUNING while gemmtune_compile and compile compile,
    as max-autotune does for the peers; the GEMMs stay gemmtune's."""
    if not (a.gt_pointwise_tuning and cfg in ("gemmtune_compile", "compile")):
        yield
        return
    import torch._inductor.config as ic

    with ic.patch(**POINTWISE_TUNING):
        yield


def decode_config(torch, model, calls, a, state, cfg, batch):
    """Times cfg's decode at batch; returns the row for e2e.json."""
    key = f"b{batch}"
    row = {"batch": batch}
    d = Decode(torch, model, calls, a, batch)
    mode = compile_mode(cfg, a)
    cuda = a.device.startswith("cuda")
    with torch.no_grad(), routing(a, cfg, state) as r:
        fn = d.fn
        d.prefill()
        if mode:
            reset_dynamo(torch)
            fn = torch.compile(d.fn, mode=mode, dynamic=False, fullgraph=False)
        own_graphs = mode == "max-autotune" and cuda

        def call():
            if own_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            return fn(d.tok, d.pos)

        # warm-up: compile, autotune, Inductor's graph recording, gemmtune's plans
        t0 = time.time()
        with pointwise_tuning(torch, a, cfg):
            for _ in range(3):
                call()
                sync(torch, a.device)
        # the first calls: compile and autotune, or gemmtune's plans (NVRTC, module loads)
        row["first_calls_s"] = round(time.time() - t0, 2)
        if mode:
            row["compile_s"] = round(time.time() - t0, 1)
            row["compile_mode"] = mode
            # a later compile of the same batch size in this process may reuse the first's
            # autotuning (Inductor's local cache): say which one paid it
            row["compile_first_in_process"] = key not in _COMPILED
            _COMPILED.add(key)
        if cfg in ("default", "gemmtune"):
            # eager (host-bound at small batch): a few steps suffice
            eager_steps = max(4, a.steps // 4)
            row["eager_ms"], _ = d.timed(call, eager_steps, 1)
        if cuda and not own_graphs:
            step = capture(torch, fn, d.tok, d.pos)
        else:
            step = call
        toks, kept = d.loop(step, a.steps, keep=True)
        row["ms"], row["ms_reps"] = d.timed(step, a.steps, a.reps)
        row["tokens_per_s"] = batch * 1e3 / row["ms"]
        row["graph"] = "inductor" if own_graphs else ("captured" if cuda else "none")
        if a.profile and cuda:
            row["profile"] = kernel_profile(torch, d, step, a.profile)
            if mode:
                row["inductor_configs"] = loaded_kernel_configs()
        if r is not None:
            row["routing"] = r.stats()
            row["misses"] = r.misses()
            row["native"] = getattr(r.router, "native", None) is not None
        # accuracy against the default's run (saved by the default configuration)
        ref_path = state.file(f"ref_{key}.pt")
        if cfg == "default":
            torch.save({"tokens": toks.cpu(), "logits": kept.cpu()}, ref_path)
        elif os.path.exists(ref_path):
            ref = torch.load(ref_path)
            rt, rl = ref["tokens"].to(toks.device), ref["logits"].to(kept.device)
            row["token_agreement"], row["first_divergence"] = agreement(torch, toks, rt, rl, kept)
            # logits compared while the tokens fed so far agree
            upto = Decode.KEEP
            if row["first_divergence"]:
                upto = min(upto, row["first_divergence"]["step"] + 1)
            errs = [compare(torch, kept[i], rl[i]) for i in range(upto)]
            row["logits_rel_err"] = max(e[0] for e in errs)
            row["logits_max_rel_err"] = max(e[1] for e in errs)
        del step
    del d, fn
    reset_dynamo(torch)
    return row


def prefill_config(torch, model, calls, a, state, cfg):
    """Times cfg's prefill of a.prefill tokens at batch 1 (no cache; the last token's logits,
    as generate() asks for them)."""
    row = {"tokens": a.prefill}
    g = torch.Generator(device="cpu").manual_seed(99)
    ids = torch.randint(0, model.config.vocab_size, (1, a.prefill), generator=g).to(a.device)
    mode = compile_mode(cfg, a)
    with torch.no_grad(), routing(a, cfg, state) as r:
        def fn(x):
            return model(x, use_cache=False, logits_to_keep=1).logits[:, -1, :]

        f = fn
        if mode:
            reset_dynamo(torch)
            f = torch.compile(fn, mode=mode, dynamic=False)
        own_graphs = mode == "max-autotune" and a.device.startswith("cuda")

        def call():
            if own_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            return f(ids)

        t0 = time.time()
        with pointwise_tuning(torch, a, cfg):
            for _ in range(3):
                out = call()
                sync(torch, a.device)
        if mode:
            row["compile_s"] = round(time.time() - t0, 1)
            row["compile_mode"] = mode
            row["compile_first_in_process"] = "prefill" not in _COMPILED
            _COMPILED.add("prefill")
        logits = out.detach().clone()
        ms = []
        for _ in range(a.prefill_reps):
            with Timer(torch, a.device) as t:
                call()
            ms.append(t.ms)
        row["ms"] = statistics.median(ms)
        row["ms_reps"] = ms
        if a.profile and a.device.startswith("cuda"):
            # where a prefill's time goes: its GEMMs, or every kernel (the GPU's clocks)
            row["profile"] = profile_calls(torch, call, a.profile)
            if mode:
                row["inductor_configs"] = loaded_kernel_configs()
        if r is not None:
            row["routing"] = r.stats()
            row["misses"] = r.misses()
        ref_path = state.file("ref_prefill.pt")
        if cfg == "default":
            torch.save(logits.cpu(), ref_path)
        elif os.path.exists(ref_path):
            ref = torch.load(ref_path).to(logits.device)
            row["logits_rel_err"], row["logits_max_rel_err"] = compare(torch, logits, ref)
            row["argmax_agrees"] = bool((logits.argmax(-1) == ref.argmax(-1)).all().item())
    reset_dynamo(torch)
    return row


# ---------------------------------------------------------- record and tune ---


def record_phase(torch, model, calls, a, state):
    import gemmtune.torch as gt

    t0 = time.time()
    path = state.file("gemms.log")
    with torch.no_grad():
        decs = [Decode(torch, model, calls, a, b) for b in a.batch_list]
        for d in decs:
            d.prefill()  # the prompt's GEMMs are not timed, so not recorded
        sync(torch, a.device)
        with gt.record(path) as rec:
            for d in decs:
                d.fn(d.tok, d.pos)  # one decode step per batch size
            if a.prefill:
                ids = torch.zeros(1, a.prefill, dtype=torch.long, device=a.device)
                model(ids, use_cache=False, logits_to_keep=1)
            sync(torch, a.device)
    del decs
    wall = time.time() - t0
    gemms = [(desc.key(), calls_) for desc, calls_ in rec.gemms]
    state.put("record", value={"wall_s": round(wall, 1), "log": path, "gemms": len(gemms),
                               "calls": sum(c for _, c in gemms),
                               "skipped": [list(s) for s in rec.skipped]})
    log(f"record: {len(gemms)} GEMM problems, {sum(c for _, c in gemms)} calls, "
        f"{len(rec.skipped)} skipped, {wall:.1f} s -> {path}")
    for k, c in gemms:
        log(f"  {c:5d} x {k}")


def tune_phase(a, state):
    import gemmtune

    t0 = time.time()
    logf = state.file("gemms.log")
    if not os.path.exists(logf):
        raise SystemExit(f"tune: no {logf}: run the record phase first")
    out = state.file("tuned.db")
    with Service(a.build, state.file("svc"), backend=a.backend, device="0") as svc:
        c = gemmtune.Client(svc.url)
        ws = svc.wait_workers(1)
        if not ws:
            raise SystemExit(f"tune: no worker registered: see {svc.wlog.name}")
        w = ws[0]
        log(f"tune: worker {w['device_model']} [{w['device_index']}] {w.get('driver', '')}")
        opts = {"backend": a.backend, "budget": a.budget, "strategy": a.strategy,
                "shard_size": a.shard, "final_k": 5, "name": "e2e_llama"}
        if a.backend == "cuda":
            opts.update({"min_time_ms": 0.25, "repeats": 3, "warmup": 1})
            if a.gt_launch != "plain":  # timed the way use() will launch them
                opts["launch"] = a.gt_launch
        run = c.submit(logf, **opts)
        rid = run["id"]
        log(f"tune: run {rid}: {run['problems']} GEMMs" +
            (f", unsupported {run['unsupported']}" if run.get("unsupported") else ""))
        fin = c.wait(rid, progress=True, timeout=a.tune_timeout)
        if fin["state"] != "done":
            raise SystemExit(f"tune: run {rid} ended {fin['state']}")
        best = c.run(rid).get("best", [])
        c.export(rid, out)
    wall = time.time() - t0
    rows, ups = [], []
    for b in best:
        t, bu = b.get("time_us"), b.get("baseline_us")
        up = bu / t if t and bu else None
        cfg = b.get("config")
        fam = cfg.get("family", "cublaslt") if isinstance(cfg, dict) else "-"
        if a.backend == "cpu":
            fam = "cpu"
        rows.append({"label": b.get("label"), "weight": b.get("weight"), "baseline_us": bu, "time_us": t,
                     "uplift": up, "family": fam, "baseline_suspect": b.get("baseline_suspect")})
        if up and b.get("baseline_suspect") is not True:
            ups.append(up)
    geo = math.exp(sum(math.log(u) for u in ups) / len(ups)) if ups else None
    state.put("tune", value={"wall_s": round(wall, 1), "run_elapsed_s": fin.get("elapsed_s"), "run": rid,
                             "db": out, "device_model": w["device_model"], "gemms": len(best),
                             "geomean_uplift": geo, "best": rows})
    log(f"tune: {len(best)} GEMMs tuned in {wall:.1f} s (geomean uplift over the baseline "
        f"{'-' if geo is None else f'{geo:.4f}'}) -> {out}")
    for r in rows:
        up = "-" if r["uplift"] is None else f"{r['uplift']:.3f}"
        log(f"  {r['label']:<32} base {r['baseline_us'] or 0:9.2f} us  tuned {r['time_us'] or 0:9.2f} us  "
            f"x{up}  {r['family']}")


# ---------------------------------------------------------------- report ---


def _ms_runs(r, digits=3):
    """A row's ms, with the range of its runs when it was measured more than once (--repeat)."""
    runs = r.get("ms_runs") or []
    if len(runs) > 1:
        return f"{r['ms']:.{digits}f} ({min(runs):.{digits}f}-{max(runs):.{digits}f}, {len(runs)} runs)"
    return f"{r['ms']:.{digits}f}"


def _fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def report(state):
    d = state.data
    out = []
    p = out.append
    dev = d.get("device", {})
    p(f"# e2e_llama: {dev.get('name', '?')}, torch {dev.get('torch', '?')}, transformers "
      f"{dev.get('transformers', '?')}, {dev.get('layers', '?')} layers, prompt {dev.get('prompt', '?')}, "
      f"{dev.get('steps', '?')} steps, gemmtune launch {dev.get('gt_launch', 'plain')}"
      + (", q/k/v and gate/up fused (fuse_linears) in every configuration" if dev.get("fused") else "")
      + (f", use(min_uplift={dev['gt_min_uplift']})" if dev.get("gt_min_uplift", 1.0) != 1.0 else "")
      + (", use(trace=False): compiled graphs hold aten GEMMs" if dev.get("gt_trace") is False else "")
      + (", use(trace=True): a TorchFunctionMode places gemmtune ops" if dev.get("gt_trace") is True else "")
      + (f", gemmtune_compile with Inductor's tuning of its own kernels {dev['gt_pointwise_tuning']}"
         if dev.get("gt_pointwise_tuning") else ""))
    nat = dev.get("gemmtune_native")
    if nat:
        p("gemmtune's ops: " + ("the native path (C++ extension)" if nat.get("loaded") else
                                f"the Python router (extension not loaded: {nat.get('reason')})"))
    if dev.get("repeat", 1) > 1 or dev.get("isolated"):
        p(f"each measurement in a fresh process" + (f", {dev['repeat']} times (ms: the median run, of an even "
                                                    "count the slower middle one; the range in brackets)" if dev.get("repeat", 1) > 1 else ""))
    rec, tun = d.get("record", {}), d.get("tune", {})
    if rec or tun:
        p(f"record {rec.get('wall_s', '-')} s ({rec.get('gemms', '-')} GEMMs, {rec.get('calls', '-')} calls); "
          f"tune {tun.get('wall_s', '-')} s through gemmtuned + 1 worker (geomean uplift of the winners over "
          f"cuBLASLt's default {_fmt(tun.get('geomean_uplift'), '.4f')})")
    def table(title, head, rows):
        if rows:
            p(f"\n## {title}")
            p("| " + " | ".join(head) + " |")
            p("|" + "---|" * len(head))
            for r in rows:
                p("| " + " | ".join(r) + " |")

    table("tuned GEMMs (the tune phase's winners)",
          ("GEMM (m x n x k)", "baseline us", "tuned us", "uplift", "winner"),
          [(b["label"], _fmt(b["baseline_us"], ".2f"), _fmt(b["time_us"], ".2f"), _fmt(b["uplift"], ".3f"),
            b["family"]) for b in tun.get("best") or []])
    table("per-GEMM accuracy (F.linear as the model calls it, against float64) and, on a GPU, time "
          "(PyTorch's call against the routed one, interleaved rounds, medians)",
          ("GEMM (m x n x k)", "PyTorch rel err", "routed rel err", "routed vs PyTorch", "routed",
           "PyTorch us", "routed us", "over PyTorch", "tuned over cuBLASLt default"),
          [(f"{c['m']}x{c['n']}x{c['k']}", f"{c['default_err']:.2e}", f"{c['tuned_err']:.2e}",
            f"{c['tuned_vs_default']:.2e}", str(c["routed"]), _fmt(c.get("torch_us"), ".2f"),
            _fmt(c.get("routed_us"), ".2f"),
            _fmt(c["torch_us"] / c["routed_us"] if c.get("torch_us") and c.get("routed_us") else None, ".3f"),
            _fmt(c.get("claimed_uplift"), ".3f")) for c in d.get("check") or []])
    dec = d.get("decode", {})
    batches = sorted({int(k[1:]) for c in dec.values() for k in c})
    for b in batches:
        key = f"b{b}"
        p(f"\n## decode, batch {b}")
        # routed / seen GEMM calls through the router over the whole configuration, the
        # prompt's prefills included (untuned shapes: "not_tuned"), decode steps under
        # torch.compile once at trace time and in the eager warm-up calls, never in replays
        p("| configuration | ms/step | tokens/s | eager ms/step | compile s | tokens agree | logits rel err | "
          "GEMM calls routed (prompt prefill included) |")
        p("|---|---|---|---|---|---|---|---|")
        peers = {}
        for cfg in CONFIGS:
            r = dec.get(cfg, {}).get(key)
            if not r:
                continue
            if cfg.startswith("autotune"):
                peers[cfg] = r["ms"]
            st = r.get("routing", {})
            routed = f"{st.get('tuned_run', 0)}/{st.get('gemms', 0)}" if st else "-"
            agree = "-" if "token_agreement" not in r else f"{100 * r['token_agreement']:.1f} %"
            if r.get("first_divergence"):
                fd = r["first_divergence"]
                # tie None: the divergence came after the steps whose logits are kept
                tie = {True: ", tie", False: ", not a tie", None: ", after the kept logits: tie not checked"}
                agree += f" (first at step {fd['step']}{tie[fd.get('tie')]})"
            err = "-" if "logits_rel_err" not in r else f"{r['logits_rel_err']:.2e} / max {r['logits_max_rel_err']:.2e}"
            p(f"| {cfg} | {_ms_runs(r)} | {r['tokens_per_s']:.0f} | {_fmt(r.get('eager_ms'), '.2f')} | "
              f"{r.get('compile_s', '-')} | {agree} | {err} | {routed} |")
        base = dec.get("default", {}).get(key, {}).get("ms")
        r = dec.get("gemmtune", {}).get(key)
        if r and base:
            p(f"gemmtune alone (captured): {base / r['ms']:.3f}x tokens/s over PyTorch's default (captured)")
        # gemmtune under torch.compile in either mode a user may pick, against the better of
        # the two max-autotune configurations: the better of each side, both named
        ours = {c: dec[c][key]["ms"] for c in ("gemmtune_compile", "gemmtune_autotune")
                if dec.get(c, {}).get(key)}
        if ours and peers:
            bar = min(peers, key=peers.get)
            best = min(ours, key=ours.get)
            p(f"gemmtune under torch.compile: {peers[bar] / ours[best]:.3f}x tokens/s over the better "
              f"max-autotune configuration measured ({best}: {ours[best]:.3f} ms against {bar}: "
              f"{peers[bar]:.3f} ms; measured: {', '.join(sorted(ours))}; {', '.join(sorted(peers))})")
            ro, rb = dec[best][key].get("ms_runs"), dec[bar][key].get("ms_runs")
            if ro and rb and (len(ro) > 1 or len(rb) > 1):
                p(f"  over the runs: {min(rb) / max(ro):.3f}x (its slowest against the peer's fastest) to "
                  f"{max(rb) / min(ro):.3f}x")
        # the keys a gemmtune configuration found no tuned entry for (decisions, not calls)
        for cfg in CONFIGS:
            ms = dec.get(cfg, {}).get(key, {}).get("misses")
            if ms:
                p(f"not tuned in {cfg} ({len(ms)} keys, decisions): "
                  + "; ".join(f"{k} x{v}" for k, v in sorted(ms.items(), key=lambda kv: -kv[1])[:12]))
        # --profile: the kernels of one replayed step, where a configuration's time goes
        for cfg in CONFIGS:
            pr = dec.get(cfg, {}).get(key, {}).get("profile")
            ic = dec.get(cfg, {}).get(key, {}).get("inductor_configs") or {}
            if pr:
                _profile_lines(p, cfg, pr, ic, "step", "replays")
    pre = d.get("prefill", {})
    if pre:
        p(f"\n## prefill, batch 1, {next(iter(pre.values())).get('tokens')} tokens (last token's logits)")
        p("| configuration | ms (median) | min..max | compile s | logits rel err | argmax agrees |")
        p("|---|---|---|---|---|---|")
        for cfg in CONFIGS:
            r = pre.get(cfg)
            if r:
                err = "-" if "logits_rel_err" not in r else f"{r['logits_rel_err']:.2e}"
                reps = r.get("ms_reps") or [r["ms"]]
                p(f"| {cfg} | {_ms_runs(r, 2)} | {min(reps):.2f}..{max(reps):.2f} | {r.get('compile_s', '-')} | {err} | "
                  f"{r.get('argmax_agrees', '-')} |")
        for cfg in CONFIGS:  # --profile: the kernels of one prefill
            pr = (pre.get(cfg) or {}).get("profile")
            if pr:
                _profile_lines(p, cfg, pr, (pre.get(cfg) or {}).get("inductor_configs") or {}, "prefill", "prefills")
    errs = d.get("errors")
    if errs:
        p(f"\nerrors: {json.dumps(errs)}")
    return "\n".join(out)


# ---------------------------------------------------------------- main ---


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="folder with gemmtuned and gemmtune-worker")
    ap.add_argument("--state", default=None, help="results folder (default $OUT/e2e or ./e2e_out)")
    ap.add_argument("--phases", default="all", help=f"comma list of {','.join(PHASES)}, or all")
    ap.add_argument("--parts", default="decode,prefill", help="what the configurations time")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--prefill", type=int, default=2048, help="prefill tokens (0: none)")
    ap.add_argument("--prefill-reps", type=int, default=10)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--tiny", action="store_true", help="a 2-layer small model (checks the script)")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--db", default=None, help="tuned export to use (default STATE/tuned.db)")
    ap.add_argument("--budget", type=int, default=250)
    ap.add_argument("--strategy", default="exhaustive")
    ap.add_argument("--shard", type=int, default=50)
    ap.add_argument("--tune-timeout", type=float, default=900)
    ap.add_argument("--gt-compile-mode", default="default",
                    help="torch.compile mode for gemmtune_compile (default: 'default': Inductor's "
                         "fusion is the same as max-autotune's, which has no GEMM left to tune)")
    ap.add_argument("--gt-launch", default="plain", choices=("plain", "chained", "graph"),
                    help="how the tune phase times the candidates (the run option launch): "
                         "chained also launches the gemv kernels with programmatic dependent "
                         "launch in the gemmtune configurations (use(launch='chained')); graph "
                         "times every candidate inside a CUDA graph, as the decode step runs")
    ap.add_argument("--gt-min-uplift", type=float, default=1.0,
                    help="gemmtune.torch.use(min_uplift=): route only entries tuned to at least this uplift")
    ap.add_argument("--gt-no-trace", action="store_true",
                    help="gemmtune.torch.use(trace=False) (native path): compiled graphs hold aten GEMMs, "
                         "which reach the tuned kernels through the extension's override; under "
                         "max-autotune (gemmtune_autotune) Inductor then benchmarks them, as its aten "
                         "choice, against its own templates and fusions and keeps the faster per GEMM "
                         "(the default of the native path since h100_40_e2e_prefill.txt)")
    ap.add_argument("--gt-trace", action="store_true",
                    help="gemmtune.torch.use(trace=True): a TorchFunctionMode places gemmtune:: ops in "
                         "compiled graphs where a GEMM has a tuned gain (with the native path too); in "
                         "eager mode it costs a Python call on every torch function")
    ap.add_argument("--gt-pointwise-tuning", action="store_true",
                    help="compile gemmtune_compile (and compile) with what max-autotune turns on "
                         "for Inductor's own kernels (more launch configs benchmarked per pointwise "
                         "kernel, coordinate descent), as in the peers; the GEMMs stay gemmtune's. "
                         "On the H100 it made gemmtune_compile slower and unsteady (coordinate "
                         "descent's picks for small reductions differ per process)")
    ap.add_argument("--fuse", action="store_true",
                    help="gemmtune.torch.fuse_linears on the model before anything runs: q/k/v and "
                         "gate/up as one GEMM each, in every configuration (record it with the same flag)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also profile N replays of each decode step and N prefills (torch.profiler): "
                         "kernel time per step or prefill, the GEMMs' part, the top kernels (in e2e.json "
                         "and the report)")
    ap.add_argument("--in-process", action="store_true",
                    help="every phase and measurement in this process (default: each measurement "
                         "in a fresh process, see Isolation above)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each configuration's measurement N times, each in a fresh process, and "
                         "report the median run (of an even N the slower middle one) with the range "
                         "(Inductor's autotuning differs from one process to the next)")
    ap.add_argument("--allow-python-router", action="store_true",
                    help="time the gemmtune configurations on a GPU even when the package's C++ "
                         "extension is not loaded (its ops then run through the Python router)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--report", action="store_true", help="print the tables from STATE and exit")
    a = ap.parse_args(argv)

    state_dir = a.state or (os.path.join(os.environ["OUT"], "e2e") if os.environ.get("OUT") else "e2e_out")
    state = State(os.path.abspath(state_dir))
    if a.report:
        print(report(state))
        return 0

    phases = list(PHASES) if a.phases == "all" else a.phases.split(",")
    for ph in phases:
        if ph not in PHASES:
            ap.error(f"--phases: unknown phase {ph!r} (one of {', '.join(PHASES)})")
    parts = a.parts.split(",")
    for pt in parts:
        if pt not in ("decode", "prefill"):
            ap.error(f"--parts: unknown part {pt!r} (decode, prefill)")

    if a.repeat < 1 or (a.repeat > 1 and a.in_process):
        ap.error("--repeat N: N >= 1, and only with each measurement in its own process (not --in-process)")
    if a.gt_trace and a.gt_no_trace:
        ap.error("--gt-trace and --gt-no-trace: one or the other")
    if not (a.in_process or a.child):
        return run_isolated(a, argv, state, phases, parts)

    # A cold Inductor cache: compile times are what a new process pays.
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_e2e_")
    import torch
    import transformers

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    a.device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    a.backend = "cuda" if a.device.startswith("cuda") else "cpu"
    # The cpu backend tunes fp32 GEMMs; the GPU runs the model in bf16.
    a.dtype = torch.bfloat16 if a.device.startswith("cuda") else torch.float32
    a.device_model = None
    if a.tiny:
        a.prompt, a.steps, a.prefill = min(a.prompt, 32), min(a.steps, 8), min(a.prefill, 64)
    a.batch_list = [int(x) for x in a.batches.split(",") if x]
    a.build = os.path.abspath(a.build)

    name = torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu"
    state.put("device", value={"name": name, "torch": torch.__version__, "transformers": transformers.__version__,
                               "layers": 2 if a.tiny else a.layers, "prompt": a.prompt, "steps": a.steps,
                               "tiny": a.tiny, "dtype": str(a.dtype), "gt_launch": a.gt_launch,
                               "fused": a.fuse, "gt_min_uplift": a.gt_min_uplift,
                               "gt_trace": True if a.gt_trace else False if a.gt_no_trace else None,
                               "gt_pointwise_tuning": POINTWISE_TUNING if a.gt_pointwise_tuning else None})
    log(f"{name}, torch {torch.__version__}, transformers {transformers.__version__}, phases {phases}")
    native = None
    try:
        import gemmtune.torch as gt

        native = gt.native_status()
        state.put("device", "gemmtune_native", value=native)
        log(f"gemmtune native path: {native}")
    except Exception as e:  # the package is needed by the gemmtune phases only
        log(f"gemmtune.torch: {type(e).__name__}: {e}")
    # On a GPU the package's users get the native path; timing the Python router instead
    # (an install whose `pip` belongs to another interpreter builds no extension, and says
    # so only in pip's hidden output) would report numbers no user sees.
    ours = [c for c in ("gemmtune", "gemmtune_compile", "gemmtune_autotune") if c in phases]
    if ours and a.device.startswith("cuda") and not (native or {}).get("loaded") and not a.allow_python_router:
        log(f"{', '.join(ours)}: not timed: gemmtune's native path is not loaded "
            f"({(native or {}).get('reason', 'gemmtune.torch did not import')}); install the package with "
            "this interpreter (`python3 -m pip install --no-build-isolation ./python`) or pass "
            "--allow-python-router")
        return 2

    t0 = time.time()
    model = build_model(torch, a)
    sync(torch, a.device)
    calls = Calls(model)
    if a.fuse:
        import gemmtune.torch as gt

        probe = torch.zeros(1, 2, dtype=torch.long, device=a.device)
        groups = gt.fuse_linears(model, lambda: model(probe, use_cache=False))
        log(f"fuse_linears: {len(groups)} groups of sibling Linear layers, e.g. {groups[0] if groups else '-'}")
    log(f"model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters, {a.dtype}, "
        f"built in {time.time() - t0:.1f} s")

    if "record" in phases:
        record_phase(torch, model, calls, a, state)
    if "tune" in phases:
        tune_phase(a, state)
    if "check" in phases:
        check_phase(torch, a, state)
    for cfg in CONFIGS:
        if cfg not in phases:
            continue
        if "decode" in parts:
            for b in a.batch_list:
                log(f"{cfg}: decode batch {b} ...")
                try:
                    row = decode_config(torch, model, calls, a, state, cfg, b)
                except Exception as e:  # one configuration's failure must not lose the others'
                    log(f"{cfg}: decode batch {b}: FAILED: {type(e).__name__}: {e}")
                    state.put("errors", cfg, f"b{b}", value=f"{type(e).__name__}: {e}")
                    reset_dynamo(torch)
                    continue
                state.put("decode", cfg, f"b{b}", value=row)
                log(f"{cfg}: decode batch {b}: {row['ms']:.3f} ms/step ({row['tokens_per_s']:.0f} tokens/s)"
                    + (f", compile {row['compile_s']} s" if "compile_s" in row else "")
                    + (f", tokens agree {100 * row['token_agreement']:.1f} %" if "token_agreement" in row else "")
                    + (f", routing {row['routing']}" if "routing" in row else ""))
        if a.prefill and "prefill" in parts:
            log(f"{cfg}: prefill {a.prefill} ...")
            try:
                row = prefill_config(torch, model, calls, a, state, cfg)
            except Exception as e:
                log(f"{cfg}: prefill: FAILED: {type(e).__name__}: {e}")
                state.put("errors", cfg, "prefill", value=f"{type(e).__name__}: {e}")
                reset_dynamo(torch)
                continue
            state.put("prefill", cfg, value=row)
            log(f"{cfg}: prefill: {row['ms']:.2f} ms" + (f", compile {row['compile_s']} s" if "compile_s" in row else "")
                + (f", routing {row['routing']}" if "routing" in row else ""))
    if not a.child:
        print(report(state), flush=True)
    return 0


# ------------------------------------------------------------- isolation ---

# options the parent sets per child (everything else is passed on as given)
_PER_CHILD = ("--phases", "--parts", "--batches", "--state")


def strip_options(argv, names):
    """argv without the options in names and their values (--opt v and --opt=v forms)."""
    out, skip = [], False
    for x in argv:
        if skip:
            skip = False
            continue
        if x in names:
            skip = True
            continue
        if any(x.startswith(n + "=") for n in names):
            continue
        out.append(x)
    return out


def isolated_units(phases, parts, batches, prefill):
    """The child processes, in order: (label, phases, parts, batches). Record, tune and check
    share one (the model is built once for them; record takes every part and batch size);
    then one per configuration and batch size, and one per configuration's prefill."""
    units = []
    setup = [ph for ph in ("record", "tune", "check") if ph in phases]
    if setup:
        units.append(("+".join(setup), setup, ",".join(parts), ",".join(batches)))
    for cfg in CONFIGS:
        if cfg not in phases:
            continue
        if "decode" in parts:
            for b in batches:
                units.append((f"{cfg} decode b{b}", [cfg], "decode", str(b)))
        if prefill and "prefill" in parts:
            units.append((f"{cfg} prefill", [cfg], "prefill", ""))
    return units


def _run_child(cmd):
    """Runs one child to its end and returns its exit status. If this process is stopped
    meanwhile (SIGTERM from a time box, SIGINT), the child is stopped too, not left
    holding the GPU."""
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def run_isolated(a, argv, state, phases, parts):
    """Runs each unit of isolated_units in a fresh process of this script, then prints the
    report. A child that dies (a CUDA fault, a kill) is recorded under errors and the others
    still run."""
    base = strip_options(argv, _PER_CHILD)
    batches = [x for x in a.batches.split(",") if x]
    repeat = getattr(a, "repeat", 1)
    # `timeout` stops this process with SIGTERM: unwind through _run_child, which stops the child
    prev = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        _run_units(a, base, state, phases, parts, batches, repeat)
    finally:
        signal.signal(signal.SIGTERM, prev)
    # after the children: each writes the device record whole
    st = State(state.folder)
    st.put("device", "isolated", value=True)
    st.put("device", "repeat", value=repeat)
    print(report(st), flush=True)
    return 0


def _run_units(a, base, state, phases, parts, batches, repeat):
    for label, ph, part, b in isolated_units(phases, parts, batches, a.prefill):
        cmd = [sys.executable, os.path.abspath(__file__)] + base + [
            "--child", "--state", state.folder, "--phases", ",".join(ph), "--parts", part, "--batches", b]
        # where the child writes its row (a setup unit has none)
        loc = None if len(ph) != 1 or ph[0] not in CONFIGS else (
            ("decode", ph[0], f"b{b}") if part == "decode" else ("prefill", ph[0]))
        rows = []
        for i in range(repeat if loc else 1):
            if loc:
                State(state.folder).drop(*loc)  # no stale row from an earlier run
            log(f"isolated: {label}: a fresh process" + (f" (run {i + 1} of {repeat})" if repeat > 1 and loc else ""))
            t0 = time.time()
            rc = _run_child(cmd)
            st = State(state.folder)  # what the child wrote, before it exited or died
            if rc != 0:
                log(f"isolated: {label}: the process exited with {rc} after {time.time() - t0:.1f} s")
                st.put("errors", label + (f" run {i + 1}" if repeat > 1 and loc else ""),
                       value=f"process exited with {rc}")
            if loc and st.get(*loc):
                rows.append(st.get(*loc))
        if loc:
            st = State(state.folder)
            if rows:
                # the median run is the row (its profile and checks with it; of an even count
                # the slower middle one, so two runs report the slower); every run's ms beside
                mid = sorted(rows, key=lambda r: r["ms"])[len(rows) // 2]
                mid = dict(mid, ms_runs=[r["ms"] for r in rows])
                st.put(*loc, value=mid)


if __name__ == "__main__":
    sys.exit(main())
