// CPUID and XGETBV, read directly: the kernel decision must not depend on what OpenBLAS
// itself concluded about the CPU.
#include <recur/core/blas_kernel_detail.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace recur::blas::detail {

#if defined(__x86_64__) || defined(__i386__)
namespace {
bool bit(unsigned reg, int n) { return ((reg >> n) & 1U) != 0; }

// XCR0: the register state the OS saves on a context switch. Only valid to read when
// CPUID says the OS enabled XSAVE (OSXSAVE), else XGETBV faults.
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(1, 0, eax, ebx, ecx, edx);
  const bool osxsave = bit(ecx, 27);
  // XMM (bit 1), YMM (2), opmask (5), upper halves of ZMM0-15 (6), ZMM16-31 (7).
  constexpr unsigned long long zmm_state = 0xE6;
  f.os_saves_zmm = osxsave && (xcr0() & zmm_state) == zmm_state;
  constexpr unsigned long long ymm_state = 0x6;  // XMM and YMM
  f.os_saves_ymm = osxsave && (xcr0() & ymm_state) == ymm_state;
  f.fma = bit(ecx, 12);

  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned max_subleaf = eax;
  f.avx2 = bit(ebx, 5);
  f.avx512f = bit(ebx, 16);
  f.avx512dq = bit(ebx, 17);
  f.avx512cd = bit(ebx, 28);
  f.avx512bw = bit(ebx, 30);
  f.avx512vl = bit(ebx, 31);
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx512_bf16 = bit(eax, 5);
  }
  return f;
}
#else
CpuFeatures detect_cpu_features() { return {}; }
#endif

}  // namespace recur::blas::detail
