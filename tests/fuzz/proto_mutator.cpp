// Reflection-driven field mutations (proto_mutator.hpp). Every access goes through
// google::protobuf::Reflection, switched on FieldDescriptor::cpp_type(), so that the same
// code changes any message: ONNX's, or another format's if a harness wants it.
#include "proto_mutator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace recur::fuzz {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

namespace {

void collect(Message& message, std::vector<FieldRef>& out) {
  const Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* f : fields) {
    out.push_back({&message, f});
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(message, f); ++i) collect(*r->MutableRepeatedMessage(&message, f, i), out);
    } else {
      collect(*r->MutableMessage(&message, f), out);
    }
  }
}

// Integers wrap, as the wire format does: a value that does not fit the field is cut to it.
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

// A double out of float's range is undefined behaviour to convert; it becomes infinity, as
// a float computation would give.
float to_float(double v) {
  constexpr double largest = std::numeric_limits<float>::max();
  if (v > largest) return std::numeric_limits<float>::infinity();
  if (v < -largest) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

// Scalar access to a singular field (index < 0) or to one element of a repeated field, so
// that each kind of value has one mutation whatever the field's label.
std::int64_t get_integer(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64: return rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32: return rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<std::int64_t>(rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_ENUM: return rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
    case FieldDescriptor::CPPTYPE_BOOL: return rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f);
    default: return 0;
  }
}

void set_integer(Message* m, const FieldDescriptor* f, int i, std::int64_t v) {
  const Reflection* r = m->GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const auto x = static_cast<std::int32_t>(v);
      rep ? r->SetRepeatedInt32(m, f, i, x) : r->SetInt32(m, f, x);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: rep ? r->SetRepeatedInt64(m, f, i, v) : r->SetInt64(m, f, v); break;
    case FieldDescriptor::CPPTYPE_UINT32: {
      const auto x = static_cast<std::uint32_t>(v);
      rep ? r->SetRepeatedUInt32(m, f, i, x) : r->SetUInt32(m, f, x);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      const auto x = static_cast<std::uint64_t>(v);
      rep ? r->SetRepeatedUInt64(m, f, i, x) : r->SetUInt64(m, f, x);
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto x = static_cast<int>(v);
      rep ? r->SetRepeatedEnumValue(m, f, i, x) : r->SetEnumValue(m, f, x);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: rep ? r->SetRepeatedBool(m, f, i, v != 0) : r->SetBool(m, f, v != 0); break;
    default: break;
  }
}

double get_floating(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) return i >= 0 ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f);
  return i >= 0 ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
}

void set_floating(Message* m, const FieldDescriptor* f, int i, double v) {
  const Reflection* r = m->GetReflection();
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    i >= 0 ? r->SetRepeatedFloat(m, f, i, to_float(v)) : r->SetFloat(m, f, to_float(v));
  } else {
    i >= 0 ? r->SetRepeatedDouble(m, f, i, v) : r->SetDouble(m, f, v);
  }
}

std::string get_string(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  return i >= 0 ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
}

void set_string(Message* m, const FieldDescriptor* f, int i, std::string v) {
  const Reflection* r = m->GetReflection();
  i >= 0 ? r->SetRepeatedString(m, f, i, std::move(v)) : r->SetString(m, f, std::move(v));
}

// An enum field mostly takes one of its declared values (the others are kept as unknown
// fields by proto2, which the loader never sees), sometimes any integer.
std::int64_t new_integer(const FieldDescriptor* f, Rng& rng, std::int64_t current) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM && !rng.one_in(4)) {
    const auto* type = f->enum_type();
    return type->value(rng.below(type->value_count()))->number();
  }
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) return current == 0 ? 1 : 0;
  return interesting_integer(rng, current);
}

