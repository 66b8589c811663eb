#include <recur/ops/scan/lengths_mask_detail.hpp>

#include <algorithm>
#include <cmath>

#include <recur/autodiff/tape.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/compare.hpp>

namespace recur::scan_engine {
namespace {

// The lengths as integers: the tensor's when one is given (1-D, whole numbers).
std::vector<std::int64_t> read_lengths(std::string_view face, const SequenceLengths& given) {
  if (!given.tensor.defined()) return given.values;
  const Tensor& t = given.tensor;
  if (t.rank() != 1)
    fail<ShapeError>(face, "lengths has shape ", to_string(t.shape()), "; it must be 1-D, one per batch element");
  std::vector<std::int64_t> out;
  for (double v : to_vector<double>(t)) {
    // Whole numbers int64 holds (beyond 2^63 the conversion below would be undefined).
    if (!std::isfinite(v) || v != std::floor(v) || v < -0x1p63 || v >= 0x1p63)
      fail<ValueError>(face, "lengths of shape ", to_string(t.shape()), " holds ", v, "; lengths are whole numbers");
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

}  // namespace

LengthMask::LengthMask(std::string_view face, const SequenceLengths& given, std::int64_t steps, bool reverse,
                       std::int64_t truncate_gradient)
    : face_(face), lengths_(read_lengths(face, given)), steps_(steps), reverse_(reverse), truncate_(truncate_gradient) {
  for (std::size_t b = 0; b < lengths_.size(); ++b)
    if (lengths_[b] < 0 || lengths_[b] > steps)
      fail<ValueError>(face, "lengths[", b, "] = ", lengths_[b], " is outside [0, ", steps, "]: the scan runs ",
                       steps, " steps (lengths has shape [", lengths_.size(), "])");
}

void LengthMask::check_batch_axis(const std::string& what, const Shape& shape, std::int64_t axis) const {
  if (static_cast<std::int64_t>(shape.size()) > axis && shape[axis] == batch()) return;
  fail<ShapeError>(face_, "lengths has shape [", batch(), "] (one per batch element) but ", what, " of shape ",
                   to_string(shape), " has ",
                   static_cast<std::int64_t>(shape.size()) > axis ? "size " + std::to_string(shape[axis]) + " on"
                                                                   : std::string("no"),
                   " axis ", axis, ", its batch axis");
}

// 1 for the elements `chosen` picks, and whether that is all or none of them.
LengthMask::Selection LengthMask::select(std::int64_t batch, const std::function<bool(std::int64_t)>& chosen) {
  Selection s{{}, true, true};
  for (std::int64_t b = 0; b < batch; ++b) {
    const bool on = chosen(b);
    s.pick.push_back(on ? 1 : 0);
    s.all = s.all && on;
    s.none = s.none && !on;
  }
  return s;
}

std::int64_t LengthMask::first_iteration(std::int64_t b) const { return reverse_ ? steps_ - lengths_[b] : 0; }

void LengthMask::begin_iteration(std::int64_t t) {
  const std::int64_t position = reverse_ ? steps_ - 1 - t : t;
  running_ = select(batch(), [&](std::int64_t b) { return position < lengths_[b]; });
  // Element b's last k steps end where its own steps do.
  gradient_ = select(batch(), [&](std::int64_t b) {
    return truncate_ < 0 || t >= first_iteration(b) + lengths_[b] - truncate_;
  });
}

Var LengthMask::apply(const Selection& s, const Var& a, const Var& b) {
  if (s.all) return a;
  if (s.none) return b;
  Shape mask_shape(a.shape().size(), 1);  // the batch axis first, broadcast over the rest
  mask_shape[0] = static_cast<std::int64_t>(s.pick.size());
  return where(a.tape().constant(from_vector(s.pick, mask_shape)), a, b);
}

Var LengthMask::keep(const Var& fresh, const Var& old) const { return apply(running_, fresh, old); }

Var LengthMask::zero(const Var& v) const {
  if (running_.all) return v;
  return apply(running_, v, v.tape().constant(zeros(running_.none ? v.shape() : Shape{}, v.dtype())));
}

Var LengthMask::gate(const Var& v) const {
  if (gradient_.all) return v;
  return apply(gradient_, v, detach(v));
}

std::int64_t LengthMask::first_needed_iteration(std::int64_t window) const {
  std::int64_t first = std::max<std::int64_t>(0, steps_ - truncate_);
  for (std::int64_t b = 0; b < batch(); ++b) {
    // Element b's first ungated step reads values that the selects of the window - 1
    // iterations before it passed along. With fewer than k + window steps, those reach
    // back to its initial state, through every select since the loop began.
    const std::int64_t ungated = first_iteration(b) + lengths_[b] - truncate_;
    first = std::min(first, lengths_[b] < truncate_ + window ? 0 : ungated - window + 1);
  }
  return first;
}

}  // namespace recur::scan_engine
