// The library's per-call path in C++: `torch.ops.cudal2.linear(x, W, bias)`, and `front`, the
// plain Python builtin that `cudal2.linear` calls in eager mode (the same function after a strict
// check of its inputs).
//
// Guarantees:
// - one hash lookup of (M, N, K) among the kernels Python registered (`add_kernel`: the served
//   entries, resolved for their shape); on a hit, the output (and the workspace, if any) comes
//   from torch's caching allocator and every launch of the entry is enqueued with
//   cuLaunchKernelEx on torch's current stream (capturable in CUDA graphs); tensor maps are
//   encoded per call over this call's pointers;
// - everything else goes to at::linear, the kernel F.linear runs: no entry for the shape, an
//   operand not 256-byte aligned, a bias (the vendor fuses it; a separate add could lose), a
//   tensor that is not a dense fp16 CUDA matrix, autograd in use, or operands on another device
//   than the kernel's module (it launches only in the context it loaded into); every fallback is
//   counted by reason, every hit per kernel (`stats`);
// - a launch that fails removes its kernel from the table (recorded in `stats`) and the call
//   falls back: a broken kernel costs itself, never the caller;
// - a shape Python declared served but has not loaded yet (`set_pending`: exact shapes, and the
//   (N, K) of M-range entries) is loaded on its first call through Python's loader (under the
//   GIL), once: a shape the loader declines goes to the vendor from then on without asking again;
// - `front` raises the library's InputError (one line) for host tensors, a dtype other than fp16
//   or shapes that do not multiply, makes a strided x dense, and is otherwise `linear`.
//
// - `launch_ptrs` is the same lookup and launch for cupy arrays (pointers and stream from cupy, C
//   allocated by cupy), for shapes whose entry needs no workspace.
//
// Does not: load modules itself (Python loads and hash-checks them and passes the function
// handles), resolve launch specs (Python does, per shape), or synchronize.
#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/core/GradMode.h>
#include <cuda.h>
#include <dlfcn.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// Argument kinds, as Python passes them (see cudal2/library/dispatch.py).
enum Kind : int { ARG_A = 0, ARG_B, ARG_C, ARG_WS, ARG_M, ARG_N, ARG_K, ARG_INT, ARG_TMAP };

struct Arg {
  int kind;
  int64_t value;      // ARG_INT: the value; ARG_WS: byte offset; ARG_TMAP: operand (0 A, 1 B, 2 C)
  uint32_t box[2];    // ARG_TMAP
  int swizzle;        // ARG_TMAP: 0, 32, 64 or 128
};

struct Launch {
  CUfunction fn;
  unsigned grid[3], block[3], cluster[3];
  unsigned smem;
  std::vector<Arg> args;
};

struct Kernel {
  std::string id;
  int64_t ws_bytes;
  std::vector<Launch> launches;
  std::unique_ptr<std::atomic<int64_t>> hits{new std::atomic<int64_t>(0)};
  std::string disabled;  // why it left the table, if it did
  int64_t device = -1;   // the device whose context its module loaded into: it launches only there
};

using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's entry points, found in the driver library the process already uses: nothing to
// link at build time, and the same libcuda that Python's loader used.
struct Driver {
  LaunchEx launch = nullptr;
  EncodeTiled encode = nullptr;
  Driver() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    TORCH_CHECK(h, "cudal2: cannot open libcuda.so.1 (no NVIDIA driver?)");
    launch = reinterpret_cast<LaunchEx>(dlsym(h, "cuLaunchKernelEx"));
    encode = reinterpret_cast<EncodeTiled>(dlsym(h, "cuTensorMapEncodeTiled"));
    TORCH_CHECK(launch && encode, "cudal2: the driver lacks cuLaunchKernelEx or cuTensorMapEncodeTiled");
  }
};

Driver& driver() {
  static Driver d;
  return d;
}

