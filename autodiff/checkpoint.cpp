#include <recur/autodiff/checkpoint.hpp>

#include <map>
#include <set>
#include <string_view>

#include <recur/autodiff/shared_lock.hpp>
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

// The variables among `slots`, to be locked together.
std::vector<Shared> variables_of(const std::vector<Slot>& slots) {
  std::vector<Shared> out;
  for (const Slot& s : slots)
    if (s.shared.defined()) out.push_back(s.shared);
  return out;
}

Tensor int64_scalar(std::int64_t v) { return from_vector<std::int64_t>({v}, {}); }

std::string quoted(const fs::path& path) {
  std::string s = "'";
  return s.append(path.string()).append("'");
}

// A member that must be there with this dtype and shape.
void check_member(const fs::path& path, const std::string& member, const Tensor& t, DType dtype, const Shape& shape,
                  const char* holder, const char* shape_note = "") {
  if (t.dtype() != dtype)
    fail<DTypeError>("load_checkpoint", quoted(path), ": member '", member, "' is ", t.dtype(), " in the file, ",
                     holder, " is ", dtype);
  if (t.shape() != shape)
    fail<ShapeError>("load_checkpoint", quoted(path), ": member '", member, "' has shape ", to_string(t.shape()),
                     " in the file, ", holder, " has shape ", to_string(shape), shape_note);
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

void save_checkpoint(const fs::path& path, const TrainingState& state) {
  NamedTensors arrays{{"meta/format", int64_scalar(kCheckpointFormat)}, {"meta/step", int64_scalar(state.step)}};
  const std::vector<Slot> slots = slots_of(state, "save_checkpoint");
  {
    // All values read under one lock: an optimizer step on another thread (which holds
    // the same locks) lands wholly before or after. The file is written after, from the
    // values read, which later steps copy before writing.
    const SharedLock lock(variables_of(slots));
    for (const Slot& s : slots) arrays.emplace_back(s.member, s.generator ? s.generator->state() : lock.value(s.shared));
  }
  save_npz(path, arrays);
}

void load_checkpoint(const fs::path& path, TrainingState& state) {
  std::vector<Slot> slots = slots_of(state, "load_checkpoint");
  const NamedTensors arrays = load_npz(path);
  std::map<std::string, const Tensor*> in_file;
  for (const auto& [name, t] : arrays) in_file.emplace(name, &t);

  // The format first: it tells a foreign .npz from a checkpoint of other variables.
  const auto format = in_file.find("meta/format");
  if (format == in_file.end())
    fail<ValueError>("load_checkpoint", quoted(path), ": not a recur checkpoint (no member 'meta/format')");
  check_member(path, "meta/format", *format->second, DType::int64, {}, "the format version");
  const std::int64_t version = format->second->item<std::int64_t>();
  if (version != kCheckpointFormat)
    fail<ValueError>("load_checkpoint", quoted(path), ": checkpoint format version ", version,
                     " is not supported (this build reads version ", kCheckpointFormat, ")");

  std::vector<std::string> missing, extra;
  std::set<std::string> expected{"meta/format", "meta/step"};
  for (const Slot& s : slots) expected.insert(s.member);
  for (const auto& name : expected)
    if (!in_file.count(name)) missing.push_back(name);
  for (const auto& [name, t] : arrays)
    if (!expected.count(name)) extra.push_back(name);
  if (!missing.empty() || !extra.empty())
    fail<ValueError>("load_checkpoint", quoted(path), ": the checkpoint does not match the training state: ",
                     missing.empty() ? "" : "missing members " + listed(missing),
                     missing.empty() || extra.empty() ? "" : "; ",
                     extra.empty() ? "" : "members the state lacks " + listed(extra));

  const Tensor& step = *in_file.at("meta/step");
  check_member(path, "meta/step", step, DType::int64, {}, "the step");
  // Generators are set on copies first: a state the engine rejects must not leave half the
  // generators restored.
  std::vector<Generator> restored;
  for (const Slot& s : slots) {
    const Tensor& t = *in_file.at(s.member);
    if (s.generator) {
      const Tensor now = s.generator->state();
      check_member(path, s.member, t, now.dtype(), now.shape(), "the generator's state",
                   " (a longer state is an mt19937_64 state saved before recur's Generator became Philox4x32-10; "
                   "it cannot be continued: start that generator from a seed)");
      restored.push_back(*s.generator);
      try {
        restored.back().set_state(t);
      } catch (const Error& e) {
        fail<ValueError>("load_checkpoint", quoted(path), ": member '", s.member, "': ", e.what());
      }
    } else {
      check_member(path, s.member, t, s.shared.dtype(), s.shared.shape(), "the variable");
    }
  }

  // All variables assigned under one lock, as save reads them: a step on another thread
  // sees the checkpoint's state whole or not at all.
  const SharedLock lock(variables_of(slots));
  std::size_t g = 0;
  for (Slot& s : slots) {
    if (s.generator) *s.generator = restored[g++];
    else lock.assign(s.shared, *in_file.at(s.member));
  }
  state.step = step.item<std::int64_t>();
}

}  // namespace recur
