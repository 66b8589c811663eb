// Moves OpenBLAS to better kernels (AVX-512, or AVX2 where it chose older ones) when
// choose_kernel() says so, once, as recur loads.
//
// How: a DYNAMIC_ARCH OpenBLAS holds a table of kernels per CPU family and points its
// global `gotoblas` at one of them in its load-time constructor (gotoblas_dynamic_init,
// which reads OPENBLAS_CORETYPE). That constructor has run before any of recur's code, so
// setting the variable now is too late. OpenBLAS exports the pair that constructor uses:
// gotoblas_dynamic_quit() clears the pointer and gotoblas_dynamic_init() selects again
// (honouring OPENBLAS_CORETYPE) and runs the chosen table's init, which sets that table's
// blocking sizes (GEMM_P/Q/R). recur calls the pair with the variable set for the call only.
//
// Why this is safe (OpenBLAS 0.3.21, driver/others/dynamic.c, memory.c, kernel/setparam-ref.c):
//  - every BLAS call reads its kernels and block sizes from `gotoblas` when it starts;
//    nothing is cached across calls, and the thread pool's workers run whatever routine
//    the calling thread hands them;
//  - the work buffers (blas_memory_alloc) have one compile-time size for all tables, and
//    each table's init sizes its blocks to fit them;
//  - between quit and init `gotoblas` is null, so no BLAS call may run meanwhile: recur
//    switches once (std::call_once), from a static initializer of blas.cpp, i.e. before
//    main and before recur's first product. (A program that loads recur with dlopen while
//    other threads run BLAS should set RECUR_BLAS_CORETYPE=keep.)
// The result is checked with openblas_get_corename(); when the installed OpenBLAS has no
// such table (it then maps the name to an older one), OpenBLAS's own choice is restored.
#include <recur/core/blas_kernel.hpp>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

#include <recur/core/blas_kernel_detail.hpp>

#include <recur/core/openblas_cblas_detail.hpp>

namespace recur {
namespace blas::detail {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// OPENBLAS_CORETYPE = value for the lifetime of this object, then as it was.
class ScopedCoretype {
 public:
  explicit ScopedCoretype(const std::string& value) : saved_(env(kName)) { ::setenv(kName, value.c_str(), 1); }
  ~ScopedCoretype() {
    if (saved_) ::setenv(kName, saved_->c_str(), 1);
    else ::unsetenv(kName);
  }
  ScopedCoretype(const ScopedCoretype&) = delete;
  ScopedCoretype& operator=(const ScopedCoretype&) = delete;

 private:
  static constexpr const char* kName = "OPENBLAS_CORETYPE";
  std::optional<std::string> saved_;
};

// gotoblas_dynamic_init/quit exist only in DYNAMIC_ARCH builds, so they are looked up at
// run time in the library that defines openblas_get_corename, rather than linked.
struct DynamicArch {
  void (*init)() = nullptr;
  void (*quit)() = nullptr;
};

std::optional<DynamicArch> dynamic_arch_entry_points() {
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>(&openblas_get_corename), &where) == 0 || where.dli_fname == nullptr)
    return std::nullopt;
  void* lib = ::dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);  // already loaded: no new copy
  if (lib == nullptr) return std::nullopt;
  DynamicArch fns{reinterpret_cast<void (*)()>(::dlsym(lib, "gotoblas_dynamic_init")),
                  reinterpret_cast<void (*)()>(::dlsym(lib, "gotoblas_dynamic_quit"))};
  ::dlclose(lib);  // drops only the reference dlopen added; the library stays loaded
  if (fns.init == nullptr || fns.quit == nullptr) return std::nullopt;
  return fns;
}

BlasInfo select_best_kernel() {
  const std::string openblas_core = openblas_get_corename();
  const KernelChoice choice = choose_kernel({.cpu = detect_cpu_features(),
                                             .openblas_coretype_env = env("OPENBLAS_CORETYPE"),
                                             .recur_coretype_env = env("RECUR_BLAS_CORETYPE"),
                                             .openblas_core = openblas_core,
                                             .openblas_config = openblas_get_config()});
  BlasInfo info = apply_choice(choice, openblas_core, reselect_openblas_core);
  info.core = openblas_get_corename();
  info.config = openblas_get_config();
  return info;
}

}  // namespace

std::optional<std::string> reselect_openblas_core(const std::string& core) {
  const std::optional<DynamicArch> fns = dynamic_arch_entry_points();
  if (!fns) return std::nullopt;
  const ScopedCoretype scoped(core);
  fns->quit();
  fns->init();
  return std::string(openblas_get_corename());
}

namespace {
// Whether OpenBLAS, asked for `asked`, now runs it (any AVX-512 set when one was asked: a
// build may map Cooperlake to SkylakeX).
bool runs_what_was_asked(const std::string& asked, const std::string& now) {
  return is_avx512_core(asked) ? is_avx512_core(now) : same_name(now, asked);
}
}  // namespace

BlasInfo apply_choice(const KernelChoice& choice, const std::string& openblas_core, const Reselect& reselect) {
  BlasInfo info{.openblas_core = openblas_core, .reason = choice.reason};
  if (choice.core.empty()) return info;
  const std::optional<std::string> now = reselect(choice.core);
  if (!now) {
    info.reason += "; this OpenBLAS cannot select its kernels again, kept " + openblas_core;
  } else if (!runs_what_was_asked(choice.core, *now)) {
    reselect(openblas_core);
    info.reason += "; this OpenBLAS has no " + std::string(is_avx512_core(choice.core) ? "AVX-512" : choice.core) +
                   " kernels (asked " + choice.core + ", got " + *now + "), kept " + openblas_core;
  } else {
    info.switched = true;
  }
  return info;
}

const BlasInfo& select_best_kernel_once() {
  static std::once_flag once;
  static BlasInfo info;
  std::call_once(once, [] { info = select_best_kernel(); });
  return info;
}

}  // namespace blas::detail

BlasInfo blas_info() {
  BlasInfo info = blas::detail::select_best_kernel_once();
  info.core = openblas_get_corename();
  info.config = openblas_get_config();
  return info;
}

}  // namespace recur
