#pragma once
// ONNX-aware mutations of a ModelProto for fuzz_onnx_structure: on top of proto_mutator's
// field-by-field changes, the edits that make new graphs rather than broken protobufs.
// Edges rewired to values that exist (in the graph or around a body graph), nodes and
// attributes (body graphs with them) copied from one place to another, op types swapped
// for others recur imports, initializers whose raw_data no longer fits their dims and
// data_type, graph inputs and outputs retyped. A seed gives the same mutation every time.
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuzz_random.hpp"
#include "proto_mutator.hpp"

namespace recur::fuzz {

// One to four random mutations of `model`. `op_types` are the op types a node may be
// turned into (with those the model already has); `bytes` may be empty.
void mutate_model(::onnx::ModelProto& model, Rng& rng, const std::vector<std::string>& op_types,
                  const ByteMutator& bytes);

// A run of nodes of `other`'s main graph spliced into `model`'s, with the initializers and
// graph inputs of `other` they read that `model` lacks; false when `other` has no node.
bool cross_over(::onnx::ModelProto& model, const ::onnx::ModelProto& other, Rng& rng);

}  // namespace recur::fuzz
