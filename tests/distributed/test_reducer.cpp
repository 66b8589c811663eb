// GradientReducer, bucket planning and broadcast: the mean of each rank's own gradient,
// exactly; buckets in reverse parameter order split by dtype and size; clipping after the
// reduction sees the same norm on every rank; misuse and mismatched ranks are clear errors.
#include <gtest/gtest.h>

#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/gradient_reducer.hpp>

#include "models.hpp"
#include "world.hpp"

namespace recur::distributed::testing {
namespace {

TEST(BucketPlan, ReverseOrderSplitByDtypeAndSize) {
  const std::vector<ParameterSize> sizes{{.numel = 10, .dtype = f64}, {.numel = 3, .dtype = f64},
                                         {.numel = 4, .dtype = DType::float32}, {.numel = 2, .dtype = f64},
                                         {.numel = 1, .dtype = f64}};
  const std::vector<Bucket> buckets = plan_buckets(sizes, 32);  // 4 doubles
  // Parameters 4, 3 (3 doubles), then 2 (float32), then 1 (3 doubles), then 0 (10 > 4: alone).
  ASSERT_EQ(buckets.size(), 4u);
  ASSERT_EQ(buckets[0].slots.size(), 2u);
  EXPECT_EQ(buckets[0].slots[0].parameter, 4u);
  EXPECT_EQ(buckets[0].slots[1].parameter, 3u);
  EXPECT_EQ(buckets[0].slots[1].offset, 1);
  EXPECT_EQ(buckets[0].numel, 3);
  EXPECT_EQ(buckets[1].dtype, DType::float32);
  EXPECT_EQ(buckets[1].slots[0].parameter, 2u);
  EXPECT_EQ(buckets[2].slots[0].parameter, 1u);
  EXPECT_EQ(buckets[3].slots[0].parameter, 0u);
  EXPECT_EQ(buckets[3].numel, 10);
}

TEST(GradientReducer, EveryGradientBecomesTheMeanOverRanks) {
  const Communicator& comm = world();
  const double r = comm.rank() + 1, p = comm.size();
  Shared w(ones({3}, f64), "w"), v(ones({2}, f64), "v"), only_on_root(ones({2}, f64), "only_on_root");
  Shared unread(ones({4}, f64), "unread");
  GradientReducer reducer(comm, {w, v, only_on_root, unread}, {.bucket_bytes = 16});
  {
    Tape tape;
    Var loss = sum(Var(w) * r) + sum(Var(v) * Var(v)) * r;
    if (comm.is_root()) loss = loss + sum(Var(only_on_root) * 3.0);
    tape.backward(loss);
  }
  reducer.finish();
  const double mean_r = (p + 1) / 2;  // mean of 1..p
  for (std::int64_t i = 0; i < 3; ++i) EXPECT_EQ(w.grad().data<double>()[i], mean_r);
  for (std::int64_t i = 0; i < 2; ++i) EXPECT_EQ(v.grad().data<double>()[i], 2 * mean_r);
  for (std::int64_t i = 0; i < 2; ++i) EXPECT_EQ(only_on_root.grad().data<double>()[i], 3.0 / p);
  ASSERT_TRUE(unread.has_grad());
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(unread.grad().data<double>()[i], 0.0);
  EXPECT_EQ(reducer.stats().bytes, (3 + 2 + 2 + 4) * sizeof(double));
  EXPECT_EQ(reducer.stats().buckets, reducer.buckets().size());
  EXPECT_GE(reducer.buckets().size(), 3u);
}

TEST(GradientReducer, SecondBackwardBeforeFinishIsAnError) {
  const Communicator& comm = world();
  Shared w(ones({2}, f64), "w");
  Shared other(ones({2}, f64), "other");  // its bucket is never complete: nothing starts
  GradientReducer reducer(comm, {w, other}, {.bucket_bytes = 1 << 20});
  {
    Tape tape;
    tape.backward(sum(Var(w)));
  }
  try {
    Tape tape;
    tape.backward(sum(Var(w)));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("second backward before finish()"), std::string::npos) << e.what();
  }
  reducer.finish();  // the ranks still finish together
  EXPECT_EQ(w.grad().data<double>()[0], 1.0);  // the bucket took w's gradient at the first pass
}

TEST(GradientReducer, ClippingAfterTheReductionSeesTheSameNormOnEveryRank) {
  const Communicator& comm = world();
  Generator gen(static_cast<std::uint64_t>(30 + comm.rank()));  // different data per rank
  Mlp model(1);
  GradientReducer reducer(comm, model.parameters());
  Tape tape;
  tape.backward(mse(model(Var(normal({4, kInput}, 0, 1, gen, f64))), Var(normal({4, kOutput}, 0, 1, gen, f64))));
  const double local_norm = optim::clip_grad_norm(model.parameters(), 1e9);
  reducer.finish();
  const double norm = optim::clip_grad_norm(model.parameters(), 0.1);
  EXPECT_EQ(norm, root_value(norm));
  const double root_local_norm = root_value(local_norm);
  if (!comm.is_root()) {
    EXPECT_NE(local_norm, root_local_norm);  // the data did differ
  }
  EXPECT_NEAR(optim::clip_grad_norm(model.parameters(), 1e9), 0.1, 1e-6);
}

TEST(Broadcast, EveryRankGetsRankZerosValues) {
  const Communicator& comm = world();
  Shared a(full({2, 3}, comm.rank() + 1.0, f64), "a"), n(scalar(comm.rank() + 5.0, DType::int64), "n");
  broadcast(comm, NamedShared{{"a", a}, {"n", n}});
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(a.value().data<double>()[i], 1.0);
  EXPECT_EQ(n.value().item<std::int64_t>(), 5);
}

TEST(Broadcast, MismatchedVariablesAreAnErrorOnEveryRankAndChangeNothing) {
  const Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  Shared a(full({comm.rank() == 1 ? 4 : 3}, comm.rank() + 1.0, f64), "a");
  try {
    broadcast(comm, std::vector<Shared>{a});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: its variables differ from rank 0's"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.value().data<double>()[0], comm.rank() + 1.0);
}

}  // namespace
}  // namespace recur::distributed::testing
