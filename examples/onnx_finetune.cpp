// Fine-tuning a PyTorch model in C++ through ONNX: examples/char_lm.onnx is a small
// character-level LSTM language model (Embedding -> LSTM -> Linear) that
// examples/make_onnx_char_lm.py pretrained on the Zen of Python and exported with
// torch.onnx.export. This program loads it with recur::onnx (every node recorded on recur's
// tape, the initializers trainable parameters), fine-tunes it with Adam and truncated BPTT
// (nn::TruncatedBptt) on text that needs no download (the licence texts of
// /usr/share/common-licenses), prints progress, writes the trained model as ONNX
// (recur::onnx_io::save), loads that file again and checks that it gives the trained outputs.
#include <onnx/onnx_pb.h>

#include <recur/ops/onnx/model.hpp>
#include <recur/recur.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "char_corpus.hpp"
#include "example_main.hpp"
#include "progress.hpp"

namespace {

using namespace recur;

struct Options {
  std::string model = RECUR_ONNX_FINETUNE_MODEL;
  std::string corpus = "/usr/share/common-licenses";
  std::string out = "char_lm_finetuned.onnx";
  long steps = 1000;
  long batch = 16;
  long bptt = 32;
  double lr = 1e-2;
  double clip = 1.0;
};

// The vocabulary make_onnx_char_lm.py fixed: 0 is '\n', 1..95 are ' '..'~', anything else ' '.
constexpr std::int64_t kVocabulary = 96;
std::int64_t code_of(char c) {
  if (c == '\n') return 0;
  return (c >= ' ' && c <= '~') ? c - ' ' + 1 : 1;
}

// The text as `batch` parallel streams of codes, time first: [length / batch, batch].
Tensor streams(const std::string& text, std::int64_t batch) {
  const auto steps = static_cast<std::int64_t>(text.size()) / batch;
  Tensor codes = Tensor::empty({steps, batch}, DType::int64);
  auto* p = codes.data<std::int64_t>();
  for (std::int64_t t = 0; t < steps; ++t)
    for (std::int64_t b = 0; b < batch; ++b) p[t * batch + b] = code_of(text[static_cast<std::size_t>(b * steps + t)]);
  return codes;
}

// The model's LSTM state size H, from the LSTM's recurrent weights R [1, 4H, H].
std::int64_t hidden_size(const recur::onnx_io::Model& model) {
  for (const auto& p : model.parameters())
    if (p.shape().size() == 3 && p.shape()[1] == 4 * p.shape()[2]) return p.shape()[2];
  throw std::runtime_error("the model has no LSTM weights R [1, 4H, H]");
}

// The chunk model of TruncatedBptt: the sum over counted steps of the batch-mean
// cross-entropy of the next character, from the carried state {h, c}.
nn::ChunkModel language_model_loss(const recur::onnx_io::Model& model) {
  return [&model](std::span<const Var> state, const Tensor& inputs, const Tensor& targets, std::int64_t from) {
    auto out = model.run({{"codes", Var(inputs)}, {"h0", state[0]}, {"c0", state[1]}});
    const Var& logits = out.at("logits");
    const std::int64_t n = inputs.shape()[0], batch = inputs.shape()[1], counted = n - from;
    Var loss;
    if (counted > 0) {
      Var counted_logits = reshape(slice(logits, 0, from, n), {counted * batch, kVocabulary});
      loss = cross_entropy(counted_logits, reshape(slice(targets, 0, from, n), {counted * batch})) *
             static_cast<double>(counted);
    }
    return nn::ChunkResult{loss, {out.at("h_n"), out.at("c_n")}};
  };
}

// Logits of `model` over `codes` from zero state, without recording a gradient.
Tensor logits_of(const recur::onnx_io::Model& model, const Tensor& codes, std::int64_t hidden) {
  NoGrad no_grad;
  Tape tape;
  const Tensor zero = zeros({1, codes.shape()[1], hidden});
  return model.run({{"codes", Var(codes)}, {"h0", Var(zero)}, {"c0", Var(zero)}}).at("logits").value();
}

// Mean cross-entropy of predicting each next character of `codes` [T, B].
double loss_on(const recur::onnx_io::Model& model, const Tensor& codes, std::int64_t hidden) {
  const std::int64_t n = codes.shape()[0] - 1, batch = codes.shape()[1];
  const Tensor logits = logits_of(model, slice(codes, 0, 0, n), hidden);
  return cross_entropy(reshape(logits, {n * batch, kVocabulary}), reshape(slice(codes, 0, 1, n + 1), {n * batch})).item();
}

void declare_options(CLI::App& app, Options& o) {
  const auto positive = examples::at_least(1L);
  app.add_option("--model", o.model, "the ONNX model to fine-tune (made by examples/make_onnx_char_lm.py)");
  app.add_option("--corpus", o.corpus, "text file or directory of text files");
  app.add_option("--out", o.out, "where the fine-tuned model is written (.onnx)");
  app.add_option("--steps", o.steps, "training steps (one step = bptt characters of every stream)")->check(positive);
  app.add_option("--batch", o.batch, "parallel streams per step")->check(positive);
  app.add_option("--bptt", o.bptt, "characters per step, the truncation length")->check(positive);
  app.add_option("--lr", o.lr, "Adam learning rate");
  app.add_option("--clip", o.clip, "clip gradients to this global norm (0: off)");
}

int run(const Options& o) {
  const recur::onnx_io::Model model = recur::onnx_io::load(o.model);
  const std::int64_t hidden = hidden_size(model);
  // The floating-point initializers train; the integer ones (shapes, axes) stay.
  NamedShared trained;
  std::int64_t weights = 0;
  for (const auto& [name, p] : model.named_parameters())
    if (p.dtype() != DType::int64) {
      trained.emplace_back(name, p);
      weights += numel(p.shape());
    }
  std::printf("loaded %s: opset %lld, %zu initializers, %lld trainable weights, LSTM hidden size %lld\n",
              o.model.c_str(), static_cast<long long>(model.opset()), model.parameters().size(),
              static_cast<long long>(weights), static_cast<long long>(hidden));

  const examples::CharCorpus corpus({o.corpus});
  const Tensor codes = streams(corpus.text(), o.batch);
  const std::int64_t stream_length = codes.shape()[0] - 1;
  if (stream_length < o.bptt) throw std::runtime_error("the corpus is too short for --batch and --bptt");
  const Tensor inputs = slice(codes, 0, 0, stream_length), targets = slice(codes, 0, 1, stream_length + 1);
  // A fixed probe: the first 4 bptt windows of every stream, scored before and after.
  const Tensor probe = slice(codes, 0, 0, std::min<std::int64_t>(4 * o.bptt, stream_length) + 1);
  const double probe_before = loss_on(model, probe, hidden);
  std::printf("fine-tuning on %zu characters of %s: %ld streams, TBPTT(k1 = %ld), Adam lr %g\n", corpus.text().size(),
              o.corpus.c_str(), o.batch, o.bptt, o.lr);

  optim::Adam adam(trained, {.lr = o.lr});
  std::vector<Shared> trained_parameters;
  for (const auto& named : trained) trained_parameters.push_back(named.second);
  const Tensor zero = zeros({1, o.batch, hidden});
  nn::TruncatedBptt tbptt({.k1 = o.bptt}, {zero, zero}, language_model_loss(model));
  examples::Progress progress(o.steps, "chars");
  const std::int64_t steps_per_pass = stream_length / o.bptt;
  for (long step = 1; step <= o.steps; ++step) {
    const std::int64_t chunk = (step - 1) % steps_per_pass;
    if (chunk == 0 && step > 1) tbptt.reset({zero, zero});  // a new pass over the text
    const std::int64_t from = chunk * o.bptt;
    tbptt.feed(slice(inputs, 0, from, from + o.bptt), slice(targets, 0, from, from + o.bptt),
               [&](const nn::WindowReport& r) {
                 if (o.clip > 0) optim::clip_grad_norm(trained_parameters, o.clip);
                 adam.step();
                 adam.zero_grad();
                 progress.update(step, r.loss, static_cast<double>(r.counted * o.batch));
               });
  }
  progress.interrupt();
  const double probe_after = loss_on(model, probe, hidden);
  std::printf("probe loss (nats/char): %.4f before, %.4f after fine-tuning\n", probe_before, probe_after);

  // Written back as ONNX with the trained weights, and read again.
  recur::onnx_io::save(o.out, model);
  const recur::onnx_io::Model reloaded = recur::onnx_io::load(o.out);
  const Tensor trained_logits = logits_of(model, probe, hidden), reloaded_logits = logits_of(reloaded, probe, hidden);
  const double difference = max(abs(trained_logits - reloaded_logits)).item();
  std::printf("wrote %s; loaded again, its logits on the probe differ from the trained model's by %g (loss %.4f)\n",
              o.out.c_str(), difference, loss_on(reloaded, probe, hidden));
  if (difference != 0.0) {
    std::fprintf(stderr, "the written model does not give the trained outputs\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(
      argc, argv, "recur_onnx_finetune",
      "Loads a character-level LSTM language model exported from PyTorch as ONNX, fine-tunes it with truncated BPTT "
      "on text that needs no download, writes the trained model as ONNX and checks that it loads to the same outputs.",
      declare_options, run);
}