std::string new_string(std::string s, MutationContext& ctx) {
  Rng& rng = ctx.rng;
  switch (rng.below(7)) {
    case 0: {  // another length: cut, or grown with bytes of its own or random ones
      const std::size_t old = s.size();
      s.resize(interesting_length(rng, old));
      for (std::size_t k = old; k < s.size(); ++k)
        s[k] = old > 0 && rng.one_in(2) ? s[rng.below(old)] : static_cast<char>(rng.next());
      return s;
    }
    case 1:  // a few bits flipped
      if (!s.empty())
        for (int k = 1 + rng.below(4); k > 0; --k) s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
      return s;
    case 2:  // a slice of it repeated: names such as "x_x", lengths one element too long
      if (!s.empty()) {
        const std::size_t from = rng.below(s.size());
        const std::size_t len = 1 + rng.below(std::min<std::size_t>(s.size() - from, 16));
        s.insert(rng.below(s.size() + 1), s.substr(from, len));
      }
      return s;
    case 3:
    case 4:
      if (!ctx.dictionary.empty()) return rng.pick(ctx.dictionary);
      return s;
    case 5:
      if (ctx.bytes) {
        const std::size_t size = s.size();
        s.resize(std::max<std::size_t>(2 * size, size + 64));
        s.resize(ctx.bytes(reinterpret_cast<std::uint8_t*>(s.data()), size, s.size()));
      }
      return s;
    default: return {};
  }
}

// One element (i >= 0) or the singular field (i < 0) given a new value of its kind; a
// message is cleared (its contents are reached as fields of their own).
void mutate_value(Message* m, const FieldDescriptor* f, int i, MutationContext& ctx) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      set_floating(m, f, i, interesting_floating(ctx.rng, get_floating(*m, f, i)));
      break;
    case FieldDescriptor::CPPTYPE_STRING: set_string(m, f, i, new_string(get_string(*m, f, i), ctx)); break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (i >= 0) m->GetReflection()->MutableRepeatedMessage(m, f, i)->Clear();
      else m->GetReflection()->ClearField(m, f);
      break;
    default: set_integer(m, f, i, new_integer(f, ctx.rng, get_integer(*m, f, i))); break;
  }
}