// The tables' key is the whole shape, compared whole: a packed 64-bit key ((M << 42) ^ (N << 21)
// ^ K) made shapes collide (M + 2^22 rows, or K of 2^21 or more), and a call at such a shape ran
// the kernel registered for the other one, resolved for its grid (review 42).
struct ShapeKey {
  int64_t M, N, K;
  bool operator==(const ShapeKey& o) const { return M == o.M && N == o.N && K == o.K; }
};
struct ShapeHash {
  size_t operator()(const ShapeKey& s) const noexcept {
    uint64_t h = uint64_t(s.M) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ uint64_t(s.N)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31) ^ uint64_t(s.K)) * 0x94D049BB133111EBull;
    return size_t(h ^ (h >> 32));
  }
};
template <class V>
using ShapeMap = std::unordered_map<ShapeKey, V, ShapeHash>;

inline ShapeKey shape_key(int64_t M, int64_t N, int64_t K) { return ShapeKey{M, N, K}; }

std::mutex g_mu;                                 // registration only; calls read without it
std::vector<std::unique_ptr<Kernel>> g_kernels;  // never shrinks: indices stay valid
ShapeMap<Kernel*> g_table;
enum Fallback { NO_ENTRY = 0, UNALIGNED, BIAS, NOT_DENSE_FP16, AUTOGRAD, FAILED, OTHER_DEVICE, N_FALLBACKS };
const char* kFallbackNames[N_FALLBACKS] = {"no_entry", "unaligned", "bias", "not_dense_fp16", "autograd", "failed",
                                           "other_device"};
std::atomic<int64_t> g_fallbacks[N_FALLBACKS];

// Python's side of lazy loading, and the exception type `front` raises (leaked on purpose: they
// must outlive any call made during interpreter shutdown).
PyObject* g_loader = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_slow = nullptr;              // cudal2.linear's long way in Python (`linear_door`)
std::atomic<bool> g_default{false};      // the table serves the default library (`linear_door`)
ShapeMap<bool> g_pending;     // exact shapes not loaded yet -> asked already
ShapeMap<bool> g_ranged;      // (N, K) of M-range entries
ShapeMap<bool> g_declined;    // shapes the loader did not register

