#include <recur/ops/linear_recurrence.hpp>

#include <type_traits>

#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/kernels/linear_recurrence_kernel_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

using detail::Recurrence;
using detail::TimeView;

TimeView time_view(const Shape& s, std::int64_t axis) {
  TimeView v;
  v.steps = s[static_cast<std::size_t>(axis)];
  for (std::int64_t d = 0; d < axis; ++d) v.outer *= s[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < s.size(); ++d) v.inner *= s[d];
  return v;
}

// dL/da_t = dL/dh_t * h_prev_t, with h_prev the state each step started from (`start` for
// the first step): one elementwise pass, split over time between the threads.
template <class T>
void multiply_by_previous_state(const TimeView& v, const T* grad_h, const T* h, const T* start, bool reverse, T* out) {
  const int threads = detail::choose_split(v, parallel::max_threads()).threads;
  parallel::for_each_task(threads, threads, [&](std::int64_t part) {
    const std::int64_t t0 = detail::split_point(v.steps, threads, part), t1 = detail::split_point(v.steps, threads, part + 1);
    for (std::int64_t o = 0; o < v.outer; ++o)
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t at = (o * v.steps + t) * v.inner;
        const bool first = reverse ? t == v.steps - 1 : t == 0;
        const T* prev = first ? start + o * v.inner : h + at + (reverse ? v.inner : -v.inner);
        for (std::int64_t i = 0; i < v.inner; ++i) out[at + i] = grad_h[at + i] * prev[i];
      }
  });
}

struct LinearRecurrence {
  static constexpr std::string_view name = "linear_recurrence";
  LinearRecurrenceOptions options;
  OpAttributes attributes() const { return {{"axis", options.axis}, {"reverse", options.reverse}}; }

  // The result's shape and its normalized time axis; throws naming the argument at fault.
  struct Geometry {
    Shape shape;
    std::int64_t axis;
    Shape step;  // shape without the time axis
  };
  Geometry geometry(const Tensor& a, const Tensor& b, const Tensor& h0) const {
    if (a.dtype() != b.dtype() || a.dtype() != h0.dtype())
      fail<DTypeError>(name, "arguments 'a', 'b' and 'h0' must share one dtype; got ", a.dtype(), ", ", b.dtype(),
                       " and ", h0.dtype());
    Geometry g;
    g.shape = broadcast_shapes(name, a.shape(), b.shape(), "a", "b");
    if (g.shape.empty())
      fail<ShapeError>(name, "arguments 'a' ", to_string(a.shape()), " and 'b' ", to_string(b.shape()), " have no time axis (rank 0)");
    g.axis = normalize_axis(name, options.axis, g.shape, "axis");
    g.step = g.shape;
    g.step.erase(g.step.begin() + g.axis);
    if (broadcast_shapes(name, h0.shape(), g.step, "h0", "one step of a and b") != g.step)
      fail<ShapeError>(name, "argument 'h0' ", to_string(h0.shape()), " does not broadcast to one step ", to_string(g.step), " of a and b ",
                       to_string(g.shape));
    return g;
  }

  Tensor forward(const Tensor& a, const Tensor& b, const Tensor& h0) const {
    const Geometry g = geometry(a, b, h0);
    return dispatch_floating(name, a.dtype(), [&]<class T>() {
      const Tensor full_a = broadcast_to(a, g.shape), full_b = broadcast_to(b, g.shape);
      // h0 per outer block: [outer, inner], the step shape split at the time axis.
      const Tensor start = broadcast_to(h0, g.step);
      Tensor h = Tensor::empty(g.shape, a.dtype());
      const TimeView v = time_view(g.shape, g.axis);
      detail::run_recurrence(Recurrence<T>{v, full_a.data<T>(), 0, full_b.data<T>(), start.data<T>(), h.data<T>(), options.reverse},
                             detail::choose_split(v, parallel::max_threads()));
      return h;
    });
  }

