// Checks that an installed recur::onnx links and writes a model the ONNX checker accepts.
#include <recur/ops/onnx/export_layers.hpp>
#include <recur/recur.hpp>

#include <iostream>

#include <onnx/checker.h>

int main() {
  recur::Generator gen(0);
  recur::nn::LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true}, gen);
  recur::onnx_io::save("consumer_lstm.onnx", lstm, {.initial_state = true, .sequence_lens = true});
  onnx::checker::check_model(std::string("consumer_lstm.onnx"));  // throws if the file is not a valid model
  std::cout << "consumer: recur::onnx_io::save wrote a model that passes onnx::checker\n";
  return 0;
}
