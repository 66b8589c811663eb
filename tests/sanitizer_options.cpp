// Under AddressSanitizer an allocation the system refuses returns null, as it does without
// it, instead of aborting the run: recur turns it into a MemoryError, which a test checks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RECUR_TESTS_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(RECUR_TESTS_UNDER_ASAN)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
