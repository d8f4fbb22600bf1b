// The checks of the FFI unit tests (ffi/tests/*_test.cc): each counted; a
// failed one prints where it is and counts as failed. Report() prints the
// counts ("N checks, M failed", which test_jax_backend.py reads) and is
// main's exit status.

#ifndef XLA_GPU_FFI_TESTS_CHECKS_H_
#define XLA_GPU_FFI_TESTS_CHECKS_H_

#include <cstdio>

namespace xla_gpu::ffi::testing {

inline int failures = 0;
inline int checks = 0;

inline int Report() {
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace xla_gpu::ffi::testing

#define CHECK_TRUE(cond)                                               \
  do {                                                                 \
    ++::xla_gpu::ffi::testing::checks;                                 \
    if (!(cond)) {                                                     \
      ++::xla_gpu::ffi::testing::failures;                             \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
    }                                                                  \
  } while (0)

#endif  // XLA_GPU_FFI_TESTS_CHECKS_H_
