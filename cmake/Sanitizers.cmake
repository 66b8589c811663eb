# RECUR_SANITIZE=ON instruments everything built here with ASan and UBSan; CI runs the
# suite once this way. UBSan findings abort so that they fail the test that caused them.
# Line tables only (-g1): reports still name file and line, and the build (CI's longest
# step) is shorter than with full debug information.
if(RECUR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
# RECUR_SANITIZE_THREAD=ON instruments everything with ThreadSanitizer and builds only the
# thread tests (tests/test_threads*.cpp, one executable): CI runs them this way to find
# data races between threads that share variables. Line tables only (-g1) for the reports,
# to keep the build short.
if(RECUR_SANITIZE_THREAD)
  if(RECUR_SANITIZE)
    message(FATAL_ERROR "RECUR_SANITIZE and RECUR_SANITIZE_THREAD cannot be combined (one sanitizer runtime per build)")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=thread)
endif()
# RECUR_BUILD_FUZZ=ON instruments the library for libFuzzer's coverage (the harnesses in
# tests/fuzz link the fuzzer's main), with ASan and UBSan so that memory errors crash.
if(RECUR_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "RECUR_BUILD_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
