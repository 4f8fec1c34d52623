/* The code of a module the runtime tests write by hand: one kernel in the calling convention of
 * runtime/kernel.h that reaches the runtime through its hook, as exported kernels do, and a
 * constructor that tells the tests whether the dynamic loader ever ran this library. */
#include <stdint.h>
#include <stdlib.h>

int32_t (*tessera_hook_num_threads)(void);

__attribute__((constructor)) static void mark_loaded(void) { setenv("TESSERA_TEST_KERNELS_LOADED", "1", 1); }

/* y = x + c for float32[4]; +1000 if the loader left the hook unset. */
int32_t add4(void* const* args, int32_t num_args) {
  if (num_args != 3) return -1;
  const float* x = (const float*)args[0];
  const float* c = (const float*)args[1];
  float* y = (float*)args[2];
  float offset = tessera_hook_num_threads && tessera_hook_num_threads() > 0 ? 0.0f : 1000.0f;
  for (int i = 0; i < 4; ++i) y[i] = x[i] + c[i] + offset;
  return 0;
}
