# All dependencies come from Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(xtensor-blas REQUIRED)
find_package(Boost 1.74 REQUIRED)
# OpenBLAS provides cblas_sgemm/dgemm; xtensor-blas's LAPACK calls go through it too.
find_library(RECUR_OPENBLAS NAMES openblas REQUIRED)
set(RECUR_BLAS_LIBRARIES ${RECUR_OPENBLAS})
