#include <recur/core/onednn_matmul_detail.hpp>

#include <x86_64-linux-gnu/openblas-pthread/cblas.h>  // openblas_get_parallel: the same in every build

#ifdef RECUR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace recur::blas::detail {

bool blas_runs_on_openmp() { return openblas_get_parallel() == OPENBLAS_OPENMP; }

#ifdef RECUR_HAVE_ONEDNN

bool onednn_built_in() { return true; }

struct OnednnMatmul::Primitive {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul matmul;
  dnnl::memory weights;  // B in the primitive's own layout
  // A and C wrap the caller's buffers; each call points them at its own (set_data_handle).
  dnnl::memory a, c;
};

std::unique_ptr<OnednnMatmul> OnednnMatmul::make(std::int64_t m, std::int64_t n, std::int64_t k, const float* b,
                                                 std::int64_t ldb, bool b_transposed, std::int64_t lda,
                                                 std::int64_t ldc, float beta) {
  using dnnl::memory;
  if (m <= 0 || n <= 0 || k <= 0 || (beta != 0.f && beta != 1.f)) return nullptr;
  try {
    auto p = std::make_unique<Primitive>();
    const memory::desc a_md({m, k}, memory::data_type::f32, memory::dims{lda, 1});
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
    // B [k, n] row-major, or given as [n, k]: the same matrix with swapped strides.
    const memory::desc b_md({k, n}, memory::data_type::f32,
                            b_transposed ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc any_b({k, n}, memory::data_type::f32, memory::format_tag::any);
    dnnl::primitive_attr attr;
    if (beta == 1.f) {  // C += A op(B): the sum post-op reads C before it is written
      dnnl::post_ops ops;
      ops.append_sum(1.f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, any_b, c_md), attr, p->engine);
    p->matmul = dnnl::matmul(pd);
    memory given(b_md, p->engine, const_cast<float*>(b));  // read only, by the reorder
    p->weights = memory(pd.weights_desc(), p->engine);
    dnnl::reorder(given, p->weights).execute(p->stream, given, p->weights);
    p->stream.wait();
    p->a = memory(a_md, p->engine, DNNL_MEMORY_NONE);
    p->c = memory(c_md, p->engine, DNNL_MEMORY_NONE);
    return std::unique_ptr<OnednnMatmul>(new OnednnMatmul(std::move(p)));
  } catch (const dnnl::error&) {  // no primitive for this product here: the caller's fallback
    return nullptr;
  }
}

void OnednnMatmul::operator()(const float* a, float* c) const {
  p_->a.set_data_handle(const_cast<float*>(a));
  p_->c.set_data_handle(c);
  p_->matmul.execute(p_->stream, {{DNNL_ARG_SRC, p_->a}, {DNNL_ARG_WEIGHTS, p_->weights}, {DNNL_ARG_DST, p_->c}});
  p_->stream.wait();
}

#else  // built without oneDNN

bool onednn_built_in() { return false; }
struct OnednnMatmul::Primitive {};
std::unique_ptr<OnednnMatmul> OnednnMatmul::make(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t,
                                                 bool, std::int64_t, std::int64_t, float) {
  return nullptr;
}
void OnednnMatmul::operator()(const float*, float*) const {}

#endif

OnednnMatmul::OnednnMatmul(std::unique_ptr<Primitive> p) : p_(std::move(p)) {}
OnednnMatmul::~OnednnMatmul() = default;

}  // namespace recur::blas::detail
