#include <recur/core/onednn_matmul_detail.hpp>

#include <new>

#include <recur/core/blas_threads_detail.hpp>

#ifdef RECUR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace recur::blas::detail {

#ifdef RECUR_HAVE_ONEDNN

bool onednn_built_in() { return true; }

struct OnednnMatmul::Primitive {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul matmul;
  dnnl::memory weights;  // B in the primitive's own layout
  dnnl::memory::desc a, c;
};

std::unique_ptr<OnednnMatmul> OnednnMatmul::make(std::int64_t m, std::int64_t n, std::int64_t k, const float* b,
                                                 std::int64_t ldb, bool b_transposed, std::int64_t lda,
                                                 std::int64_t ldc, float beta, bool own_layout_only) {
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
    const memory::desc& chosen = pd.weights_desc();
    if (own_layout_only && (chosen == memory::desc({k, n}, memory::data_type::f32, memory::format_tag::ab) ||
                            chosen == memory::desc({k, n}, memory::data_type::f32, memory::format_tag::ba)))
      return nullptr;
    p->matmul = dnnl::matmul(pd);
    memory given(b_md, p->engine, const_cast<float*>(b));  // read only, by the reorder
    p->weights = memory(chosen, p->engine);
    dnnl::stream stream(p->engine);
    dnnl::reorder(given, p->weights).execute(stream, given, p->weights);
    stream.wait();
    p->a = a_md;
    p->c = c_md;
    return std::unique_ptr<OnednnMatmul>(new OnednnMatmul(std::move(p)));
  } catch (const dnnl::error&) {  // no primitive for this product here: the caller's fallback
    return nullptr;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

bool OnednnMatmul::run(const float* a, float* c) const noexcept {
  try {
    match_thread_count();
    dnnl::stream stream(p_->engine);
    dnnl::memory am(p_->a, p_->engine, const_cast<float*>(a)), cm(p_->c, p_->engine, c);
    p_->matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, p_->weights}, {DNNL_ARG_DST, cm}});
    stream.wait();
    return true;
  } catch (...) {  // dnnl::error or std::bad_alloc
    return false;
  }
}

#else  // built without oneDNN

bool onednn_built_in() { return false; }
struct OnednnMatmul::Primitive {};
std::unique_ptr<OnednnMatmul> OnednnMatmul::make(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t,
                                                 bool, std::int64_t, std::int64_t, float, bool) {
  return nullptr;
}
bool OnednnMatmul::run(const float*, float*) const noexcept { return false; }

#endif

OnednnMatmul::OnednnMatmul(std::unique_ptr<Primitive> p) : p_(std::move(p)) {}
OnednnMatmul::~OnednnMatmul() = default;

}  // namespace recur::blas::detail
