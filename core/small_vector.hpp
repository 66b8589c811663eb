#pragma once
// boost::container::small_vector, for every recur file that uses it (include this, never
// the Boost header directly, so that the suppression below always applies).
//
// GCC 12 at -O2 and above reports -Wstringop-overread inside small_vector's move
// constructor (a memmove "reading between 33 and 9223372036854775800 bytes from a region of
// size 32"): after inlining it loses the fact that a vector still in its inline storage
// holds at most N elements. The read is never out of bounds; the warning is silenced for
// this header's code only, not for recur's own.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
#include <boost/container/small_vector.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
