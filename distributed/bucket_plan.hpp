#pragma once
// How a GradientReducer groups parameters into buckets: in reverse parameter order (the
// order backward usually finishes them, so the first bucket is ready first, as in PyTorch
// DDP), consecutive parameters of one dtype, a bucket closed before it would exceed
// `bucket_bytes` (a parameter larger than that gets a bucket of its own). The plan is a
// pure function of the parameters' sizes, so every rank makes the same one.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <recur/core/dtype.hpp>

namespace recur::distributed {

struct BucketSlot {
  std::size_t parameter = 0;  // index into the parameter list
  std::int64_t offset = 0;    // first element within the bucket
  std::int64_t numel = 0;
};

struct Bucket {
  DType dtype = DType::float32;
  std::int64_t numel = 0;
  std::vector<BucketSlot> slots{};
};

struct ParameterSize {
  std::int64_t numel = 0;
  DType dtype = DType::float32;
};

std::vector<Bucket> plan_buckets(const std::vector<ParameterSize>& parameters, std::size_t bucket_bytes);

}  // namespace recur::distributed
