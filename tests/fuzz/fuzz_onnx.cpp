// libFuzzer harness for recur::onnx_io::load (ops/onnx/model.hpp): any bytes give a loaded
// model or a recur::Error (IOError, ValueError, onnx_io::UnsupportedError), never a crash, a
// sanitizer finding or another exception. A model that loads is also written back
// (trained_proto), which walks every initializer again.
#include <recur/ops/onnx/model.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const recur::onnx_io::Model model =
        recur::onnx_io::load_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)model.input_names();
    (void)model.output_names();
    (void)model.trained_proto();
  } catch (const recur::Error&) {
    // What a bad model must give.
  }
  return 0;
}