// Ask Python to load and register the entry for (M, N, K); true when the table now has it.
bool load_pending(int64_t M, int64_t N, int64_t K) {
  const ShapeKey key = shape_key(M, N, K);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const bool exact = g_pending.erase(key) > 0;
    if (!exact && (!g_ranged.count(shape_key(0, N, K)) || g_declined.count(key))) return false;
    if (!g_loader) return false;
  }
  bool ok = false;
  {
    pybind11::gil_scoped_acquire gil;
    try {
      ok = pybind11::reinterpret_borrow<pybind11::object>(g_loader)(M, N, K).cast<bool>();
    } catch (pybind11::error_already_set& e) {
      ok = false;   // the loader disables a broken entry itself; the call goes to the vendor
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (!ok) g_declined[key] = true;
  return ok && g_table.count(key);
}

at::Tensor vendor(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& bias, Fallback why) {
  g_fallbacks[why].fetch_add(1, std::memory_order_relaxed);
  const bool has_bias = bias.has_value() && bias->defined();
  if ((why == NO_ENTRY || why == UNALIGNED) && !has_bias && !x.requires_grad() && !w.requires_grad()) {
    // A dense fp16 x and W, no bias, nothing for autograd to record: the mm that F.linear ends in
    // (linear -> matmul -> mm on the rows of x and Wᵀ: the same cuBLAS call), entered below
    // autograd's layer and without the two composite hops, to keep the host time a call through
    // here adds to F.linear's own small.
    at::AutoDispatchBelowAutograd below;
    if (x.dim() == 2) return at::mm(x, w.t());   // no views to make: each is a tensor's worth of host time
    const int64_t K = w.size(1);
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = w.size(0);
    return at::mm(x.view({x.numel() / K, K}), w.t()).view(out_shape);
  }
  return at::linear(x, w, bias);
}

bool encode_tmap(CUtensorMap* out, void* ptr, uint64_t inner, uint64_t outer, const Arg& a) {
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * 2};
  const cuuint32_t box[2] = {a.box[0], a.box[1]};
  const cuuint32_t elem[2] = {1, 1};
  CUtensorMapSwizzle sw = a.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                          : a.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : a.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                            : CU_TENSOR_MAP_SWIZZLE_NONE;
  return driver().encode(out, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, ptr, dims, strides, box, elem,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Enqueue every launch of `k`; false on the first failure (nothing is synchronized).
bool run(Kernel& k, void* a, void* b, void* c, void* ws, int32_t M, int32_t N, int32_t K, CUstream stream) {
  constexpr int kMaxArgs = 32;
  for (const Launch& l : k.launches) {
    if (l.args.size() > kMaxArgs) return false;
    uint64_t ptrs[kMaxArgs];
    int32_t ints[kMaxArgs];
    alignas(64) CUtensorMap maps[4];
    int n_maps = 0;
    void* params[kMaxArgs];
    for (size_t i = 0; i < l.args.size(); ++i) {
      const Arg& g = l.args[i];
      switch (g.kind) {
        case ARG_A: ptrs[i] = reinterpret_cast<uint64_t>(a); params[i] = &ptrs[i]; break;
        case ARG_B: ptrs[i] = reinterpret_cast<uint64_t>(b); params[i] = &ptrs[i]; break;
        case ARG_C: ptrs[i] = reinterpret_cast<uint64_t>(c); params[i] = &ptrs[i]; break;
        case ARG_WS: ptrs[i] = reinterpret_cast<uint64_t>(ws) + uint64_t(g.value); params[i] = &ptrs[i]; break;
        case ARG_M: ints[i] = M; params[i] = &ints[i]; break;
        case ARG_N: ints[i] = N; params[i] = &ints[i]; break;
        case ARG_K: ints[i] = K; params[i] = &ints[i]; break;
        case ARG_INT: ints[i] = int32_t(g.value); params[i] = &ints[i]; break;
        case ARG_TMAP: {
          if (n_maps == 4) return false;
          // A: M rows of K; B: N rows of K; C: M rows of N (dense row-major), as module.py encodes them.
          void* p = g.value == 0 ? a : g.value == 1 ? b : c;
          const uint64_t inner = g.value == 2 ? N : K, outer = g.value == 1 ? N : M;
          if (!encode_tmap(&maps[n_maps], p, inner, outer, g)) return false;
          params[i] = &maps[n_maps++];
          break;
        }
        default: return false;
      }
    }
    CUlaunchConfig cfg = {};
    cfg.gridDimX = l.grid[0]; cfg.gridDimY = l.grid[1]; cfg.gridDimZ = l.grid[2];
    cfg.blockDimX = l.block[0]; cfg.blockDimY = l.block[1]; cfg.blockDimZ = l.block[2];
    cfg.sharedMemBytes = l.smem;
    cfg.hStream = stream;
    CUlaunchAttribute attr;
    if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1) {
      attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr.value.clusterDim.x = l.cluster[0];
      attr.value.clusterDim.y = l.cluster[1];
      attr.value.clusterDim.z = l.cluster[2];
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    if (driver().launch(&cfg, l.fn, params, nullptr) != CUDA_SUCCESS) return false;
  }
  return true;
}

// The shape's kernel, loading a pending entry on its first call; nullptr: not served here.
Kernel* find_kernel(int64_t M, int64_t N, int64_t K) {
  auto it = g_table.find(shape_key(M, N, K));
  if (it != g_table.end()) return it->second;
  if ((g_pending.empty() && g_ranged.empty()) || !load_pending(M, N, K)) return nullptr;
  it = g_table.find(shape_key(M, N, K));
  return it == g_table.end() ? nullptr : it->second;
}

// `run`, counting a hit; a launch that fails takes the kernel out of the table, so every later call
// of the shape goes to the vendor.
bool launch(Kernel& k, void* a, void* b, void* c, void* ws, int64_t M, int64_t N, int64_t K, CUstream stream) {
  if (!run(k, a, b, c, ws, int32_t(M), int32_t(N), int32_t(K), stream)) {
    std::lock_guard<std::mutex> lock(g_mu);
    k.disabled = "a launch failed";
    g_table.erase(shape_key(M, N, K));
    return false;
  }
  k.hits->fetch_add(1, std::memory_order_relaxed);
  return true;
}

at::Tensor serve(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& bias) {
  if (bias.has_value() && bias->defined()) return vendor(x, w, bias, BIAS);
  if (x.scalar_type() != at::kHalf || w.scalar_type() != at::kHalf || !x.is_cuda() || !w.is_cuda() ||
      w.dim() != 2 || x.dim() < 1 || !x.is_contiguous() || !w.is_contiguous() || x.is_neg() || w.is_neg())
    return vendor(x, w, bias, NOT_DENSE_FP16);   // (a negative-bit view's memory holds the un-negated values)
  if (c10::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) return vendor(x, w, bias, AUTOGRAD);
  const int64_t K = w.size(1), N = w.size(0);
  if (x.size(-1) != K || K == 0) return vendor(x, w, bias, NOT_DENSE_FP16);
  const int64_t M = x.numel() / K;
  Kernel* const kp = find_kernel(M, N, K);
  if (kp == nullptr) return vendor(x, w, bias, NO_ENTRY);
  if (reinterpret_cast<uintptr_t>(x.data_ptr()) % 256 || reinterpret_cast<uintptr_t>(w.data_ptr()) % 256)
    return vendor(x, w, bias, UNALIGNED);
  // Its functions launch only in the context its module loaded into (one device per process is
  // served); F.linear computes the rest, and says so where x and W are on different devices.
  if (x.get_device() != kp->device || w.get_device() != kp->device) return vendor(x, w, bias, OTHER_DEVICE);
  Kernel& k = *kp;
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
  out_shape.back() = N;
  at::Tensor c = at::empty(out_shape, x.options());
  at::Tensor ws;
  if (k.ws_bytes) ws = at::empty({k.ws_bytes}, x.options().dtype(at::kByte));
  // torch's current stream through the device-generic guard: no CUDA build of torch is needed to
  // compile this file, and it is the stream F.linear would use.
  const CUstream stream = static_cast<CUstream>(
      c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(x.device()).native_handle());
  if (!launch(k, x.data_ptr(), w.data_ptr(), c.data_ptr(), k.ws_bytes ? ws.data_ptr() : nullptr, M, N, K, stream))
    return vendor(x, w, bias, FAILED);
  return c;
}

// The per-call path for arrays that are not torch tensors (cupy): the caller's framework checked
// them, allocated C and names the stream; this looks the shape up (loading a pending entry as
// `serve` does) and enqueues its launches. 0: enqueued; 1: not served here (no entry, an operand
// not 256-byte aligned, another device, or an entry that needs a workspace, which the caller's
// Python path allocates and launches); 2: a launch failed (its kernel left the table, as in
// `serve`). Counts hits only: the caller counts its own fallbacks.
int launch_ptrs(int64_t M, int64_t N, int64_t K, uint64_t a, uint64_t b, uint64_t c, uint64_t stream,
                int64_t device) {
  Kernel* const k = find_kernel(M, N, K);
  if (k == nullptr || a % 256 || b % 256 || k->ws_bytes || k->device != device) return 1;
  return launch(*k, reinterpret_cast<void*>(a), reinterpret_cast<void*>(b), reinterpret_cast<void*>(c), nullptr,
                M, N, K, reinterpret_cast<CUstream>(stream)) ? 0 : 2;
}

// Python side: register one kernel for one shape. launches: [(fn_handle, grid, block, cluster,
// smem, [(kind, value, box0, box1, swizzle), ...]), ...].
void add_kernel(const std::string& id, int64_t M, int64_t N, int64_t K, int64_t ws_bytes,
                const std::vector<std::tuple<uint64_t, std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>,
                                             int64_t, std::vector<std::vector<int64_t>>>>& launches,
                int64_t device) {
  auto k = std::make_unique<Kernel>();
  k->id = id;
  k->ws_bytes = ws_bytes;
  k->device = device;
  for (const auto& [fn, grid, block, cluster, smem, args] : launches) {
    TORCH_CHECK(grid.size() == 3 && block.size() == 3 && cluster.size() == 3, "cudal2: bad launch dims");
    Launch l;
    l.fn = reinterpret_cast<CUfunction>(fn);
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = unsigned(grid[d]); l.block[d] = unsigned(block[d]); l.cluster[d] = unsigned(cluster[d]);
    }
    l.smem = unsigned(smem);
    for (const auto& a : args) {
      TORCH_CHECK(a.size() == 5, "cudal2: bad argument record");
      l.args.push_back(Arg{int(a[0]), a[1], {uint32_t(a[2]), uint32_t(a[3])}, int(a[4])});
    }
    k->launches.push_back(std::move(l));
  }
  driver();  // fail here, at registration, not on a call
  std::lock_guard<std::mutex> lock(g_mu);
  g_table[shape_key(M, N, K)] = k.get();
  g_kernels.push_back(std::move(k));
}

void clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_default.store(false, std::memory_order_relaxed);   // another library may now fill the table
  g_table.clear();  // kernels stay allocated: a call in flight may still hold one
  g_pending.clear();
  g_ranged.clear();
  g_declined.clear();
}

