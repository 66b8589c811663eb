# Everything built here (library, tests, examples, bench, fuzz harnesses) compiles with
# -Wall -Wextra, under GCC and Clang, without a warning; RECUR_WERROR=ON (CI) turns any
# warning into an error so that none comes back. Directory-wide options, not on the recur
# target's interface: consumers of the installed package choose their own flags.
option(RECUR_WERROR "Treat compiler warnings as errors (CI builds with it)" OFF)
add_compile_options(-Wall -Wextra)
if(RECUR_WERROR)
  add_compile_options(-Werror)
endif()
