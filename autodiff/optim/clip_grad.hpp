#pragma once
// Gradient clipping as torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (PyTorch 1.13).
// Both scale the parameters' gradients in place (Shared::update_grad: a gradient buffer
// that a tape or a caller of grad() still holds is copied first) and skip parameters
// without a gradient.
#include <limits>
#include <vector>

#include <recur/autodiff/module.hpp>

namespace recur::optim {

// The norm of all gradients together, as one vector (norm_type = p > 0, or infinity for the
// largest magnitude); when it exceeds max_norm, every gradient is multiplied by
// max_norm / (norm + 1e-6). Returns the norm before clipping (0 without gradients).
// ValueError unless max_norm >= 0 and norm_type > 0.
// A gradient with an infinite or NaN element makes the norm inf or NaN. Then, with
// error_if_nonfinite, a ValueError names the norm and the first parameter whose gradient
// made it so; without it (the default, as in PyTorch) the non-finite norm is returned for
// the caller to act on (e.g. skip the step). Either way the gradients stay unchanged: unlike
// PyTorch, which scales them by max_norm / inf = 0 and so turns an infinite element into
// NaN, recur never makes a NaN the caller did not have.
double clip_grad_norm(const std::vector<Shared>& parameters, double max_norm, double norm_type = 2.0,
                      bool error_if_nonfinite = false);
double clip_grad_norm(const NamedShared& parameters, double max_norm, double norm_type = 2.0,
                      bool error_if_nonfinite = false);
inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// Clamps every gradient element to [-clip, clip]. ValueError unless clip >= 0.
void clip_grad_value(const std::vector<Shared>& parameters, double clip);
void clip_grad_value(const NamedShared& parameters, double clip);

}  // namespace recur::optim
