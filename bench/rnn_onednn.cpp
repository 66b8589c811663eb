#include "rnn_onednn.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace bench {

using dnnl::memory;
using rnn::Cell;
using tag = memory::format_tag;

namespace {

constexpr auto kF32 = memory::data_type::f32;
constexpr auto kTraining = dnnl::prop_kind::forward_training;
constexpr auto kBackward = dnnl::prop_kind::backward;
constexpr auto kLeftToRight = dnnl::rnn_direction::unidirectional_left2right;

float* data(const memory& m) { return static_cast<float*>(m.get_data_handle()); }
void zero(const memory& m) { std::memset(m.get_data_handle(), 0, m.get_desc().get_size()); }

// oneDNN's gate k is PyTorch's gate pytorch_gate(cell, k). The GRU's update, reset and
// output gates (u, r, o) are PyTorch's z, r, n, which PyTorch stores as r, z, n; the other
// cells agree (the LSTM's i, f, c~, o are PyTorch's i, f, g, o).
std::int64_t pytorch_gate(Cell cell, std::int64_t k) { return cell == Cell::gru && k < 2 ? 1 - k : k; }

// Copies the gate blocks of `block` floats each from one gate order to the other. The
// GRU's permutation swaps two gates, so it is its own inverse and serves both directions.
void permute_gates(Cell cell, const float* from, float* to, std::int64_t block) {
  for (std::int64_t k = 0; k < rnn::gates(cell); ++k)
    std::copy_n(from + pytorch_gate(cell, k) * block, block, to + k * block);
}

// The GRU's output gate adds PyTorch's hidden bias b_hn inside the reset product, so oneDNN
// gives it a fourth bias gate; every other bias gate is b_ih + b_hh.
std::int64_t bias_gates(Cell cell) { return rnn::gates(cell) + (cell == Cell::gru ? 1 : 0); }
bool hidden_bias_apart(Cell cell, std::int64_t k) { return cell == Cell::gru && k == 2; }

}  // namespace

OnednnRnnStep::OnednnRnnStep(Cell cell, const rnn::Config& config)
    : cell_(cell),
      config_(config),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      xs_(uniform(config.steps * config.batch * config.input, -1.f, 1.f, rnn::kSeed)),
      target_(uniform(config.steps * config.batch * config.hidden, -1.f, 1.f, rnn::kSeed + 1)) {
  if (config.chunk <= 0 || config.steps % config.chunk != 0)
    throw std::invalid_argument("OnednnRnnStep: the chunk length must divide the sequence length");
  const float bound = rnn::init_bound(config);
  for (const rnn::ParamSpec& p : rnn::param_specs(cell, config)) {
    std::int64_t n = 1;
    for (const std::int64_t d : p.shape) n *= d;
    params_.push_back(uniform(n, -bound, bound, p.seed));
    grads_.emplace_back(params_.back().size());
  }
  make_primitives();
  make_memories();
  make_weight_memories();
}

void OnednnRnnStep::make_primitives() {
  const memory::dim steps = config_.chunk, batch = config_.batch, input = config_.input, hidden = config_.hidden;
  const memory::dim gates = rnn::gates(cell_);
  // Data in the suite's plain layouts; the weights in whatever layouts the primitives prefer.
  const memory::desc src_layer({steps, batch, input}, kF32, tag::tnc);
  const memory::desc dst_layer({steps, batch, hidden}, kF32, tag::tnc);
  const memory::desc iter({1, 1, batch, hidden}, kF32, tag::ldnc);
  const memory::desc weights_layer({1, 1, input, gates, hidden}, kF32, tag::any);
  const memory::desc weights_iter({1, 1, hidden, gates, hidden}, kF32, tag::any);
  const memory::desc bias({1, 1, bias_gates(cell_), hidden}, kF32, tag::ldgo);
  switch (cell_) {
    case Cell::rnn: {
      const auto tanh = dnnl::algorithm::eltwise_tanh;
      use<dnnl::vanilla_rnn_forward, dnnl::vanilla_rnn_backward>(
          {kTraining, tanh, kLeftToRight, src_layer, iter, weights_layer, weights_iter, bias, dst_layer, iter},
          {kBackward, tanh, kLeftToRight, src_layer, iter, weights_layer, weights_iter, bias, dst_layer, iter,
           src_layer, iter, weights_layer, weights_iter, bias, dst_layer, iter});
      break;
    }
    case Cell::lstm:
      use<dnnl::lstm_forward, dnnl::lstm_backward>(
          {kTraining, kLeftToRight, src_layer, iter, iter, weights_layer, weights_iter, bias, dst_layer, iter, iter},
          {kBackward, kLeftToRight, src_layer, iter, iter, weights_layer, weights_iter, bias, dst_layer, iter, iter,
           src_layer, iter, iter, weights_layer, weights_iter, bias, dst_layer, iter, iter});
      break;
    case Cell::gru:
      use<dnnl::lbr_gru_forward, dnnl::lbr_gru_backward>(
          {kTraining, kLeftToRight, src_layer, iter, weights_layer, weights_iter, bias, dst_layer, iter},
          {kBackward, kLeftToRight, src_layer, iter, weights_layer, weights_iter, bias, dst_layer, iter, src_layer,
           iter, weights_layer, weights_iter, bias, dst_layer, iter});
      break;
  }
}

