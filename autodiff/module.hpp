#pragma once
// Module: a named collection of parameters (shared variables) so that optimizers, gradient
// clipping and training checkpoints find them. A layer registers its own parameters and
// its children's; children are copied in flat with a "child." prefix at registration, so a
// module is an ordinary value that can be moved, copied (sharing its parameters) or kept
// in a vector.
#include <string>
#include <utility>
#include <vector>

#include <recur/autodiff/shared.hpp>

namespace recur {

// Named shared variables in a fixed order (registration order): what optimizers step,
// clipping scales and checkpoints save.
using NamedShared = std::vector<std::pair<std::string, Shared>>;

class Module {
 public:
  // Layers derive from Module and users keep them behind base pointers
  // (std::unique_ptr<Module>), so deleting through the base must be defined.
  Module() = default;
  Module(const Module&) = default;
  Module(Module&&) = default;
  Module& operator=(const Module&) = default;
  Module& operator=(Module&&) = default;
  virtual ~Module() = default;

  const NamedShared& named_parameters() const { return parameters_; }
  std::vector<Shared> parameters() const;
  // The parameter called `name` (with its children's prefixes); ValueError if none.
  Shared parameter(const std::string& name) const;
  void zero_grad() const;

 protected:
  // Creates the shared variable; its Shared::name() is the local name.
  Shared register_parameter(const std::string& name, Tensor value);
  // Adds every parameter of `child` under "name.". Register a child after building it.
  void register_module(const std::string& name, const Module& child);

 private:
  NamedShared parameters_;
};

}  // namespace recur
