#pragma once
// Base of classes whose objects stand for one thing that must not have two owners (a tape,
// a recording switch, an optimizer's state, a held lock): copying is deleted once here
// instead of in each class. Empty: it adds nothing to the size of what derives from it.
namespace recur {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace recur
