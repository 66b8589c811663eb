#pragma once
// Structure-aware mutation of any protobuf message through protobuf's reflection API: the
// part of libprotobuf-mutator (what ONNX Runtime's fuzzers use) that fuzz_onnx_structure
// needs, written here because Debian 12 does not package libprotobuf-mutator. Flipping
// bytes of a serialized model mostly breaks its wire format, so the loader rejects it
// early; changing one field of the parsed tree keeps it a ModelProto, and the fuzzer gets
// past the parser into the checker, the importer and the ops.
//
// This file knows nothing of ONNX; onnx_mutator.hpp adds the graph-aware mutations.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "fuzz_random.hpp"

namespace recur::fuzz {

// A field of one message in a tree (a repeated field as a whole).
struct FieldRef {
  google::protobuf::Message* message;
  const google::protobuf::FieldDescriptor* field;
};

// Every field set in `root` and in the messages under it, depth first.
std::vector<FieldRef> set_fields(google::protobuf::Message& root);

// Rewrites `size` bytes in place into at most `max_size` and returns the new size
// (LLVMFuzzerMutate in the harness, which brings libFuzzer's comparison tracing and
// dictionaries into string fields). May be empty.
using ByteMutator = std::function<std::size_t(std::uint8_t* data, std::size_t size, std::size_t max_size)>;

struct MutationContext {
  Rng& rng;
  const std::vector<std::string>& dictionary;  // strings worth writing into string fields
  const ByteMutator& bytes;
};

// One random change of `ref`: a scalar (or one element of a repeated scalar) becomes an
// interesting value, a string or bytes field is cut, grown or rewritten, or the elements
// of a repeated field are swapped, duplicated or deleted; a set sub-message may be cleared.
// false when nothing changed (an empty repeated field, say).
bool mutate_field(const FieldRef& ref, MutationContext& ctx);
// A random field of `message`'s type, set or not, given a value: a repeated field gets one
// more element (a copy of one it has, or a new one), a singular field a new value (an
// unset message field becomes an empty message). The way to fields a model never had.
bool add_field(google::protobuf::Message& message, MutationContext& ctx);

// Values that break code reading integers: 0, +-1, 2, small, the int32/int64 limits and
// powers of two around them, current +- 1.
std::int64_t interesting_integer(Rng& rng, std::int64_t current);
// The same for floating point: NaN, +-inf, -0, huge, tiny, current * 2.
double interesting_floating(Rng& rng, double current);
// A new length for a string of `size` bytes, biased to lengths that are not a multiple of
// 4 or 8 (element sizes) and to lengths shorter than one element.
std::size_t interesting_length(Rng& rng, std::size_t size);

// Element `from` of a repeated field appended again (any element type).
void append_copy(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field, int from);
// The last element of a repeated field moved to position `to`, the others keeping their order.
void move_last_to(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field, int to);
// Element `index` of a repeated field removed, the others keeping their order.
void remove_element(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field, int index);

}  // namespace recur::fuzz
