#pragma once
// A structure-aware mutator for .npz archives (training checkpoints among them): the bytes
// are read as named arrays, one array or name is changed, and the archive is written again.
// Byte flips almost never get past the ZIP's CRC-32, so they test the container; this
// reaches what a loader does with valid archives of the wrong content (missing, extra,
// renamed or mis-shaped members, other dtypes, NaN, huge counts).
#include <cstddef>
#include <cstdint>

namespace recur::fuzz {

// libFuzzer's custom-mutator contract: mutates data[0, size) in place (at most max_size
// bytes) and returns the new size; 0 when the bytes are no .npz the mutator can rewrite
// (the caller then falls back to LLVMFuzzerMutate).
std::size_t mutate_npz(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed);

}  // namespace recur::fuzz
