#pragma once
// OpenBLAS's own cblas.h (not the BLAS alternatives' link): it also declares
// openblas_set_num_threads and openblas_get_parallel, and its blasint is the width the
// library was built with. Debian ships one copy per build of the library; a machine may hold
// either or both (libopenblas-openmp-dev alone satisfies libopenblas-dev), and their
// declarations are the same.
#if __has_include(<x86_64-linux-gnu/openblas-openmp/cblas.h>)
#include <x86_64-linux-gnu/openblas-openmp/cblas.h>
#elif __has_include(<x86_64-linux-gnu/openblas-pthread/cblas.h>)
#include <x86_64-linux-gnu/openblas-pthread/cblas.h>
#else
#error "recur needs OpenBLAS's development files (Debian: libopenblas-openmp-dev or libopenblas-pthread-dev)"
#endif
