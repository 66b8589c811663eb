# Debian's OpenMP build of OpenBLAS (libopenblas-openmp-dev), when installed, is the BLAS recur
# links: its threads are OpenMP's, the same pool as oneDNN's (core/repeated_gemm.hpp), where
# the default pthreads build keeps a pool of its own that spins against OpenMP's on the same
# cores. Its directory goes first in CMAKE_LIBRARY_PATH, so FindBLAS (BLA_VENDOR OpenBLAS)
# finds it there; the programs linked with it get that directory in their run path, so they
# load it whichever build the system's `libopenblas.so.0` alternative points to. Included by
# recur's own build and by the package config. -DRECUR_OPENBLAS_OPENMP=OFF keeps the system's
# choice (then the large per-step products stay on OpenBLAS: core/repeated_gemm.hpp).
if(NOT DEFINED RECUR_OPENBLAS_OPENMP)
  set(RECUR_OPENBLAS_OPENMP ON)
endif()
if(RECUR_OPENBLAS_OPENMP AND (NOT DEFINED BLA_VENDOR OR BLA_VENDOR STREQUAL "OpenBLAS"))
  find_path(RECUR_OPENBLAS_OPENMP_DIR libopenblas.so
            PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
  if(RECUR_OPENBLAS_OPENMP_DIR)
    list(PREPEND CMAKE_LIBRARY_PATH "${RECUR_OPENBLAS_OPENMP_DIR}")
  endif()
endif()
