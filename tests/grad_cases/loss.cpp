#include "grad_table.hpp"
namespace recur::testing {
std::vector<GradCase> loss_cases() { return {}; }
}
