// gemmtune_torch.cpp: the native fast path of gemmtune.torch.use (one
// translation unit, built against the user's torch by python/_build).
//
// While installed, a torch::Library of kind IMPL for `aten` on one dispatch
// key (CUDA; CPU only for the tests) overrides the kernels of aten::mm,
// addmm, bmm and baddbmm. Destroying it (gtn_uninstall) deregisters them and
// the dispatcher runs PyTorch's kernels again.
//
// Every decision stays where it was: the override only computes a key of
// what gemmtune/torch/_blas.py's describe() reads of the call (op, dtypes,
// sizes, strides, neg bits, beta/alpha, cuBLAS TF32, device index: the
// Python router's _signature) and looks it up in a cache. A miss calls the
// resolver Python registered (a ctypes callback, which takes the GIL): it
// rebuilds the call on meta tensors from the key alone (so an answer can only
// depend on what the key holds), runs the router's describe + gt_db_lookup +
// gt_db_plan_create and answers "PyTorch's path, counted as <reason>" or
// "run this gt_db_plan" with the roles of the arguments. A hit with a plan
// allocates the output with at::empty, checks 16-byte alignment, takes the
// plan's workspace for the current stream (caching allocator: CUDA graph
// capture works) and calls gt_db_plan_run (the pointer Python passes, from
// the libgemmtune the package loaded) on the current stream. Anything else,
// and every error, calls PyTorch's own kernel directly (at::cuda::mm, ...:
// no dispatcher, so no recursion); an error also marks the entry broken and
// warns once.
//
// Routing is per thread, as the TorchFunctionMode it sits under:
// gtn_thread_enter/exit (use(), Routing.thread(), the gemmtune:: ops)
// count the thread in; an install starts a new generation, so a thread
// left counted in by an earlier routing is not routed by the next.

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/addmm_cuda_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cuda_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cuda_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#ifdef GTN_C10_CUDA_STREAM /* torch without c10::Stream::native_handle (2.4) */
#include <c10/cuda/CUDAStream.h>
#endif

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#define GTN_ABI 2
#define GTN_EXPORT extern "C" __attribute__((visibility("default")))

// ---- the C interface Python (gemmtune/torch/_native.py) mirrors ----------

enum { GTN_MM = 0, GTN_ADDMM = 1, GTN_BMM = 2, GTN_BADDBMM = 3 };
enum { GTN_F16 = 1, GTN_BF16 = 2, GTN_F32 = 3, GTN_F64 = 4 };
// Counter slots the C++ side fills itself; the resolver's reasons follow.
enum {
  GTN_R_TUNED_RUN = 0,
  GTN_R_MISALIGNED = 1,
  GTN_R_ERROR = 2,
  GTN_R_UNRUNNABLE = 3,
  GTN_R_OUT_LAYOUT = 4, // an out= tensor the plan cannot write in place
  GTN_NREASONS = 64
};

struct gtn_tensor {
  int64_t size[3];
  int64_t stride[3];
  int32_t dim;
  int32_t dtype; /* GTN_F16 ... */
  int32_t neg;   /* is_neg() */
  int32_t pad;
};

/* A call as describe() sees it; tensors in schema order (mm: self, mat2;
 * addmm: self, mat1, mat2; bmm: self, mat2; baddbmm: self, batch1, batch2).
 * Compared as bytes: built zeroed. */
struct gtn_key {
  int32_t op;
  int32_t device; /* index; -1 for CPU */
  int32_t tf32;   /* at::globalContext().allowTF32CuBLAS() */
  int32_t ntensors;
  double beta, alpha; /* 0 and 1 for mm/bmm */
  gtn_tensor t[3];
};

