# RECUR_SANITIZE=ON instruments everything built here with ASan and UBSan; CI runs the
# suite once this way. UBSan findings abort so that they fail the test that caused them.
if(RECUR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
# RECUR_BUILD_FUZZ=ON instruments the library for libFuzzer's coverage (the harnesses in
# tests/fuzz link the fuzzer's main), with ASan and UBSan so that memory errors crash.
if(RECUR_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "RECUR_BUILD_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