// What Python serves but loads on first use: exact (M, N, K) and the (N, K) of M-range entries;
// `loader(M, N, K) -> bool` registers one; `input_error` is the exception type `front` raises.
void set_pending(const std::vector<std::tuple<int64_t, int64_t, int64_t>>& exact,
                 const std::vector<std::tuple<int64_t, int64_t>>& ranged, pybind11::object loader,
                 pybind11::object input_error) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [M, N, K] : exact) g_pending[shape_key(M, N, K)] = false;
  for (const auto& [N, K] : ranged) g_ranged[shape_key(0, N, K)] = true;
  Py_XDECREF(g_loader);
  Py_XDECREF(g_input_error);
  g_loader = loader.inc_ref().ptr();
  g_input_error = input_error.inc_ref().ptr();
}

[[noreturn]] void input_error(const std::string& msg) {
  PyErr_SetString(g_input_error ? g_input_error : PyExc_ValueError, msg.c_str());
  throw pybind11::error_already_set();
}

std::string shape_str(const at::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + (t.dim() == 1 ? ",)" : ")");
}

// cudal2.linear's eager front door: the library's one-line errors, then `linear`.
at::Tensor front(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& bias) {
  if (w.dim() != 2 || x.dim() < 1 || x.size(-1) != w.size(1))
    input_error("cudal2.linear: x is " + shape_str(x) + " and W " + shape_str(w) + "; want x (..., K) and W (N, K)");
  if (bias.has_value() && bias->defined() && (bias->dim() != 1 || bias->size(0) != w.size(0)))
    input_error("cudal2.linear: bias is " + shape_str(*bias) + "; want (" + std::to_string(w.size(0)) + ",)");
  const std::pair<const char*, const at::Tensor*> named[] = {{"x", &x}, {"W", &w}};
  for (const auto& [name, t] : named) {
    if (!t->is_cuda())
      input_error(std::string("cudal2: ") + name + " is in host memory; cudal2 computes on CUDA arrays (move it to the GPU)");
    if (t->scalar_type() != at::kHalf)
      input_error(std::string("cudal2: ") + name + " is " + std::string(c10::toString(t->scalar_type())) +
                  "; cudal2 computes fp16 GEMMs (cast it, e.g. .half())");
  }
  return serve(x.is_contiguous() ? x : x.contiguous(), w, bias);
}

