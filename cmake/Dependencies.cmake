# All dependencies come from Debian packages (scripts/install-deps.sh installs them).
# Each is linked as an imported target, never as a path, so that the installed package's
# recurTargets.cmake names only targets and recurConfig.cmake finds them again on the
# consumer's machine.
find_package(Threads REQUIRED)
# recur calls OpenBLAS (cblas_sgemm/dgemm and openblas_set_num_threads); xtensor-blas's
# LAPACK calls go through it too. CMake's FindBLAS gives it as BLAS::BLAS; -DBLA_VENDOR=...
# picks another provider of the same interface. Set before xtensor-blas, whose package
# config looks for BLAS as well, so that both agree.
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR OpenBLAS)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/recurOpenblasOpenmp.cmake)
recur_prefer_openblas_openmp()
find_package(BLAS REQUIRED)
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(xtensor-blas REQUIRED)
recur_restore_library_path()
find_package(Boost 1.74 REQUIRED)
# nlohmann-json (header-only) parses and writes safetensors headers inside recur's own .cpp
# files; no public header includes it, so it is a build-time dependency only
# ($<BUILD_INTERFACE:...> in CMakeLists.txt) and the installed package does not look for it.
find_package(nlohmann_json 3.10 REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/recurZip.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/recurXsmm.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/recurOnednn.cmake)
# The ONNX importer (ops/onnx/, target recur::onnx) needs the ONNX project's library
# (libonnx-dev: its protobuf classes and checker) and protobuf; without them it is not built.
# RECUR_BUILD_ONNX=OFF leaves it out on purpose (the ThreadSanitizer build does not need it).
if(RECUR_BUILD_ONNX)
  find_package(Protobuf QUIET)
  find_package(ONNX CONFIG QUIET)
endif()
if(RECUR_BUILD_ONNX AND Protobuf_FOUND AND ONNX_FOUND)
  set(RECUR_ONNX_FOUND TRUE)
else()
  set(RECUR_ONNX_FOUND FALSE)
  message(STATUS "recur: ONNX library or protobuf not found; recur::onnx (ops/onnx/) is not built")
endif()
