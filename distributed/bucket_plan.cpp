#include <recur/distributed/bucket_plan.hpp>

namespace recur::distributed {

std::vector<Bucket> plan_buckets(const std::vector<ParameterSize>& parameters, std::size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  for (std::size_t k = parameters.size(); k-- > 0;) {
    const ParameterSize& p = parameters[k];
    const auto bytes = [&](std::int64_t numel) { return static_cast<std::size_t>(numel) * size_of(p.dtype); };
    const bool fits = !buckets.empty() && buckets.back().dtype == p.dtype &&
                      bytes(buckets.back().numel + p.numel) <= bucket_bytes;
    if (!fits) buckets.push_back(Bucket{.dtype = p.dtype});
    Bucket& b = buckets.back();
    b.slots.push_back({.parameter = k, .offset = b.numel, .numel = p.numel});
    b.numel += p.numel;
  }
  return buckets;
}

}  // namespace recur::distributed
