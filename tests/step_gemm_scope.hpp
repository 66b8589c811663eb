#pragma once
// The per-step products' backend (core/repeated_gemm.hpp) for one scope, then the process's
// choice again, also when a test's assertion leaves the scope early.
#include <recur/core/repeated_gemm.hpp>

namespace recur::testing {

struct UseStepGemm {
  explicit UseStepGemm(blas::StepGemm which) : before(blas::step_gemm()) { blas::set_step_gemm(which); }
  ~UseStepGemm() { blas::set_step_gemm(before); }
  UseStepGemm(const UseStepGemm&) = delete;
  UseStepGemm& operator=(const UseStepGemm&) = delete;
  blas::StepGemm before;
};

}  // namespace recur::testing
