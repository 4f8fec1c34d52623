#include "runtime/kernel.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "runtime/error.h"

namespace tessera::runtime {

namespace {

// Kernels allocate their large intermediates at every call (aligned_alloc, freed on return: a
// Winograd convolution's transformed tiles are megabytes). With glibc's defaults a freed block
// over 128 KiB goes back to the OS (munmap, or trimming the heap's top), and the next call
// faults every page of it in again, zeroed: more than some kernels' arithmetic costs, and it
// varies with what ran in between (benchmarks/NOTES.md, "Freed kernel memory"). So blocks up to 32 MiB (glibc's largest
// threshold) come from the heap and freed memory stays in the process for the next call. TESSERA_MALLOC_DEFAULTS=1
// leaves an embedding application's malloc settings alone.
void keep_freed_kernel_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* keep = std::getenv("TESSERA_MALLOC_DEFAULTS");
    if (keep && std::strcmp(keep, "1") == 0) return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

}  // namespace

Kernel::Kernel(KernelSignature signature, TesseraKernelFn fn, std::shared_ptr<const void> owner)
    : signature_(std::move(signature)), fn_(fn), owner_(std::move(owner)) {
  keep_freed_kernel_memory();
}

void Kernel::check_argument(size_t index, const NDArray& a) const {
  const BufferSpec& spec = signature_.args.at(index);
  const std::string where = "kernel '" + name() + "' argument " + std::to_string(index) + " ('" + spec.name + "')";
  if (a.dtype() != spec.dtype) fail(where, ": expected dtype ", spec.dtype.str(), ", got ", a.dtype().str());
  if (is_static(spec.shape) && !equals(spec.shape, a.shape()))
    fail(where, ": expected shape ", symbolic_shape_str(spec.shape), ", got ", a.shape_str());
  if (a.device().type != DeviceType::CPU)
    fail(where, ": the array is on ", a.device().str(), "; the kernel runs on the CPU");
  if (!a.is_aligned() && a.numel() > 0)
    fail(where, ": data is not ", kAllocAlignment, "-byte aligned (allocate it with NDArray::empty)");
}

void Kernel::operator()(const std::vector<NDArray>& args) const {
  if (!fn_) fail("kernel '", name(), "' is not compiled");
  if (args.size() != signature_.args.size())
    fail("kernel '", name(), "' takes ", signature_.args.size(), " arguments, got ", args.size());
  std::vector<void*> data(args.size());
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    check_argument(i, args[i]);
    data[i] = args[i].data();
    shapes.push_back(args[i].shape());
  }
  std::vector<int64_t> values = signature_.shape_var_values(shapes);
  if (!values.empty()) data.push_back(values.data());
  call_unchecked(data.data());
}

std::vector<int64_t> shape_var_values(const std::vector<BufferSpec>& args, const std::vector<std::string>& vars,
                                      const std::vector<std::vector<int64_t>>& shapes, const std::string& where) {
  std::vector<SymbolicShape> expected;
  std::vector<std::string> names;
  for (const BufferSpec& a : args) {
    expected.push_back(a.shape);
    names.push_back("argument '" + a.name + "'");
  }
  const std::map<std::string, int64_t> bound = bind_shape_vars(expected, shapes, names, where);
  std::vector<int64_t> values;
  for (const std::string& v : vars) {
    auto it = bound.find(v);
    if (it == bound.end()) fail(where, ": no argument has the dimension ", v, " by itself");
    values.push_back(it->second);
  }
  return values;
}

void Kernel::call_unchecked(void* const* data) const {
  int32_t rc = fn_(data, signature_.num_call_args());
  if (rc != 0) fail("kernel '", name(), "' failed with status ", rc);
}

}  // namespace tessera::runtime
