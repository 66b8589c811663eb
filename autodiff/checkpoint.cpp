#include <recur/autodiff/checkpoint.hpp>

#include <set>
#include <string_view>

#include <recur/autodiff/npz_variables_detail.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/npz.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

// One member of the checkpoint and the variable or generator it belongs to.
struct Slot {
  std::string member;  // "param/<name>", "optim/<name>", "rng/<name>"
  Shared shared;
  Generator* generator = nullptr;
};

// The members `state` has, in file order; ValueError for what cannot be saved or filled.
std::vector<Slot> slots_of(const TrainingState& state, std::string_view op) {
  std::vector<Slot> slots;
  std::set<std::string> seen;
  auto add = [&](Slot slot) {
    if (!seen.insert(slot.member).second) fail<ValueError>(op, "the name '", slot.member, "' appears twice");
    slots.push_back(std::move(slot));
  };
  for (const auto& [group, named] : {std::pair{"param/", &state.parameters},
                                     std::pair{"optim/", &state.optimizer_state}, std::pair{"extra/", &state.extra}})
    for (const auto& [name, shared] : *named) {
      if (!shared.defined()) fail<ValueError>(op, "'", group, name, "' is a null Shared handle");
      add({group + name, shared, nullptr});
    }
  for (const auto& [name, generator] : state.generators) {
    if (!generator) fail<ValueError>(op, "generator 'rng/", name, "' is a null pointer");
    add({"rng/" + name, Shared(), generator});
  }
  return slots;
}

// The variables among `slots`, in order, to be read or assigned together.
std::vector<Shared> variables_of(const std::vector<Slot>& slots) {
  std::vector<Shared> out;
  for (const Slot& s : slots)
    if (s.shared.defined()) out.push_back(s.shared);
  return out;
}

Tensor int64_scalar(std::int64_t v) { return from_vector<std::int64_t>({v}, {}); }

// A member that must be there with this dtype and shape.
void check_member(const fs::path& path, const std::string& member, const Tensor& t, DType dtype, const Shape& shape,
                  const char* holder) {
  detail::check_member("load_checkpoint", path, member, t, dtype, shape, holder);
}

}  // namespace

void save_checkpoint(const fs::path& path, const TrainingState& state) {
  NamedTensors arrays{{"meta/format", int64_scalar(kCheckpointFormat)}, {"meta/step", int64_scalar(state.step)}};
  const std::vector<Slot> slots = slots_of(state, "save_checkpoint");
  // All values read together: an optimizer step on another thread lands wholly before or
  // after. The file is written after, from the values read.
  const std::vector<Tensor> values = detail::read_together(variables_of(slots));
  std::size_t v = 0;
  for (const Slot& s : slots) arrays.emplace_back(s.member, s.generator ? s.generator->state() : values[v++]);
  save_npz(path, arrays);
}

void load_checkpoint(const fs::path& path, TrainingState& state) {
  std::vector<Slot> slots = slots_of(state, "load_checkpoint");
  const TensorMap in_file = load_npz_map(path);

  // The format first: it tells a foreign .npz from a checkpoint of other variables.
  const auto format = in_file.find("meta/format");
  if (format == in_file.end())
    fail<ValueError>("load_checkpoint", detail::quoted(path), ": not a recur checkpoint (no member 'meta/format')");
  check_member(path, "meta/format", format->second, DType::int64, {}, "the format version");
  const std::int64_t version = format->second.item<std::int64_t>();
  if (version != kCheckpointFormat)
    fail<ValueError>("load_checkpoint", detail::quoted(path), ": checkpoint format version ", version,
                     " is not supported (this build reads version ", kCheckpointFormat, ")");

  std::set<std::string, std::less<>> expected{"meta/format", "meta/step"};
  for (const Slot& s : slots) expected.insert(s.member);
  if (const detail::MemberMismatch m = detail::compare_members(in_file, expected); !m.empty())
    fail<ValueError>("load_checkpoint", detail::quoted(path), ": the checkpoint does not match the training state: ",
                     m.describe("missing members", "members the state lacks"));

  const Tensor& step = in_file.at("meta/step");
  check_member(path, "meta/step", step, DType::int64, {}, "the step");
  // Generators are set on copies first: a state the engine rejects must not leave half the
  // generators restored.
  std::vector<Generator> restored;
  std::vector<Tensor> values;
  for (const Slot& s : slots) {
    const Tensor& t = in_file.at(s.member);
    if (s.generator) {
      const Tensor now = s.generator->state();
      check_member(path, s.member, t, now.dtype(), now.shape(), "the generator's state");
      restored.push_back(*s.generator);
      try {
        restored.back().set_state(t);
      } catch (const Error& e) {
        fail<ValueError>("load_checkpoint", detail::quoted(path), ": member '", s.member, "': ", e.what());
      }
    } else {
      check_member(path, s.member, t, s.shared.dtype(), s.shared.shape(), "the variable");
      values.push_back(t);
    }
  }

  // All variables assigned together, as save reads them: a step on another thread sees
  // the checkpoint's state whole or not at all.
  detail::assign_together(variables_of(slots), values);
  std::size_t g = 0;
  for (Slot& s : slots)
    if (s.generator) *s.generator = restored[g++];
  state.step = step.item<std::int64_t>();
}

}  // namespace recur
