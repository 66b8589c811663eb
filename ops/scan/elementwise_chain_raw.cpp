// A one-block chain's calls on raw pointers (elementwise_chain_raw_detail.hpp).
#include <recur/ops/scan/elementwise_chain_raw_detail.hpp>

#include <algorithm>

#include <recur/ops/scan/elementwise_chain_blocks_detail.hpp>

namespace recur::scan_engine::detail::chain {

template <class T>
void run_forward(const ChainProgram& p, const ChainLayout& layout, std::span<const T* const> inputs,
                 std::span<T* const> values) {
  const CompiledForward& f = *layout.forward_calls;
  const auto block = static_cast<std::size_t>(layout.block);
  T* const scratch_values = scratch<T>(0, p.code.size() * block);
  boost::container::small_vector<T*, 48> bases(f.bases.size, nullptr);
  for (std::size_t i = 0; i < inputs.size(); ++i) bases[f.bases.inputs + i] = const_cast<T*>(inputs[i]);
  if (layout.copies > 0) bases[f.bases.copies] = scratch<T>(2, layout.copies * block);
  for (std::size_t k = 0; k < p.code.size(); ++k)
    bases[f.bases.values + k] = values[k] ? values[k] : scratch_values + k * block;
  run_calls<T>(f.calls, bases.data());
}

const CompiledBackward& compiled_backward(const ChainProgram& p, const ChainLayout& layout, const ChainPasses& plan,
                                          std::shared_ptr<const CompiledBackward>& hold) {
  return layout.backward_calls.get(
      [&](const CompiledBackward& c) { return c.needs == plan.needs && c.defined == plan.defined; },
      [&] { return std::make_shared<const CompiledBackward>(compile_backward(p, layout, plan)); }, hold);
}

template <class T>
void run_backward(const ChainProgram& p, const ChainLayout& layout, const CompiledBackward& f,
                  std::span<const T* const> inputs, std::span<const T* const> values,
                  std::span<const T* const> out_grads, std::span<T* const> grads) {
  const BackwardBases& b = f.bases;
  const auto block = static_cast<std::size_t>(layout.block);
  boost::container::small_vector<T*, 64> bases(b.size, nullptr);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    bases[b.inputs + i] = const_cast<T*>(inputs[i]);
    bases[b.grads + i] = grads[i];
  }
  T* const remade = p.recomputed.empty() ? nullptr : scratch<T>(0, p.recomputed.size() * block);
  for (std::size_t k = 0; k < p.code.size(); ++k) bases[b.values + k] = const_cast<T*>(values[k]);
  for (std::size_t r = 0; r < p.recomputed.size(); ++r)  // read where made again unless kept (as the interpreter)
    if (!values[p.recomputed[r]]) bases[b.values + p.recomputed[r]] = remade + r * block;
  bases[b.remade] = remade;
  for (std::size_t o = 0; o < out_grads.size(); ++o) bases[b.out_grads + o] = const_cast<T*>(out_grads[o]);
  bases[b.registers] = scratch<T>(1, (p.code.size() + p.slots.size()) * block);
  if (layout.copies_read > 0) bases[b.copies] = scratch<T>(2, layout.copies_read * block);
  // A broadcast input's partial sums of the one block, zeroed (chain::backward).
  T* const partials = layout.partial_size > 0 ? scratch<T>(3, static_cast<std::size_t>(layout.partial_size)) : nullptr;
  if (partials) std::fill_n(partials, layout.partial_size, T(0));
  bases[b.partials] = partials;
  run_calls<T>(f.calls, bases.data());
}

template void run_forward<float>(const ChainProgram&, const ChainLayout&, std::span<const float* const>,
                                 std::span<float* const>);
template void run_forward<double>(const ChainProgram&, const ChainLayout&, std::span<const double* const>,
                                  std::span<double* const>);
template void run_backward<float>(const ChainProgram&, const ChainLayout&, const CompiledBackward&,
                                  std::span<const float* const>, std::span<const float* const>,
                                  std::span<const float* const>, std::span<float* const>);
template void run_backward<double>(const ChainProgram&, const ChainLayout&, const CompiledBackward&,
                                   std::span<const double* const>, std::span<const double* const>,
                                   std::span<const double* const>, std::span<double* const>);

}  // namespace recur::scan_engine::detail::chain
