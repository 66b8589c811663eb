#pragma once
// The error the ONNX importer adds: a model uses something recur does not import (an op,
// an opset, an attribute value or an element type). Everything else wrong with a model is
// one of recur's usual errors (IOError for files, ValueError for bad graphs, ...).
#include <recur/core/error.hpp>

namespace recur::onnx_io {

struct UnsupportedError : ValueError {
  using ValueError::ValueError;
};

}  // namespace recur::onnx_io
