// recur_bench_onednn: the oneDNN peer (the RNN suite only), with the thread settings of
// recur_bench (see onednn_side.hpp).
#include <string>

#include <dnnl.hpp>

#include "onednn_side.hpp"

int main(int argc, char** argv) {
  bench::use_bench_threads();
  const dnnl_version_t* version = dnnl_version();
  benchmark::AddCustomContext("side", "onednn");
  benchmark::AddCustomContext("onednn_version", std::to_string(version->major) + "." + std::to_string(version->minor) +
                                                    "." + std::to_string(version->patch));
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