// cudal2.linear itself, once the dispatcher is built: a builtin taking (x, w, bias=None) with no
// Python frame and no pybind argument casting, so an eager call costs the host what F.linear's
// own binding costs (a Python wrapper, or pybind's casting, added 1-2 us of 17-23 on the H100
// host). While the dispatcher serves the default library (`set_door`) and the arguments are
// tensors, it is `front`; otherwise (not yet, another library, other arguments or keywords) it is
// Python's long way, called with the same arguments, which installs the default library and then
// says so here. torch.compile never runs it: Python registers the long way as its polyfill.

PyObject* linear_door(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* bias = nargs == 3 ? args[2] : nullptr;
  bool fast = g_default.load(std::memory_order_relaxed) && (nargs == 2 || nargs == 3);
  if (fast && kwnames) {   // only `bias=` by keyword
    fast = nargs == 2 && PyTuple_GET_SIZE(kwnames) == 1 &&
           PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "bias") == 0;
    bias = args[2];
  }
  if (bias == Py_None) bias = nullptr;
  if (!fast || !THPVariable_Check(args[0]) || !THPVariable_Check(args[1]) || (bias && !THPVariable_Check(bias))) {
    if (!g_slow) {
      PyErr_SetString(PyExc_RuntimeError, "cudal2: the dispatcher's door has no Python path (set_door)");
      return nullptr;
    }
    return PyObject_Vectorcall(g_slow, args, nargs, kwnames);
  }
  HANDLE_TH_ERRORS
  try {
    c10::optional<at::Tensor> b;
    if (bias) b = THPVariable_Unpack(bias);
    return THPVariable_Wrap(front(THPVariable_Unpack(args[0]), THPVariable_Unpack(args[1]), b));
  } catch (pybind11::error_already_set& e) {   // front's InputError, or the loader's
    e.restore();
    return nullptr;
  }
  END_HANDLE_TH_ERRORS
}

