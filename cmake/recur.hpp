#pragma once
// recur: the one header users include.
#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/dtype.hpp>
#include <recur/core/error.hpp>
#include <recur/core/npy.hpp>
#include <recur/core/random.hpp>
#include <recur/core/shape.hpp>
#include <recur/core/storage.hpp>
#include <recur/core/tensor.hpp>
#include <recur/core/xtensor_interop.hpp>

#include <recur/autodiff/gradcheck.hpp>
#include <recur/autodiff/module.hpp>
#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/tape.hpp>
#include <recur/autodiff/var.hpp>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/linalg.hpp>
#include <recur/ops/scan/jax.hpp>
#include <recur/ops/scan/onnx.hpp>
#include <recur/ops/scan/theano.hpp>
#include <recur/ops/scan/types.hpp>
#include <recur/ops/loss.hpp>
#include <recur/ops/nn/tbptt.hpp>
#include <recur/ops/random_stream.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/softmax.hpp>
#include <recur/ops/unary.hpp>
