# libxsmm (Debian's libxsmm-dev: JIT small-matrix kernels, the per-step recurrent products of
# core/repeated_gemm.hpp) as the imported target recur::xsmm, when it is installed. Included by
# recur's own build and, installed next to recurConfig.cmake, by the package config. Debian
# ships it as a static library that falls back to the BLAS (sgemm_) for shapes it has no
# kernel for, so it links BLAS after itself.
if(NOT TARGET recur::xsmm)
  find_path(RECUR_XSMM_INCLUDE_DIR libxsmm.h)
  find_library(RECUR_XSMM_LIBRARY NAMES xsmm)
  if(RECUR_XSMM_INCLUDE_DIR AND RECUR_XSMM_LIBRARY)
    add_library(recur::xsmm UNKNOWN IMPORTED)
    set_target_properties(recur::xsmm PROPERTIES
      IMPORTED_LOCATION "${RECUR_XSMM_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RECUR_XSMM_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "BLAS::BLAS;Threads::Threads;rt;${CMAKE_DL_LIBS};m")
  endif()
endif()
