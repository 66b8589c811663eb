#pragma once
// Which OpenBLAS kernels recur's matrix products run on. When the library loads, recur
// moves OpenBLAS to its AVX-512 kernels on a CPU that has AVX-512 but that OpenBLAS did not
// map to them (its Haswell kernels reach about half the speed there). The user's own
// `OPENBLAS_CORETYPE` always wins; `RECUR_BLAS_CORETYPE=keep` turns the switch off.
#include <string>

namespace recur {

// What blas_info() reports.
struct BlasInfo {
  std::string core{};         // OpenBLAS's kernel set now (`openblas_get_corename()`), e.g. "SkylakeX"
  std::string openblas_core{};  // the one OpenBLAS picked by itself as it loaded
  std::string config{};       // `openblas_get_config()`: version, build options, core
  bool switched = false;      // true when recur moved OpenBLAS from openblas_core to core
  std::string reason{};       // why recur switched, or why it left OpenBLAS's choice alone
};

// The kernels recur's products run on, and whether recur chose them.
BlasInfo blas_info();

}  // namespace recur
