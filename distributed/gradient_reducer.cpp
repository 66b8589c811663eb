#include <recur/distributed/gradient_reducer.hpp>

#include <algorithm>
#include <cstring>

#include <recur/core/creation.hpp>

namespace recur::distributed {
namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    default: fail<DTypeError>("GradientReducer", "gradients must be float32 or float64, got ", dtype);
  }
}

}  // namespace

GradientReducer::GradientReducer(const Communicator& comm, std::vector<Shared> parameters, ReducerOptions options)
    : comm_(comm), parameters_(std::move(parameters)), options_(options), observing_(*this) {
  std::vector<ParameterSize> sizes;
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    const Shared& p = parameters_[k];
    if (!p.defined()) fail<ValueError>("GradientReducer", "parameter ", k, " is a null Shared");
    mpi_type(p.dtype());
    if (!index_of_.emplace(p.identity(), k).second)
      fail<ValueError>("GradientReducer", "parameter '", p.name(), "' (", k, ") is listed twice");
    sizes.push_back({.numel = p.value().numel(), .dtype = p.dtype()});
  }
  buckets_ = plan_buckets(sizes, options_.bucket_bytes);
  states_.resize(buckets_.size());
  bucket_of_.resize(parameters_.size());
  slot_of_.resize(parameters_.size());
  copied_.assign(parameters_.size(), 0);
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    states_[b].buffer = Tensor::empty({buckets_[b].numel}, buckets_[b].dtype);
    for (std::size_t s = 0; s < buckets_[b].slots.size(); ++s) {
      bucket_of_[buckets_[b].slots[s].parameter] = b;
      slot_of_[buckets_[b].slots[s].parameter] = s;
    }
  }
  if (options_.progress == Progress::thread) thread_ = std::make_unique<CommunicationThread>(comm_);
  reset();
}

void GradientReducer::reset() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    states_[b].waiting = buckets_[b].slots.size();
    states_[b].started = false;
  }
  std::fill(copied_.begin(), copied_.end(), 0);
  next_to_start_ = 0;
  polled_ = 0;
}

void GradientReducer::gradient_final(const Shared& shared) {
  const auto found = index_of_.find(shared.identity());
  if (found == index_of_.end()) return;  // not one of ours
  const std::size_t k = found->second;
  if (copied_[k])
    fail<ValueError>("GradientReducer", "parameter '", shared.name(),
                     "' received gradients from a second backward before finish(); call finish() after each backward");
  copy_in(k);
  if (options_.overlap) start_ready_buckets();
}

void GradientReducer::copy_in(std::size_t k) {
  const Bucket& bucket = buckets_[bucket_of_[k]];
  const BucketSlot& slot = bucket.slots[slot_of_[k]];
  BucketState& state = states_[bucket_of_[k]];
  const Tensor g = parameters_[k].grad();  // zeros when this rank produced none
  const std::size_t element = size_of(bucket.dtype);
  std::memcpy(static_cast<char*>(state.buffer.raw_data()) + static_cast<std::size_t>(slot.offset) * element,
              g.raw_data(), g.nbytes());
  copied_[k] = 1;
  --state.waiting;
}

void GradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && states_[next_to_start_].waiting == 0) start(next_to_start_++);
}

void GradientReducer::start(std::size_t b) {
  BucketState& state = states_[b];
  const std::int64_t numel = buckets_[b].numel;
  if (numel > INT32_MAX) fail<ValueError>("GradientReducer", "bucket ", b, " has ", numel, " elements, more than MPI counts");
  const MPI_Datatype type = mpi_type(buckets_[b].dtype);
  const auto start_all_reduce = [this, &state, numel, type](MPI_Request* request) {
    return MPI_Iallreduce(MPI_IN_PLACE, state.buffer.raw_data(), static_cast<int>(numel), type, MPI_SUM, comm_.handle(),
                          request);
  };
  if (thread_) thread_->submit(start_all_reduce);
  else check_mpi(start_all_reduce(&state.request), "GradientReducer");
  state.started = true;
}

void GradientReducer::between_nodes() {
  if (thread_) return;  // the thread polls
  // Polling one outstanding request drives Open MPI's progress engine for all of them.
  while (polled_ < next_to_start_) {
    int done = 0;
    check_mpi(MPI_Test(&states_[polled_].request, &done, MPI_STATUS_IGNORE), "GradientReducer");
    if (!done) return;
    ++polled_;
  }
}

void GradientReducer::finish() {
  const auto begin = std::chrono::steady_clock::now();
  stats_ = ReducerStats{.buckets = buckets_.size(), .started_during_backward = next_to_start_};
  for (std::size_t k = 0; k < parameters_.size(); ++k)
    if (!copied_[k]) copy_in(k);
  start_ready_buckets();
  if (thread_) thread_->wait_all("GradientReducer::finish");
  const double world = comm_.size();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    BucketState& state = states_[b];
    if (!thread_) comm_.wait(state.request, "GradientReducer::finish");
    stats_.bytes += state.buffer.nbytes();
    dispatch_floating("GradientReducer", buckets_[b].dtype, [&]<class E>() {
      const E* sum = state.buffer.data<E>();
      for (const BucketSlot& slot : buckets_[b].slots) {
        Shared& p = parameters_[slot.parameter];
        Tensor mean = Tensor::empty(p.shape(), p.dtype());
        E* out = mean.data<E>();
        for (std::int64_t i = 0; i < slot.numel; ++i) out[i] = sum[slot.offset + i] / static_cast<E>(world);
        p.zero_grad();
        p.accumulate_grad(mean);
      }
    });
  }
  reset();
  stats_.finish_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace recur::distributed
