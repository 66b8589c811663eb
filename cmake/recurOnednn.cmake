# oneDNN (Debian's libdnnl-dev) as the imported target recur::dnnl, when it is installed: the
# large per-step products of core/repeated_gemm.hpp, and the benchmarks' peer. Found as a
# library and a header, not through oneDNN's CMake config, which insists on the OpenCL
# headers of its GPU runtime. Included by recur's own build and, installed next to
# recurConfig.cmake, by the package config.
if(NOT TARGET recur::dnnl)
  find_path(RECUR_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  find_library(RECUR_DNNL_LIBRARY NAMES dnnl)
  if(RECUR_DNNL_INCLUDE_DIR AND RECUR_DNNL_LIBRARY)
    add_library(recur::dnnl UNKNOWN IMPORTED)
    set_target_properties(recur::dnnl PROPERTIES
      IMPORTED_LOCATION "${RECUR_DNNL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RECUR_DNNL_INCLUDE_DIR}")
  endif()
endif()
