#!/usr/bin/env bash
# The README's second command (and CI's): install what is missing, then
#  1. build in Release and run the whole suite with ctest (the README's and the guide's
#     code blocks included), then build the API reference (Doxygen, warnings are errors),
#  2. build and run it again under AddressSanitizer + UndefinedBehaviorSanitizer (the guide's
#     code blocks only in step 1),
#  3. build the thread tests under ThreadSanitizer and run them,
#  4. install recur, check that the package is relocatable, and build a tiny consumer
#     project with find_package(recur) from the moved install (recur::distributed on 2 ranks),
#     one with a Makefile through pkg-config, and one that builds recur as its subproject
#     (FetchContent, add_subdirectory).
# Every build is -Wall -Wextra with -Werror (RECUR_WERROR): GCC for steps 1-3, Clang for
# the fuzz build at the end, so a new warning under either compiler fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
jobs="$(nproc)"
# ccache keeps compiled objects between runs (paths relative to this checkout, so another
# clone hits too); the four builds below share nothing else. pch_defines and time_macros let
# it cache the test executables' precompiled headers (tests/CMakeLists.txt).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,pch_defines,time_macros
export CMAKE_CXX_COMPILER_LAUNCHER=ccache

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=OFF -DRECUR_WERROR=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== API reference (Doxygen over the public headers; any warning fails)"
bash scripts/api_docs.sh

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
# The guide's code blocks (tests/docs) run in the Release step only: under the sanitizers
# they would repeat what the library's own tests exercise, for a minute of compiling.
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECUR_SANITIZE=ON -DRECUR_WERROR=ON \
      -DRECUR_BUILD_BENCH=OFF -DRECUR_BUILD_EXAMPLES=OFF -DRECUR_BUILD_DOC_TESTS=OFF