template <class Forward, class Backward>
void OnednnRnnStep::use(const typename Forward::desc& forward, const typename Backward::desc& backward) {
  const typename Forward::primitive_desc forward_pd(forward, engine_);
  // The forward's choices hint the backward's.
  const typename Backward::primitive_desc backward_pd(backward, engine_, forward_pd);
  forward_pd_ = forward_pd;
  backward_pd_ = backward_pd;
  forward_ = Forward(forward_pd);
  backward_ = Backward(backward_pd);
}

void OnednnRnnStep::make_memories() {
  src_layer_ = memory(forward_pd_.src_layer_desc(), engine_, xs_.data());  // moved along xs_ chunk by chunk
  dst_layer_ = owned(forward_pd_.dst_layer_desc());
  diff_dst_layer_ = owned(backward_pd_.diff_dst_layer_desc());
  src_iter_ = owned(forward_pd_.src_iter_desc());
  dst_iter_ = owned(forward_pd_.dst_iter_desc());
  const memory workspace = owned(forward_pd_.workspace_desc());
  forward_args_ = {{DNNL_ARG_SRC_LAYER, src_layer_}, {DNNL_ARG_SRC_ITER, src_iter_},
                   {DNNL_ARG_DST_LAYER, dst_layer_}, {DNNL_ARG_DST_ITER, dst_iter_},
                   {DNNL_ARG_WORKSPACE, workspace}};
  backward_args_ = forward_args_;
  // The gradient into the input and into the initial state: computed, not used. The
  // gradient into the last state stays zero (the truncation, or nothing after the end).
  backward_args_.insert({{DNNL_ARG_DIFF_DST_LAYER, diff_dst_layer_},
                         {DNNL_ARG_DIFF_SRC_LAYER, owned(backward_pd_.diff_src_layer_desc())},
                         {DNNL_ARG_DIFF_SRC_ITER, owned(backward_pd_.diff_src_iter_desc())},
                         {DNNL_ARG_DIFF_DST_ITER, owned(backward_pd_.diff_dst_iter_desc())}});
  if (cell_ == Cell::lstm) {
    src_iter_c_ = owned(forward_pd_.src_iter_c_desc());
    dst_iter_c_ = owned(forward_pd_.dst_iter_c_desc());
    for (Args* args : {&forward_args_, &backward_args_})
      args->insert({{DNNL_ARG_SRC_ITER_C, src_iter_c_}, {DNNL_ARG_DST_ITER_C, dst_iter_c_}});
    backward_args_.insert({{DNNL_ARG_DIFF_SRC_ITER_C, owned(backward_pd_.diff_src_iter_c_desc())},
                           {DNNL_ARG_DIFF_DST_ITER_C, owned(backward_pd_.diff_dst_iter_c_desc())}});
  }
}

void OnednnRnnStep::make_weight_memories() {
  // PyTorch's [G H, in] weight is oneDNN's plain ldgoi layout of [1, 1, in, G, H]. The GRU's
  // go through a copy with the gates in oneDNN's order, which its gradients share (the two
  // never live at once).
  const memory::dim gates = rnn::gates(cell_), hidden = config_.hidden;
  const auto pytorch_layout = [&](memory::dim in, std::vector<float>& values, std::vector<float>& staging) {
    const memory::desc md({1, 1, in, gates, hidden}, kF32, tag::ldgoi);
    if (cell_ != Cell::gru) return memory(md, engine_, values.data());
    staging.resize(values.size());
    return memory(md, engine_, staging.data());
  };
  const auto add = [](std::vector<Reorder>& list, const memory& from, const memory& to) {
    list.push_back({dnnl::reorder(from, to), from, to});
  };
  const struct {
    int arg, diff_arg;
    memory user, user_diff;
  } weights[] = {
      {DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_LAYER,
       pytorch_layout(config_.input, params_[0], weights_layer_staging_),
       pytorch_layout(config_.input, grads_[0], weights_layer_staging_)},
      {DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_DIFF_WEIGHTS_ITER, pytorch_layout(hidden, params_[1], weights_iter_staging_),
       pytorch_layout(hidden, grads_[1], weights_iter_staging_)},
  };
  for (const auto& w : weights) {
    const memory forward = owned(forward_pd_.query_md(dnnl::query::exec_arg_md, w.arg));
    const memory::desc backward_md = backward_pd_.query_md(dnnl::query::exec_arg_md, w.arg);
    // The backward primitive may want the weights in another layout than the forward one.
    const memory backward = backward_md == forward.get_desc() ? forward : owned(backward_md);
    add(weights_to_onednn_, w.user, forward);
    if (backward != forward) add(weights_to_onednn_, w.user, backward);
    const memory diff = owned(backward_pd_.query_md(dnnl::query::exec_arg_md, w.diff_arg));
    add(gradients_to_pytorch_, diff, w.user_diff);
    forward_args_.insert({w.arg, forward});
    backward_args_.insert({{w.arg, backward}, {w.diff_arg, diff}});
  }
  bias_ = owned(forward_pd_.bias_desc());
  diff_bias_ = owned(backward_pd_.diff_bias_desc());
  forward_args_.insert({DNNL_ARG_BIAS, bias_});
  backward_args_.insert({{DNNL_ARG_BIAS, bias_}, {DNNL_ARG_DIFF_BIAS, diff_bias_}});
}

