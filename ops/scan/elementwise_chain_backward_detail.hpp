#pragma once
// Internal to the elementwise chain: its backward on values (elementwise_chain_backward.cpp).
#include <cstdint>
#include <span>

#include <recur/autodiff/op_box.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>

namespace recur::scan_engine::detail::chain {

// The chain's rules per element, block by block, reading the values forward kept
// (values[k]: instruction k's, every element; nullptr where backward makes them again or
// does not read them); out_grads per output (undefined where none reached it), needs per
// input. T is float or double.
template <class T>
Grads<Tensor> backward(const ChainProgram& p, const InputList<Tensor>& inputs, std::span<const T* const> values,
                       const InputList<Tensor>& out_grads, std::span<const std::uint8_t> needs);

}  // namespace recur::scan_engine::detail::chain