cmake --build build-sanitize -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# An instrumented process takes about 0.2 s to start and stop, most of this step's time
# when every test is a process of its own: here each GoogleTest executable runs whole, in
# one shard per core (the same tests as ctest's entries labelled gtest; leaks are checked
# at each shard's exit), and ctest runs the other entries (MPI ranks, crash, examples).
run_gtest_shards() {
  local exe="$1" dir pids=() shard
  dir="$(dirname "$exe")"
  for ((shard = 0; shard < jobs; shard++)); do
    (cd "$dir" && GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$shard" "./$(basename "$exe")" --gtest_brief=1) \
      >"$exe.shard$shard.log" 2>&1 &
    pids+=($!)
  done
  for shard in "${!pids[@]}"; do
    wait "${pids[$shard]}" || { tail -60 "$exe.shard$shard.log"; echo "$exe failed (shard $shard)" >&2; exit 1; }
  done
  echo "$exe: $(awk '/^\[  PASSED  \]/ {n += $4} END {print n + 0}' "$exe".shard*.log) tests passed"
}
for exe in build-sanitize/tests/recur_tests build-sanitize/tests/onnx/recur_onnx_tests; do
  if [[ -x $exe ]]; then run_gtest_shards "$exe"; fi
done
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -LE gtest
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== ThreadSanitizer build of the thread tests"
# Only the library and tests/test_threads*.cpp; OpenBLAS's own threads are not
# instrumented, so it runs on the calling thread unless a test sets recur's thread count
# (which OpenBLAS follows): what OpenBLAS's threads call is then ignored (scripts/tsan.supp).
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_SANITIZE_THREAD=ON -DRECUR_WERROR=ON \
      -DRECUR_BUILD_BENCH=OFF -DRECUR_BUILD_EXAMPLES=OFF -DRECUR_BUILD_ONNX=OFF -DRECUR_BUILD_DISTRIBUTED=OFF
cmake --build build-tsan -j"$jobs"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp" OPENBLAS_NUM_THREADS=1 \
  ctest --test-dir build-tsan --output-on-failure -j"$jobs"

echo "== install and find_package(recur) from another project"
rm -rf build/install build/relocated build-consumer
cmake --install build --prefix build/install
# An installed header that includes an internal one would not compile for a consumer.
if grep -rl '_detail\.hpp>' build/install/include; then
  echo "installed headers above include internal *_detail.hpp headers" >&2
  exit 1
fi
# The package names its dependencies as targets that recurConfig.cmake finds again on the
# consumer's machine (BLAS::BLAS, recur::zip, ...), and its own files relative to
# ${_IMPORT_PREFIX}: no absolute path (such as /usr/lib/.../libopenblas.so) of this machine.
if grep -nE '(^|[";:<])/[A-Za-z0-9_.-]' build/install/lib/cmake/recur/recurTargets*.cmake; then
  echo "the installed recurTargets*.cmake above hard-code absolute paths of the build machine" >&2
  exit 1
fi
# Moved elsewhere, the install still works: nothing in it depends on where it was put.
mv build/install build/relocated
cmake -S tests/consumer -B build-consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/relocated"
cmake --build build-consumer
./build-consumer/recur_consumer
if [[ -x build-consumer/recur_distributed_consumer ]]; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec -n 2 --oversubscribe ./build-consumer/recur_distributed_consumer
fi
if [[ -x build-consumer/recur_onnx_consumer ]]; then ./build-consumer/recur_onnx_consumer; fi
if [[ -x build-consumer/recur_onnx_export_consumer ]]; then (cd build-consumer && ./recur_onnx_export_consumer); fi

echo "== pkg-config from the moved install, with a plain Makefile"
rm -rf build-consumer-pc && mkdir -p build-consumer-pc
PKG_CONFIG_PATH="$PWD/build/relocated/lib/pkgconfig" make -C tests/consumer_pkgconfig OUT="$PWD/build-consumer-pc"
./build-consumer-pc/recur_pkgconfig_consumer

echo "== recur as a subproject: FetchContent from this checkout, then add_subdirectory"
# Both build recur's library again (in the same place under each build directory, so the
# second hits the first one's ccache); neither builds recur's tests, examples or bench.
for how in fetch subdirectory; do
  rm -rf "build-consumer-$how"
  cmake -S tests/consumer_subproject -B "build-consumer-$how" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DRECUR_CONSUMER_HOW="$how" -DRECUR_SOURCE="$PWD"
  cmake --build "build-consumer-$how" -j"$jobs" --target recur_subproject_consumer
  "./build-consumer-$how/recur_subproject_consumer"
done

# --- fuzzing (libFuzzer, tests/fuzz): a separate block, kept apart from the steps above ---
echo "== libFuzzer: the .npy, .npz, checkpoint, safetensors and ONNX loaders (ONNX twice: bytes, then models), 10 s each"
# -O1, as libFuzzer's own documentation builds: a quicker compile, and fuzzing needs no -O2.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
      -DCMAKE_CXX_COMPILER=clang++ -DRECUR_WERROR=ON -DRECUR_BUILD_FUZZ=ON -DRECUR_BUILD_TESTS=OFF \
      -DRECUR_BUILD_EXAMPLES=OFF -DRECUR_BUILD_BENCH=OFF -DRECUR_BUILD_DISTRIBUTED=OFF
harnesses=(npy npz checkpoint safetensors)
# fuzz_onnx and fuzz_onnx_structure exist when recur::onnx is built (libonnx-dev, which
# install-deps.sh installs).
if cmake --build build-fuzz --target help | grep -q '^fuzz_onnx:'; then harnesses+=(onnx onnx_structure); fi
cmake --build build-fuzz -j"$jobs" --target "${harnesses[@]/#/fuzz_}"
rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus/{npy,npz,checkpoint,safetensors,onnx,onnx_structure}
cp tests/data/*.npy tests/data/optim/*.npy build-fuzz/corpus/npy/
cp tests/data/npz/*.npz build-fuzz/corpus/npz/
# The safetensors fixtures, the malformed ones too: each breaks one rule, a step from valid.
cp tests/data/safetensors/*.safetensors build-fuzz/corpus/safetensors/
RECUR_FUZZ_WRITE_SEED=build-fuzz/corpus/checkpoint/seed.npz ./build-fuzz/tests/fuzz/fuzz_checkpoint
# The ONNX seeds: PyTorch's exports (Loop and sequences among them), the example's model,
# an ONNX Scan, and some of ONNX's own node tests when libonnx-testdata is installed.
for f in tests/data/onnx_torch/*/model.onnx; do cp "$f" "build-fuzz/corpus/onnx/$(basename "$(dirname "$f")").onnx"; done
cp examples/char_lm.onnx bench/data/elman_scan_M.onnx build-fuzz/corpus/onnx/
for t in scan9_sum scan_sum loop11 loop13_seq if if_seq lstm_defaults gru_defaults rnn_seq_length sequence_insert_at_back \
         sequence_insert_at_front slice_neg_steps gemm_all_attributes reduce_sum_keepdims_example; do
  m=/usr/share/libonnx-testdata/data/node/test_$t/model.onnx
  if [[ -f $m ]]; then cp "$m" "build-fuzz/corpus/onnx/$t.onnx"; fi
done
# The model-level harness starts from the same seeds, in a directory of its own (libFuzzer
# adds what it finds to its corpus directory).
cp build-fuzz/corpus/onnx/* build-fuzz/corpus/onnx_structure/
# -timeout: an input that hangs (a model's loop of 2^62 iterations, say) fails the step
# instead of outliving -max_total_time, which libFuzzer checks only between inputs; 60 s,
# as the ONNX checker itself takes seconds on some grown models under the sanitizers.
for h in "${harnesses[@]}"; do
  ./build-fuzz/tests/fuzz/fuzz_$h -max_total_time=10 -timeout=60 -rss_limit_mb=2048 -artifact_prefix=build-fuzz/crash-$h- \
    build-fuzz/corpus/$h 2>build-fuzz/fuzz_$h.log || { tail -40 build-fuzz/fuzz_$h.log; exit 1; }
  echo "fuzz_$h: $(grep -o 'Done [0-9]* runs' build-fuzz/fuzz_$h.log)"
done
