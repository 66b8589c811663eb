# All dependencies come from Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(xtensor-blas REQUIRED)
find_package(Boost 1.74 REQUIRED)
# libzip reads .npz archives (stored, deflated, ZIP64) for load_npz. Found by hand, not
# with find_package(libzip): Debian's libzip-config.cmake also imports the zipcmp/zipmerge/
# ziptool programs and fails when those packages are not installed.
find_path(RECUR_ZIP_INCLUDE zip.h REQUIRED)
find_library(RECUR_ZIP NAMES zip REQUIRED)
# OpenBLAS provides cblas_sgemm/dgemm; xtensor-blas's LAPACK calls go through it too.
find_library(RECUR_OPENBLAS NAMES openblas REQUIRED)
set(RECUR_BLAS_LIBRARIES ${RECUR_OPENBLAS})