// A new default element at the end of a repeated field.
void add_default(Message* m, const FieldDescriptor* f) {
  const Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: r->AddInt32(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_INT64: r->AddInt64(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_UINT32: r->AddUInt32(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_UINT64: r->AddUInt64(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_FLOAT: r->AddFloat(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: r->AddDouble(m, f, 0); break;
    case FieldDescriptor::CPPTYPE_BOOL: r->AddBool(m, f, false); break;
    case FieldDescriptor::CPPTYPE_ENUM: r->AddEnumValue(m, f, f->default_value_enum()->number()); break;
    case FieldDescriptor::CPPTYPE_STRING: r->AddString(m, f, {}); break;
    case FieldDescriptor::CPPTYPE_MESSAGE: r->AddMessage(m, f); break;
  }
}

}  // namespace

std::vector<FieldRef> set_fields(Message& root) {
  std::vector<FieldRef> out;
  collect(root, out);
  return out;
}

std::int64_t interesting_integer(Rng& rng, std::int64_t current) {
  static constexpr std::int64_t table[] = {
      0, 1, -1, 2, -2, 3, 4, 7, 8, 16, 255, 256, 65536,
      std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min(),
      std::int64_t{1} << 31, std::int64_t{1} << 32, std::int64_t{1} << 62, -(std::int64_t{1} << 62),
      std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  switch (rng.below(5)) {
    case 0: return wrapping_add(current, 1);
    case 1: return wrapping_add(current, -1);
    case 2: return static_cast<std::int64_t>(rng.below(std::size_t{16}));
    default: return table[rng.below(std::size(table))];
  }
}

double interesting_floating(Rng& rng, double current) {
  static constexpr double table[] = {
      std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(), -0.0, 0.0, 1.0, -1.0, 0.5, 1e38,
      static_cast<double>(std::numeric_limits<float>::max()), 1e300, -1e300,
      static_cast<double>(std::numeric_limits<float>::denorm_min()), std::numeric_limits<double>::denorm_min()};
  switch (rng.below(5)) {
    case 0: return current * 2;
    case 1: return -current;
    default: return table[rng.below(std::size(table))];
  }
}

std::size_t interesting_length(Rng& rng, std::size_t size) {
  const std::size_t table[] = {0, 1, 2, 3, 5, 7, size > 0 ? size - 1 : 0, size + 1, size / 2,
                               size - size % 8 + 3, size + 4, size + 8};
  if (rng.one_in(4)) return rng.below(size + 16);
  return table[rng.below(std::size(table))];
}

void append_copy(Message* m, const FieldDescriptor* f, int from) {
  const Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: r->AddInt32(m, f, r->GetRepeatedInt32(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_INT64: r->AddInt64(m, f, r->GetRepeatedInt64(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_UINT32: r->AddUInt32(m, f, r->GetRepeatedUInt32(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_UINT64: r->AddUInt64(m, f, r->GetRepeatedUInt64(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_FLOAT: r->AddFloat(m, f, r->GetRepeatedFloat(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: r->AddDouble(m, f, r->GetRepeatedDouble(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_BOOL: r->AddBool(m, f, r->GetRepeatedBool(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_ENUM: r->AddEnumValue(m, f, r->GetRepeatedEnumValue(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_STRING: r->AddString(m, f, r->GetRepeatedString(*m, f, from)); break;
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      // Copied first: the source stays where it is, but a copy is simpler to reason about.
      std::unique_ptr<Message> copy(r->GetRepeatedMessage(*m, f, from).New());
      copy->CopyFrom(r->GetRepeatedMessage(*m, f, from));
      r->AddAllocatedMessage(m, f, copy.release());
      break;
    }
  }
}

void move_last_to(Message* m, const FieldDescriptor* f, int to) {
  const Reflection* r = m->GetReflection();
  for (int i = r->FieldSize(*m, f) - 1; i > to; --i) r->SwapElements(m, f, i, i - 1);
}

void remove_element(Message* m, const FieldDescriptor* f, int index) {
  // Reflection removes only the last element: the doomed one is bubbled there first.
  const Reflection* r = m->GetReflection();
  const int n = r->FieldSize(*m, f);
  for (int i = index; i + 1 < n; ++i) r->SwapElements(m, f, i, i + 1);
  r->RemoveLast(m, f);
}

bool mutate_field(const FieldRef& ref, MutationContext& ctx) {
  Message* m = ref.message;
  const FieldDescriptor* f = ref.field;
  Rng& rng = ctx.rng;
  if (!f->is_repeated()) {
    mutate_value(m, f, -1, ctx);
    return true;
  }
  const int n = m->GetReflection()->FieldSize(*m, f);
  if (n == 0) return false;
  switch (rng.below(8)) {
    case 0:
      if (n < 2) return false;
      m->GetReflection()->SwapElements(m, f, rng.below(n), rng.below(n));
      return true;
    case 1:
      append_copy(m, f, rng.below(n));
      move_last_to(m, f, rng.below(n + 1));
      return true;
    case 2: remove_element(m, f, rng.below(n)); return true;
    case 3:
      if (!rng.one_in(4)) return false;  // rarely: every element gone
      m->GetReflection()->ClearField(m, f);
      return true;
    default:
      // A message element is better changed through its own fields, which set_fields lists.
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !rng.one_in(8)) return false;
      mutate_value(m, f, rng.below(n), ctx);
      return true;
  }
}

bool add_field(Message& message, MutationContext& ctx) {
  Rng& rng = ctx.rng;
  const auto* descriptor = message.GetDescriptor();
  if (descriptor->field_count() == 0) return false;
  const FieldDescriptor* f = descriptor->field(rng.below(descriptor->field_count()));
  const Reflection* r = message.GetReflection();
  const bool is_message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
  if (!f->is_repeated()) {
    if (is_message) r->MutableMessage(&message, f);
    else mutate_value(&message, f, -1, ctx);
    return true;
  }
  const int n = r->FieldSize(message, f);
  if (n > 0 && rng.one_in(2)) {
    append_copy(&message, f, rng.below(n));
  } else {
    add_default(&message, f);
    // A new string is mostly a known name: an input, an attribute, an op type.
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING && !ctx.dictionary.empty() && !rng.one_in(4))
      r->SetRepeatedString(&message, f, n, rng.pick(ctx.dictionary));
    else if (!is_message)
      mutate_value(&message, f, n, ctx);
  }
  move_last_to(&message, f, rng.below(n + 1));
  return true;
}

}  // namespace recur::fuzz