/* The resolver's answer. */
struct gtn_answer {
  int32_t run;        /* 1: run plan; 0: PyTorch's path */
  int32_t reason;     /* counter slot of a PyTorch-path answer */
  int32_t count_gemm; /* counts in "gemms" (not for another device) */
  int32_t cache;      /* 0: ask again next time */
  uint64_t plan;      /* gt_db_plan * */
  uint64_t ws_bytes;
  int32_t ws_zero;
  int32_t a, b, c, bias; /* tensor index of BLAS A, B, C-from (beta != 0), bias; -1 none */
  int32_t out_dim;
  int64_t out_shape[3];
  int32_t flags; /* gt_db_plan_run's flags (GT_DB_LAUNCH_CHAINED: use(launch="chained")) */
  int32_t pad;
};

typedef int (*gtn_resolve_fn)(const gtn_key *key, gtn_answer *out);
typedef int (*gtn_plan_run_fn)(void *p, void *stream, const void *a, const void *b, const void *c,
                               const void *bias, void *d, const void *scale_a, const void *scale_b,
                               const void *scale_d, void *workspace, int flags, char *err, size_t errlen);

namespace {

struct KeyHash {
  size_t operator()(const gtn_key &k) const noexcept {
    uint64_t w[sizeof(gtn_key) / 8];
    std::memcpy(w, &k, sizeof w);
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint64_t x : w) h = (h ^ x) * 0xff51afd7ed558ccdull, h ^= h >> 32;
    return (size_t)h;
  }
};
struct KeyEq {
  bool operator()(const gtn_key &a, const gtn_key &b) const noexcept {
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
};
static_assert(sizeof(gtn_key) % 8 == 0, "gtn_key hashes as 64-bit words");

struct Entry {
  gtn_answer a;
  std::atomic<bool> broken{false};
};

using Cache = std::unordered_map<gtn_key, std::shared_ptr<Entry>, KeyHash, KeyEq>;

// The workspace of one plan on one stream (runs sharing one must not overlap).
struct WsKey {
  uint64_t plan;
  void *stream;
  bool operator==(const WsKey &o) const { return plan == o.plan && stream == o.stream; }
};
struct WsHash {
  size_t operator()(const WsKey &k) const noexcept {
    return std::hash<uint64_t>()(k.plan * 31 + (uint64_t)(uintptr_t)k.stream);
  }
};

const size_t kCacheMax = 1 << 16;

std::shared_mutex g_mu; // guards g_cache, g_ws and the installed state
Cache g_cache;
std::unordered_map<WsKey, at::Tensor, WsHash> g_ws;
std::unique_ptr<torch::Library> g_lib;
c10::DeviceType g_dev = c10::DeviceType::CUDA;
gtn_resolve_fn g_resolve = nullptr;
gtn_plan_run_fn g_plan_run = nullptr;
std::atomic<uint64_t> g_gen{1};
std::atomic<uint64_t> g_gemms{0};
std::array<std::atomic<uint64_t>, GTN_NREASONS> g_counts{};

thread_local uint64_t tl_gen = 0;
thread_local int tl_depth = 0;
thread_local bool tl_resolving = false;

bool thread_routes() {
  return tl_depth > 0 && !tl_resolving && tl_gen == g_gen.load(std::memory_order_relaxed);
}

void count(const gtn_answer &a, int reason) {
  if (a.count_gemm) g_gemms.fetch_add(1, std::memory_order_relaxed);
  if (reason >= 0 && reason < GTN_NREASONS) g_counts[reason].fetch_add(1, std::memory_order_relaxed);
}

int dtype_code(at::ScalarType t) {
  switch (t) {
  case at::kHalf: return GTN_F16;
  case at::kBFloat16: return GTN_BF16;
  case at::kFloat: return GTN_F32;
  case at::kDouble: return GTN_F64;
  default: return 0;
  }
}

// The key of a call, or false when the TorchFunctionMode would not have
// routed it (not all float tensors on one device of the routed type, more
// than 3 dimensions, or an autograd graph being recorded): then PyTorch's
// path, uncounted, as before.
bool make_key(int op, const at::Tensor *const *ts, int nt, const c10::Scalar *beta, const c10::Scalar *alpha,
              gtn_key *k) {
  std::memset(k, 0, sizeof *k);
  k->op = op;
  k->ntensors = nt;
  const bool grad = c10::GradMode::is_enabled();
  const at::Device dev = ts[0]->device();
  if (dev.type() != g_dev) return false;
  for (int i = 0; i < nt; i++) {
    const at::Tensor &t = *ts[i];
    if (!t.defined() || t.device() != dev || (grad && t.requires_grad())) return false;
    gtn_tensor &o = k->t[i];
    o.dtype = dtype_code(t.scalar_type());
    o.dim = (int32_t)t.dim();
    if (!o.dtype || o.dim > 3 || t.is_conj()) return false;
    for (int d = 0; d < o.dim; d++) {
      o.size[d] = t.sizes()[d];
      o.stride[d] = t.strides()[d];
    }
    o.neg = t.is_neg();
  }
  k->device = dev.type() == c10::DeviceType::CPU ? -1 : dev.index();
  for (const c10::Scalar *s : {beta, alpha})
    if (s && !(s->isFloatingPoint() || s->isIntegral(false))) return false;
  k->beta = beta ? beta->toDouble() : 0.0;
  k->alpha = alpha ? alpha->toDouble() : 1.0;
  k->tf32 = at::globalContext().allowTF32CuBLAS();
  return true;
}

std::shared_ptr<Entry> find(const gtn_key &k) {
  std::shared_lock<std::shared_mutex> l(g_mu);
  auto it = g_cache.find(k);
  return it == g_cache.end() ? nullptr : it->second;
}

// Asks Python (never under g_mu: the resolver takes the GIL, and a thread
// holding the GIL may be waiting for g_mu). Two threads missing the same
// key both ask; the router's own caches give both the same plan, the first
// insert wins.
std::shared_ptr<Entry> resolve(const gtn_key &k) {
  gtn_resolve_fn fn = g_resolve;
  if (!fn) return nullptr;
  auto e = std::make_shared<Entry>();
  std::memset(&e->a, 0, sizeof e->a);
  e->a.a = e->a.b = e->a.c = e->a.bias = -1;
  tl_resolving = true; // a GEMM the resolver itself issues runs PyTorch's path
  int rc = fn(&k, &e->a);
  tl_resolving = false;
  if (rc != 0) return nullptr;
  if (!e->a.cache) return e;
  std::unique_lock<std::shared_mutex> l(g_mu);
  if (!g_lib) return e; // uninstalled meanwhile: the plan may be gone
  auto it = g_cache.find(k);
  if (it != g_cache.end()) return it->second;
  if (g_cache.size() < kCacheMax) g_cache.emplace(k, e);
  return e;
}

void *current_stream(at::Device dev) {
  if (dev.type() != c10::DeviceType::CUDA) return nullptr;
#ifdef GTN_C10_CUDA_STREAM
  return c10::cuda::getCurrentCUDAStream(dev.index()).stream();
#else
  return c10::impl::getDeviceGuardImpl(dev.type())->getStream(dev).native_handle();
#endif
}

// The plan's workspace on this stream, allocated once with the caching
// allocator (at::empty / at::zeros on the current stream).
bool workspace(const gtn_answer &a, at::Device dev, void *stream, void **out) {
  *out = nullptr;
  if (!a.ws_bytes) return true;
  WsKey wk{a.plan, stream};
  {
    std::shared_lock<std::shared_mutex> l(g_mu);
    auto it = g_ws.find(wk);
    if (it != g_ws.end()) {
      *out = it->second.data_ptr();
      return true;
    }
  }
  auto opts = at::TensorOptions().dtype(at::kByte).device(dev);
  at::Tensor w = a.ws_zero ? at::zeros({(int64_t)a.ws_bytes}, opts) : at::empty({(int64_t)a.ws_bytes}, opts);
  std::unique_lock<std::shared_mutex> l(g_mu);
  auto it = g_ws.emplace(wk, w).first;
  *out = it->second.data_ptr();
  return true;
}

// An out= tensor the plan writes in place: contiguous, the output's shape,
// dtype and device, sharing no storage with an input (a kernel may read an
// operand after it wrote part of D). Anything else runs PyTorch's out kernel,
// which also resizes, rather than the tuned result plus a copy.
bool out_fits(const at::Tensor &out, const std::vector<int64_t> &shape, const at::Tensor &like,
              const at::Tensor *const *ts, int nt) {
  if (!out.defined() || !out.is_contiguous() || out.scalar_type() != like.scalar_type() ||
      out.device() != like.device() || out.sizes().vec() != shape)
    return false;
  for (int i = 0; i < nt; i++)
    if (ts[i]->defined() && out.is_alias_of(*ts[i])) return false;
  return true;
}

// The tuned run: the output (dst itself when given), or an undefined tensor
// with *reason set.
at::Tensor run_plan(Entry &e, const at::Tensor *const *ts, int nt, int *reason, const at::Tensor *dst) {
  const gtn_answer &a = e.a;
  const at::Tensor &first = *ts[0];
  at::Device dev = first.device();
  c10::DeviceGuard guard(dev);
  at::Tensor A = *ts[a.a], B = *ts[a.b];
  at::Tensor C, bias;
  std::vector<int64_t> shape(a.out_shape, a.out_shape + a.out_dim);
  if (dst && !out_fits(*dst, shape, A, ts, nt)) {
    *reason = GTN_R_OUT_LAYOUT;
    return at::Tensor();
  }
  if (a.c >= 0) C = ts[a.c]->expand(shape).contiguous(); // beta != 0: C in its own buffer
  if (a.bias >= 0) bias = *ts[a.bias];
  // describe: A and B share D's type
  at::Tensor D = dst ? *dst : at::empty(shape, first.options().dtype(A.scalar_type()));
  for (const at::Tensor *t : {&A, &B, &C, &bias, &D}) {
    if (t->defined() && ((uintptr_t)t->data_ptr() % 16)) {
      *reason = GTN_R_MISALIGNED;
      return at::Tensor();
    }
  }
  void *stream = current_stream(dev);
  void *ws = nullptr;
  workspace(a, dev, stream, &ws);
  char err[512] = "";
  int rc = g_plan_run((void *)(uintptr_t)a.plan, stream, A.data_ptr(), B.data_ptr(),
                      C.defined() ? C.data_ptr() : nullptr, bias.defined() ? bias.data_ptr() : nullptr,
                      D.data_ptr(), nullptr, nullptr, nullptr, ws, a.flags, err, sizeof err);
  if (rc != 0) {
    e.broken = true;
    *reason = GTN_R_ERROR;
    TORCH_WARN("gemmtune: tuned path failed (gt_db_plan_run ", rc, ": ", err,
               "); this GEMM runs PyTorch's path from now on");
    return at::Tensor();
  }
  *reason = GTN_R_TUNED_RUN;
  return D;
}

// The override's body: the tuned output (written into dst for an out=
// variant), or an undefined tensor (run PyTorch's kernel).
at::Tensor route(int op, const at::Tensor *const *ts, int nt, const c10::Scalar *beta, const c10::Scalar *alpha,
                 const at::Tensor *dst = nullptr) {
  if (!thread_routes()) return at::Tensor();
  gtn_key k;
  if (!make_key(op, ts, nt, beta, alpha, &k)) return at::Tensor();
  std::shared_ptr<Entry> e = find(k);
  if (!e) e = resolve(k);
  if (!e) return at::Tensor();
  if (!e->a.run) {
    count(e->a, e->a.reason);
    return at::Tensor();
  }
  if (e->broken) {
    count(e->a, GTN_R_UNRUNNABLE);
    return at::Tensor();
  }
  int reason = GTN_R_ERROR;
  at::Tensor out;
  try {
    out = run_plan(*e, ts, nt, &reason, dst);
  } catch (const std::exception &ex) { // never let the tuned path fail the model
    e->broken = true;
    reason = GTN_R_ERROR;
    TORCH_WARN("gemmtune: tuned path failed (", ex.what(), "); this GEMM runs PyTorch's path from now on");
    out = at::Tensor();
  }
  count(e->a, reason);
  return out;
}

// ---- the overrides --------------------------------------------------------

at::Tensor mm_k(const at::Tensor &self, const at::Tensor &mat2) {
  const at::Tensor *ts[] = {&self, &mat2};
  at::Tensor out = route(GTN_MM, ts, 2, nullptr, nullptr);
  if (out.defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::mm(self, mat2) : at::cpu::mm(self, mat2);
}

at::Tensor addmm_k(const at::Tensor &self, const at::Tensor &mat1, const at::Tensor &mat2, const c10::Scalar &beta,
                   const c10::Scalar &alpha) {
  const at::Tensor *ts[] = {&self, &mat1, &mat2};
  at::Tensor out = route(GTN_ADDMM, ts, 3, &beta, &alpha);
  if (out.defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::addmm(self, mat1, mat2, beta, alpha)
                                        : at::cpu::addmm(self, mat1, mat2, beta, alpha);
}

// The out= variants: what Inductor's generated code calls for the GEMMs it
// leaves to aten (extern_kernels.mm / addmm with out=), max-autotune's
// benchmarking of that choice included; the tuned kernel writes into out.
at::Tensor &mm_out_k(const at::Tensor &self, const at::Tensor &mat2, at::Tensor &out) {
  const at::Tensor *ts[] = {&self, &mat2};
  if (route(GTN_MM, ts, 2, nullptr, nullptr, &out).defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::mm_out(out, self, mat2) : at::cpu::mm_out(out, self, mat2);
}

at::Tensor &addmm_out_k(const at::Tensor &self, const at::Tensor &mat1, const at::Tensor &mat2,
                        const c10::Scalar &beta, const c10::Scalar &alpha, at::Tensor &out) {
  const at::Tensor *ts[] = {&self, &mat1, &mat2};
  if (route(GTN_ADDMM, ts, 3, &beta, &alpha, &out).defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::addmm_out(out, self, mat1, mat2, beta, alpha)
                                        : at::cpu::addmm_out(out, self, mat1, mat2, beta, alpha);
}

at::Tensor bmm_k(const at::Tensor &self, const at::Tensor &mat2) {
  const at::Tensor *ts[] = {&self, &mat2};
  at::Tensor out = route(GTN_BMM, ts, 2, nullptr, nullptr);
  if (out.defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::bmm(self, mat2) : at::cpu::bmm(self, mat2);
}

at::Tensor baddbmm_k(const at::Tensor &self, const at::Tensor &batch1, const at::Tensor &batch2,
                     const c10::Scalar &beta, const c10::Scalar &alpha) {
  const at::Tensor *ts[] = {&self, &batch1, &batch2};
  at::Tensor out = route(GTN_BADDBMM, ts, 3, &beta, &alpha);
  if (out.defined()) return out;
  return g_dev == c10::DeviceType::CUDA ? at::cuda::baddbmm(self, batch1, batch2, beta, alpha)
                                        : at::cpu::baddbmm(self, batch1, batch2, beta, alpha);
}

// The dispatcher warns when a kernel replaces another; that is the point here.
struct Quiet : c10::WarningHandler {
  void process(const c10::Warning &) override {}
};

void set_err(char *err, size_t errlen, const std::string &s) {
  if (err && errlen) {
    std::strncpy(err, s.c_str(), errlen - 1);
    err[errlen - 1] = 0;
  }
}

void clear_locked() {
  g_cache.clear();
  g_ws.clear();
}

} // namespace

// ---- exported to Python (ctypes) ------------------------------------------

GTN_EXPORT int gtn_abi(void) { return GTN_ABI; }
GTN_EXPORT size_t gtn_sizeof_key(void) { return sizeof(gtn_key); }
GTN_EXPORT size_t gtn_sizeof_answer(void) { return sizeof(gtn_answer); }
GTN_EXPORT int gtn_reason_slots(void) { return GTN_NREASONS; }

/* Registers the overrides on dispatch key "CUDA" (or "CPU": tests), asking
 * resolve on a miss and running plans with plan_run. 0, or -1 with err. */
GTN_EXPORT int gtn_install(const char *key, gtn_resolve_fn resolve, gtn_plan_run_fn plan_run, char *err,
                           size_t errlen) {
  try {
    c10::DispatchKey dk;
    c10::DeviceType dt;
    if (std::strcmp(key, "CUDA") == 0) {
      dk = c10::DispatchKey::CUDA;
      dt = c10::DeviceType::CUDA;
    } else if (std::strcmp(key, "CPU") == 0) {
      dk = c10::DispatchKey::CPU;
      dt = c10::DeviceType::CPU;
    } else {
      set_err(err, errlen, std::string("dispatch key ") + key + ": CUDA or CPU");
      return -1;
    }
    if (!resolve || !plan_run) {
      set_err(err, errlen, "no resolver or gt_db_plan_run");
      return -1;
    }
    std::unique_lock<std::shared_mutex> l(g_mu);
    if (g_lib) {
      set_err(err, errlen, "already installed");
      return -1;
    }
    clear_locked();
    g_dev = dt;
    g_resolve = resolve;
    g_plan_run = plan_run;
    g_gen.fetch_add(1);
    g_gemms = 0;
    for (auto &c : g_counts) c = 0;
    Quiet quiet;
    c10::WarningUtils::WarningHandlerGuard wg(&quiet);
    auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", dk, __FILE__, __LINE__);
    lib->impl("mm", TORCH_FN(mm_k));
    lib->impl("addmm", TORCH_FN(addmm_k));
    lib->impl("mm.out", TORCH_FN(mm_out_k));
    lib->impl("addmm.out", TORCH_FN(addmm_out_k));
    lib->impl("bmm", TORCH_FN(bmm_k));
    lib->impl("baddbmm", TORCH_FN(baddbmm_k));
    g_lib = std::move(lib);
    return 0;
  } catch (const std::exception &e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

/* Deregisters the overrides (PyTorch's kernels run again) and forgets every
 * cached answer and workspace. The caller keeps the plans alive until no
 * GEMM that may use them is running. */
GTN_EXPORT int gtn_uninstall(void) {
  std::unique_ptr<torch::Library> lib;
  {
    std::unique_lock<std::shared_mutex> l(g_mu);
    lib = std::move(g_lib);
    clear_locked();
    g_resolve = nullptr;
    g_gen.fetch_add(1);
  }
  bool was = lib != nullptr;
  lib.reset(); // deregisters (outside g_mu: the dispatcher takes its own lock)
  return was ? 0 : -1;
}

GTN_EXPORT int gtn_installed(void) {
  std::shared_lock<std::shared_mutex> l(g_mu);
  return g_lib != nullptr;
}

/* The calling thread's GEMMs are routed between enter and exit (nested). */
GTN_EXPORT void gtn_thread_enter(void) {
  uint64_t g = g_gen.load();
  if (tl_gen != g) tl_gen = g, tl_depth = 0;
  tl_depth++;
}
GTN_EXPORT void gtn_thread_exit(void) {
  if (tl_gen == g_gen.load() && tl_depth > 0) tl_depth--;
}
GTN_EXPORT int gtn_thread_routes(void) { return thread_routes(); }

/* Counters: *gemms, and counts[GTN_NREASONS] by reason slot. */
GTN_EXPORT void gtn_counts(uint64_t *gemms, uint64_t *counts) {
  *gemms = g_gemms.load();
  for (int i = 0; i < GTN_NREASONS; i++) counts[i] = g_counts[i].load();
}
GTN_EXPORT void gtn_reset_counts(void) {
  g_gemms = 0;
  for (auto &c : g_counts) c = 0;
}
GTN_EXPORT size_t gtn_cache_size(void) {
  std::shared_lock<std::shared_mutex> l(g_mu);
  return g_cache.size();
}

