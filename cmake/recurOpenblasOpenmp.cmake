# Debian's OpenMP build of OpenBLAS (libopenblas-openmp-dev), when installed, is the BLAS recur
# links: its threads are OpenMP's, the same pool as oneDNN's (core/repeated_gemm.hpp), where
# the default pthreads build keeps a pool of its own that spins against OpenMP's on the same
# cores. recur_prefer_openblas_openmp() puts its directory first in CMAKE_LIBRARY_PATH, so
# that FindBLAS (BLA_VENDOR OpenBLAS) and the LAPACK search of xtensor-blas find it there;
# recur_restore_library_path() undoes that once they ran. The programs linked with it get
# that directory in their build tree's run path, so they load it whichever build the
# system's `libopenblas.so.0` alternative points to. Included by recur's own build and by
# the package config. -DRECUR_OPENBLAS_OPENMP=OFF keeps the system's choice (then the large
# per-step products stay on OpenBLAS: core/repeated_gemm.hpp).
if(NOT DEFINED RECUR_OPENBLAS_OPENMP)
  set(RECUR_OPENBLAS_OPENMP ON)
endif()
macro(recur_prefer_openblas_openmp)
  set(_recur_library_path "${CMAKE_LIBRARY_PATH}")
  set(_recur_want_openmp FALSE)
  if(RECUR_OPENBLAS_OPENMP AND (NOT DEFINED BLA_VENDOR OR BLA_VENDOR STREQUAL "OpenBLAS"))
    find_path(RECUR_OPENBLAS_OPENMP_DIR libopenblas.so
              PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
    if(RECUR_OPENBLAS_OPENMP_DIR)
      list(PREPEND CMAKE_LIBRARY_PATH "${RECUR_OPENBLAS_OPENMP_DIR}")
      set(_recur_want_openmp TRUE)
    endif()
  endif()
  # FindBLAS and FindLAPACK keep what they found in the cache: found again when the choice
  # changed since.
  foreach(_recur_var BLAS_openblas_LIBRARY LAPACK_openblas_LIBRARY)
    if(DEFINED CACHE{${_recur_var}})
      if("${${_recur_var}}" MATCHES "/openblas-openmp/")
        set(_recur_have_openmp TRUE)
      else()
        set(_recur_have_openmp FALSE)
      endif()
      if(NOT _recur_want_openmp STREQUAL _recur_have_openmp)
        unset(${_recur_var} CACHE)
      endif()
    endif()
  endforeach()
endmacro()
macro(recur_restore_library_path)
  set(CMAKE_LIBRARY_PATH "${_recur_library_path}")
endmacro()
