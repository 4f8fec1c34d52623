#include "runtime/kernel.h"

#include "runtime/error.h"

namespace tessera::runtime {

void Kernel::check_argument(size_t index, const NDArray& a) const {
  const BufferSpec& spec = signature_.args.at(index);
  const std::string where = "kernel '" + name() + "' argument " + std::to_string(index) + " ('" + spec.name + "')";
  if (a.dtype() != spec.dtype) fail(where, ": expected dtype ", spec.dtype.str(), ", got ", a.dtype().str());
  if (a.shape() != spec.shape)
    fail(where, ": expected shape ", shape_str(spec.shape), ", got ", a.shape_str());
  if (!a.is_aligned() && a.numel() > 0)
    fail(where, ": data is not ", kAllocAlignment, "-byte aligned (allocate it with NDArray::empty)");
}

void Kernel::operator()(const std::vector<NDArray>& args) const {
  if (!fn_) fail("kernel '", name(), "' is not compiled");
  if (args.size() != signature_.args.size())
    fail("kernel '", name(), "' takes ", signature_.args.size(), " arguments, got ", args.size());
  std::vector<void*> data(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    check_argument(i, args[i]);
    data[i] = args[i].data();
  }
  call_unchecked(data.data());
}

void Kernel::call_unchecked(void* const* data) const {
  int32_t rc = fn_(data, static_cast<int32_t>(signature_.args.size()));
  if (rc != 0) fail("kernel '", name(), "' failed with status ", rc);
}

}  // namespace tessera::runtime