PyMethodDef kDoor = {"linear_door", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(linear_door)),
                     METH_FASTCALL | METH_KEYWORDS,
                     "linear_door(x, w, bias=None): cudal2.linear as a builtin (see dispatch.cpp)."};

// Python side: the long way (`slow`; a replaced one is leaked on purpose, as g_loader: a call may
// still be in it) and whether the table now serves the default library (`clear` says it no longer does).
void set_door(pybind11::object slow, bool is_default) {
  if (slow.ptr() != g_slow) g_slow = slow.inc_ref().ptr();
  g_default.store(is_default, std::memory_order_relaxed);
}

// (hits per kernel id, fallbacks per reason, disabled kernels with why)
std::tuple<std::unordered_map<std::string, int64_t>, std::unordered_map<std::string, int64_t>,
           std::unordered_map<std::string, std::string>>
stats() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::unordered_map<std::string, int64_t> hits, falls;
  std::unordered_map<std::string, std::string> disabled;
  for (const auto& k : g_kernels) {
    if (int64_t h = k->hits->load()) hits[k->id] += h;
    if (!k->disabled.empty()) disabled[k->id] = k->disabled;
  }
  for (int i = 0; i < N_FALLBACKS; ++i)
    if (int64_t f = g_fallbacks[i].load()) falls[kFallbackNames[i]] = f;
  return {hits, falls, disabled};
}

void reset_stats() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& k : g_kernels) k->hits->store(0);
  for (auto& f : g_fallbacks) f.store(0);
}

}  // namespace

TORCH_LIBRARY(cudal2, m) { m.def("linear(Tensor x, Tensor w, Tensor? bias=None) -> Tensor"); }
TORCH_LIBRARY_IMPL(cudal2, CUDA, m) { m.impl("linear", &serve); }
// Any other device: exactly F.linear (a patched layer given a CPU input keeps working).
TORCH_LIBRARY_IMPL(cudal2, CPU, m) { m.impl("linear", [](const at::Tensor& x, const at::Tensor& w,
                                                         const c10::optional<at::Tensor>& b) { return at::linear(x, w, b); }); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // The same function as the op, called directly: eager calls skip the dispatcher's boxing (the
  // op is what torch.compile traces; a CUDA graph captures either).
  m.def("linear", &serve, pybind11::arg("x"), pybind11::arg("w"), pybind11::arg("bias") = pybind11::none());
  m.def("front", &front, pybind11::arg("x"), pybind11::arg("w"), pybind11::arg("bias") = pybind11::none());
  m.add_object("linear_door", pybind11::reinterpret_steal<pybind11::object>(
                                  PyCFunction_NewEx(&kDoor, nullptr, m.attr("__name__").ptr())));
  m.def("launch_ptrs", &launch_ptrs);
  m.def("set_door", &set_door);
  m.def("set_pending", &set_pending);
  m.def("add_kernel", &add_kernel);
  m.def("clear", &clear);
  m.def("stats", &stats);
  m.def("reset_stats", &reset_stats);
}
