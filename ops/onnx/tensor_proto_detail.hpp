#pragma once
// TensorProto <-> recur Tensor, through the ONNX library's ParseData where it has one.
#include <cstdint>
#include <string_view>

#include <onnx/onnx_pb.h>

#include <recur/core/tensor.hpp>

namespace recur::onnx::detail {

// The recur dtype holding an ONNX element type (see model.hpp); UnsupportedError naming
// `where` for the types recur cannot hold.
DType dtype_of_element_type(std::int32_t element_type, std::string_view where);
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, std::string_view where);

}  // namespace recur::onnx::detail
