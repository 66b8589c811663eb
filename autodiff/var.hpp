#pragma once
// Var: a light handle (16 bytes) to one value recorded on a Tape. Users compute with Vars;
// the ops record what they did so that gradients can be taken. A Var outliving its tape is
// detected: using it throws TapeError.
#include <cstdint>

#include <recur/core/tensor.hpp>

namespace recur {

class Tape;
class Shared;

class Var {
 public:
  Var() = default;
  // The value of a shared variable, read on the current tape (the innermost live Tape of
  // this thread). Reading the same Shared twice on one tape gives the same node.
  Var(const Shared& shared);  // NOLINT: implicit, so that matmul(x, W) works for Shared W
  // A constant on the current tape.
  Var(const Tensor& constant);  // NOLINT: implicit, so that x * tensor works

  bool defined() const { return serial_ != 0; }
  Tape& tape() const;  // throws TapeError if the tape was destroyed
  std::uint32_t id() const { return id_; }

  const Tensor& value() const;
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  std::int64_t rank() const { return value().rank(); }
  std::int64_t size(std::int64_t axis) const { return value().size(axis); }
  std::int64_t numel() const { return value().numel(); }
  bool requires_grad() const;
  // For a leaf made with Tape::variable: the gradient left by Tape::backward.
  Tensor grad() const;

  friend bool same_node(const Var& a, const Var& b) {
    return a.tape_serial() == b.tape_serial() && a.id_ == b.id_;
  }

  // A Var keeps the low kSerialBits of its tape's serial (a process makes at most 2^40 tapes).
  static constexpr int kSerialBits = 40;

 private:
  friend class Tape;
  // serial_: the tape's serial in the low kSerialBits, the tape's epoch when the Var was made
  // above them (Tape::epoch_: how often the tape dropped nodes, so that a Var of a dropped
  // node is told apart from one of the node recorded at its place since).
  static constexpr std::uint64_t kSerialMask = (std::uint64_t{1} << kSerialBits) - 1;
  Var(std::uint32_t slot, std::uint32_t id, std::uint64_t serial, std::uint32_t epoch)
      : slot_(slot), id_(id), serial_(serial | (std::uint64_t{epoch} << kSerialBits)) {}
  std::uint64_t tape_serial() const { return serial_ & kSerialMask; }
  std::uint32_t epoch() const { return static_cast<std::uint32_t>(serial_ >> kSerialBits); }
  std::uint32_t slot_ = 0;
  std::uint32_t id_ = 0;
  std::uint64_t serial_ = 0;  // 0: no tape
};

}  // namespace recur