memory OnednnRnnStep::owned(const memory::desc& md) const {
  memory m(md, engine_);
  zero(m);
  return m;
}

void OnednnRnnStep::weights_to_onednn() {
  const std::int64_t hidden = config_.hidden;
  if (cell_ == Cell::gru) {
    permute_gates(cell_, params_[0].data(), weights_layer_staging_.data(), hidden * config_.input);
    permute_gates(cell_, params_[1].data(), weights_iter_staging_.data(), hidden * hidden);
  }
  for (Reorder& r : weights_to_onednn_) r.primitive.execute(stream_, r.from, r.to);
  const float *b_ih = params_[2].data(), *b_hh = params_[3].data();
  float* bias = data(bias_);
  for (std::int64_t k = 0; k < rnn::gates(cell_); ++k) {
    const std::int64_t from = pytorch_gate(cell_, k) * hidden;
    const bool apart = hidden_bias_apart(cell_, k);
    for (std::int64_t o = 0; o < hidden; ++o) bias[k * hidden + o] = b_ih[from + o] + (apart ? 0.f : b_hh[from + o]);
    if (apart) std::copy_n(b_hh + from, hidden, bias + rnn::gates(cell_) * hidden);
  }
  stream_.wait();
}

void OnednnRnnStep::gradients_to_pytorch() {
  for (Reorder& r : gradients_to_pytorch_) r.primitive.execute(stream_, r.from, r.to);
  stream_.wait();
  const std::int64_t hidden = config_.hidden;
  if (cell_ == Cell::gru) {
    permute_gates(cell_, weights_layer_staging_.data(), grads_[0].data(), hidden * config_.input);
    permute_gates(cell_, weights_iter_staging_.data(), grads_[1].data(), hidden * hidden);
  }
  // A summed bias gate's gradient goes to both of PyTorch's biases.
  const float* diff_bias = data(diff_bias_);
  for (std::int64_t k = 0; k < rnn::gates(cell_); ++k) {
    const std::int64_t to = pytorch_gate(cell_, k) * hidden;
    std::copy_n(diff_bias + k * hidden, hidden, grads_[2].data() + to);
    const std::int64_t hidden_gate = hidden_bias_apart(cell_, k) ? rnn::gates(cell_) : k;
    std::copy_n(diff_bias + hidden_gate * hidden, hidden, grads_[3].data() + to);
  }
}

double OnednnRnnStep::loss_and_gradient(std::int64_t start) {
  const std::int64_t n = config_.chunk * config_.batch * config_.hidden;
  const float* out = data(dst_layer_);
  const float* target = target_.data() + start * config_.batch * config_.hidden;
  float* grad = data(diff_dst_layer_);
  const float scale = 2.f / static_cast<float>(n);
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = out[i] - target[i];
    sum += static_cast<double>(d) * d;
    grad[i] = scale * d;
  }
  return sum / static_cast<double>(n);
}

double OnednnRnnStep::step() {
  weights_to_onednn();
  // The diff weights accumulate over the chunks (oneDNN's backward adds to them).
  for (const int arg : {DNNL_ARG_DIFF_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_ITER, DNNL_ARG_DIFF_BIAS})
    zero(backward_args_.at(arg));
  zero(src_iter_);
  if (cell_ == Cell::lstm) zero(src_iter_c_);
  const std::int64_t state = config_.batch * config_.hidden;
  double loss_sum = 0;
  std::int64_t chunks = 0;
  for (std::int64_t start = 0; start < config_.steps; start += config_.chunk, ++chunks) {
    src_layer_.set_data_handle(xs_.data() + start * config_.batch * config_.input);
    forward_.execute(stream_, forward_args_);
    stream_.wait();
    loss_sum += loss_and_gradient(start);
    backward_.execute(stream_, backward_args_);
    stream_.wait();
    // The next chunk starts from this one's last state, as a constant (truncation).
    std::copy_n(data(dst_iter_), state, data(src_iter_));
    if (cell_ == Cell::lstm) std::copy_n(data(dst_iter_c_), state, data(src_iter_c_));
  }
  gradients_to_pytorch();
  for (const std::vector<float>& g : grads_) benchmark::DoNotOptimize(g.data());
  benchmark::ClobberMemory();
  return loss_sum / static_cast<double>(chunks);
}

std::size_t OnednnRnnStep::workspace_bytes() const { return forward_pd_.workspace_desc().get_size(); }

std::size_t OnednnRnnStep::weight_bytes() const {
  return forward_pd_.weights_layer_desc().get_size() + forward_pd_.weights_iter_desc().get_size() +
         forward_pd_.bias_desc().get_size();
}

}  // namespace bench
