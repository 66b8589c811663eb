#pragma once
// TensorProto <-> recur Tensor, through the ONNX library's ParseData where it has one.
#include <cstdint>
#include <string_view>

#include <onnx/onnx_pb.h>

#include <recur/core/tensor.hpp>

namespace recur::onnx_io::detail {

// The recur dtype holding an ONNX element type (see model.hpp); UnsupportedError naming
// `where` for the types recur cannot hold.
DType dtype_of_element_type(std::int32_t element_type, std::string_view where);
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, std::string_view where);
// Replaces the values of `proto` by those of `t` (of the dtype and shape tensor_from_proto
// gives for it), stored as raw_data in the proto's own element type (an int64 tensor read
// from an int8 initializer goes back as int8). ValueError naming `where` if `t` does not fit
// it: another shape or dtype, or an integer beyond the element type's range.
void assign_to_proto(::onnx::TensorProto& proto, const Tensor& t, std::string_view where);

}  // namespace recur::onnx_io::detail
