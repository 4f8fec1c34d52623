#include "tensor_ir/transforms/hoist_shared_allocations.h"

#include <vector>

#include "tensor_ir/functor.h"

namespace tessera::tensor_ir {

namespace {

// Removes the shared allocations of a kernel's body, keeping their buffers (sizes are constants,
// so an allocation does not depend on the loops it leaves).
class SharedAllocationRemover : public IRMutator {
 public:
  std::vector<Buffer> buffers;
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const Allocate* op) override {
    if (op->buffer->scope != MemoryScope::Shared) return IRMutator::mutate_(op);
    buffers.push_back(op->buffer);
    return mutate(op->body);
  }
};

class Hoister : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ThreadExtent* op) override {
    std::vector<const ThreadExtent*> chain{op};
    while (const auto* inner = chain.back()->body.as<ThreadExtent>()) chain.push_back(inner);
    SharedAllocationRemover remover;
    Stmt body = remover.mutate(chain.back()->body);
    if (remover.buffers.empty()) return Stmt(op);
    for (auto it = remover.buffers.rbegin(); it != remover.buffers.rend(); ++it) body = Allocate::make(*it, body);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      body = ThreadExtent::make((*it)->var, (*it)->tag, (*it)->extent, body);
    return body;
  }
};

}  // namespace

Stmt hoist_shared_allocations(const Stmt& s) { return Hoister().mutate(s); }

}  // namespace tessera::tensor_ir
