#pragma once
// Internal to the elementwise chain: a chain compiled for one block (its layout's calls)
// run on raw pointers. The chain op's forward and backward run through these, and so does a
// captured loop that plans its buffers once for every step (planned_loop.cpp): the same calls on
// the same kernels, the same bits.
#include <memory>
#include <span>

#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>
#include <recur/ops/scan/elementwise_chain_layout_detail.hpp>
#include <recur/ops/scan/elementwise_chain_passes_detail.hpp>

namespace recur::scan_engine::detail::chain {

// The forward's calls (layout.forward_calls, which must be there) on inputs[i], input i's
// elements; instruction k's values go to values[k], or to a thread's scratch where it is nullptr.
template <class T>
void run_forward(const ChainProgram& p, const ChainLayout& layout, std::span<const T* const> inputs,
                 std::span<T* const> values);

// The backward's calls for `plan`, made at their first use and kept in the layout.
const CompiledBackward& compiled_backward(const ChainProgram& p, const ChainLayout& layout, const ChainPasses& plan,
                                          std::shared_ptr<const CompiledBackward>& hold);

// Those calls: values[k] instruction k's values where the backward reads them (nullptr: made
// again, or unread), out_grads[o] output o's gradient (nullptr: none reached it), grads[i]
// where input i's gradient goes (nullptr: not wanted; zeroed first where its slots sum into
// it, ChainLayout::writes). Partial sums of broadcast inputs in a thread's scratch.
template <class T>
void run_backward(const ChainProgram& p, const ChainLayout& layout, const CompiledBackward& f,
                  std::span<const T* const> inputs, std::span<const T* const> values,
                  std::span<const T* const> out_grads, std::span<T* const> grads);

}  // namespace recur::scan_engine::detail::chain
