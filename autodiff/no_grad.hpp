#pragma once
// Scopes that switch recording of gradients off (and back on) for the current thread.
// Under NoGrad, ops on Vars still compute their values but record no backward link.
namespace recur {

bool grad_enabled();

class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

class EnableGrad {
 public:
  EnableGrad();
  ~EnableGrad();
  EnableGrad(const EnableGrad&) = delete;
  EnableGrad& operator=(const EnableGrad&) = delete;

 private:
  bool previous_;
};

}  // namespace recur