  // dL/dh_t = g_t + a_next_t * dL/dh_next: the recurrence again, run the other way, with a
  // shifted by one step (zero past the end). Then dL/da_t = dL/dh_t * h_prev_t,
  // dL/db_t = dL/dh_t and dL/dh0 = a_first * dL/dh_first, each summed to its input's shape.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& args) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      return first_order_backward(args);
    } else {
      return backward_as_ops(args);
    }
  }

  // Plain backward: the same rule on raw buffers, one pass for dL/dh and one for dL/da,
  // without materialising the shifted copies of a and h.
  Grads<Tensor> first_order_backward(const BackwardArgs<Tensor>& args) const {
    const Tensor &a = args.inputs[0], &b = args.inputs[1], &h0 = args.inputs[2];
    const Geometry g = geometry(a, b, h0);
    return dispatch_floating(name, a.dtype(), [&]<class T>() -> Grads<Tensor> {
      const TimeView v = time_view(g.shape, g.axis);
      const Tensor full_a = broadcast_to(a, g.shape), start = broadcast_to(h0, g.step);
      const Tensor grad_out = broadcast_to(args.grad, g.shape);
      Tensor grad_h = Tensor::empty(g.shape, a.dtype());
      // Run against the op's direction; step t's coefficient is a of the step after it.
      const std::int64_t next_step = options.reverse ? -v.inner : v.inner;
      detail::run_recurrence(Recurrence<T>{v, full_a.data<T>(), next_step, grad_out.data<T>(), nullptr, grad_h.data<T>(), !options.reverse},
                             detail::choose_split(v, parallel::max_threads()));
      Tensor grad_a;
      if (args.needs_grad(0)) {
        grad_a = Tensor::empty(g.shape, a.dtype());
        multiply_by_previous_state<T>(v, grad_h.data<T>(), args.output.data<T>(), start.data<T>(), options.reverse,
                                      grad_a.data<T>());
      }
      Tensor grad_start;
      if (args.needs_grad(2)) {
        grad_start = Tensor::empty(g.step, a.dtype());
        const std::int64_t first = options.reverse ? v.steps - 1 : 0;
        T* out = grad_start.data<T>();
        for (std::int64_t o = 0; o < v.outer; ++o)
          for (std::int64_t i = 0; i < v.inner; ++i) {
            const std::int64_t at = (o * v.steps + first) * v.inner + i;
            out[o * v.inner + i] = v.steps == 0 ? T(0) : full_a.data<T>()[at] * grad_h.data<T>()[at];
          }
      }
      return {args.needs_grad(0) ? sum_to(grad_a, a.shape()) : Tensor(), args.needs_grad(1) ? sum_to(grad_h, b.shape()) : Tensor(),
              args.needs_grad(2) ? sum_to(grad_start, h0.shape()) : Tensor()};
    });
  }

  // Under create_graph: recorded ops, so the gradient is differentiable again.
  Grads<Var> backward_as_ops(const BackwardArgs<Var>& args) const {
    using V = Var;
    const V& a = args.inputs[0];
    const V& b = args.inputs[1];
    const V& h0 = args.inputs[2];
    const Geometry g = geometry(value_of(a), value_of(b), value_of(h0));
    const std::int64_t ax = g.axis, n = g.shape[static_cast<std::size_t>(ax)];
    const DType dtype = value_of(a).dtype();
    if (n == 0)
      return {lift(a, zeros(value_of(a).shape(), dtype)), lift(a, zeros(value_of(b).shape(), dtype)),
              lift(a, zeros(value_of(h0).shape(), dtype))};
    Shape one_step = g.shape;
    one_step[static_cast<std::size_t>(ax)] = 1;
    const V zero_step = lift(a, zeros(one_step, dtype));
    const V full_a = broadcast_to(a, g.shape);
    const V start = unsqueeze(broadcast_to(h0, g.step), ax);
    // Forward in time: the next step is t + 1, the first is 0. Reverse: the mirror image.
    const bool rev = options.reverse;
    const V a_next = rev ? concat({zero_step, slice(full_a, ax, 0, n - 1)}, ax)
                         : concat({slice(full_a, ax, 1, n), zero_step}, ax);
    const V h_prev = rev ? concat({slice(args.output, ax, 1, n), start}, ax)
                         : concat({start, slice(args.output, ax, 0, n - 1)}, ax);
    const V grad_h = apply_op(LinearRecurrence{{.axis = ax, .reverse = !rev}}, a_next, args.grad,
                              lift(a, zeros(g.step, dtype)));
    const std::int64_t first = rev ? n - 1 : 0;
    const V grad_start = mul(index(full_a, ax, first), index(grad_h, ax, first));
    return {args.needs_grad(0) ? sum_to(mul(grad_h, h_prev), value_of(a).shape()) : V(),
            args.needs_grad(1) ? sum_to(grad_h, value_of(b).shape()) : V(),
            args.needs_grad(2) ? sum_to(grad_start, value_of(h0).shape()) : V()};
  }
};

}  // namespace

Tensor linear_recurrence(const Tensor& a, const Tensor& b, const Tensor& h0, const LinearRecurrenceOptions& options) {
  return LinearRecurrence{options}.forward(a, b, h0);
}
Var linear_recurrence(const Var& a, const Var& b, const Var& h0, const LinearRecurrenceOptions& options) {
  return record(LinearRecurrence{options}, a, b, h0);
}

}  // namespace recur
