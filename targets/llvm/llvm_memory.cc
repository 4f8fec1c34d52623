// Loads, stores and local buffers. Memory accesses are where most of a kernel's time goes, so
// this file tries hard to give LLVM the widest accesses with the best alignment it can prove.
#include <llvm/Support/MathExtras.h>

#include <algorithm>
#include <numeric>

#include "runtime/error.h"
#include "targets/llvm/build_llvm.h"
#include "targets/llvm/codegen_llvm.h"
#include "tensor_ir/arith/linear_form.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::targets::llvm_backend {

namespace {
// Local buffers up to this size live on the stack; bigger ones on the heap. The per-function
// total is capped too: worker threads have 8 MiB stacks and loops may hold several buffers.
constexpr int64_t kMaxStackBuffer = 256 * 1024;
constexpr int64_t kMaxStackPerFunction = 1024 * 1024;
// Vector loads of every 2nd..4th element are a wide load and a shuffle; wider strides a gather.
constexpr int64_t kMaxShuffledStride = 4;

// Trailing zero bits of x, 64 for 0 (a multiple of everything).
int trailing_zeros(uint64_t x) { return x == 0 ? 64 : __builtin_ctzll(x); }
}  // namespace

llvm::Value* CodeGenLLVM::buffer_pointer(const BufferNode* buffer) {
  auto it = state_.buffers.find(buffer);
  if (it == state_.buffers.end())
    fail("kernel '", kernel_name_, "' accesses buffer '", buffer->name,
         "', which is neither one of its arguments nor allocated around the access");
  return it->second;
}

llvm::Value* CodeGenLLVM::from_memory(llvm::Value* v, DataType t) {
  if (t.is_bool()) return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  if (t.is_float() && t.bits == 16) return builder_.CreateFPExt(v, value_type(t));
  return v;
}

llvm::Value* CodeGenLLVM::to_memory(llvm::Value* v, DataType t) {
  llvm::Type* m = memory_type(t);
  if (t.is_vector()) m = llvm::FixedVectorType::get(m, t.lanes);
  if (t.is_bool()) return builder_.CreateZExt(v, m);
  if (t.is_float() && t.bits == 16) return builder_.CreateFPTrunc(v, m);
  return v;
}

llvm::Value* CodeGenLLVM::index_to_i64(llvm::Value* index, DataType t) {
  if (t.bits == 64) return index;
  llvm::Type* i64 = value_type(DataType::Int(64, t.lanes));
  return builder_.CreateIntCast(index, i64, !t.is_uint());
}

CodeGenLLVM::ModRem CodeGenLLVM::mod_rem(const Expr& e) {
  const ModRem unknown{1, 0};
  auto normalize = [](ModRem m) {
    if (m.modulus != 0) m.remainder = ((m.remainder % m.modulus) + m.modulus) % m.modulus;
    return m;
  };
  if (const auto* c = e.as<IntImm>()) return {0, c->value};
  if (const auto* v = e.as<VarNode>()) {
    auto it = index_facts_.find(v);
    return it == index_facts_.end() ? unknown : it->second;
  }
  if (const auto* c = e.as<Cast>()) {
    DataType from = c->value.type();
    return from.is_integer() && c->type.is_integer() && c->type.bits >= from.bits ? mod_rem(c->value) : unknown;
  }
  const Add* add = e.as<Add>();
  const Sub* sub = e.as<Sub>();
  if (add || sub) {
    ModRem a = mod_rem(add ? add->a : sub->a), b = mod_rem(add ? add->b : sub->b);
    int64_t r;
    bool overflow = add ? __builtin_add_overflow(a.remainder, b.remainder, &r)
                        : __builtin_sub_overflow(a.remainder, b.remainder, &r);
    return overflow ? unknown : normalize({std::gcd(a.modulus, b.modulus), r});
  }
  if (const auto* mul = e.as<Mul>()) {
    ModRem a = mod_rem(mul->a), b = mod_rem(mul->b);
    // (ma*i + ra) * (mb*j + rb) is a multiple of gcd(ma*mb, ma*rb, mb*ra), plus ra*rb.
    int64_t mm, mr, rm, rr;
    if (__builtin_mul_overflow(a.modulus, b.modulus, &mm) || __builtin_mul_overflow(a.modulus, b.remainder, &mr) ||
        __builtin_mul_overflow(b.modulus, a.remainder, &rm) || __builtin_mul_overflow(a.remainder, b.remainder, &rr))
      return unknown;
    return normalize({std::gcd(mm, std::gcd(mr, rm)), rr});
  }
  return unknown;
}

llvm::Align CodeGenLLVM::alignment_of(const Expr& index, DataType element) {
  ModRem m = mod_rem(index);
  auto bytes = static_cast<uint64_t>(element.element_bytes());
  // The byte offset is bytes * (modulus * k + remainder); buffers start 64-byte aligned.
  int zeros = std::min(trailing_zeros(bytes * static_cast<uint64_t>(m.modulus)),
                       trailing_zeros(bytes * static_cast<uint64_t>(m.remainder)));
  return llvm::Align(std::min<uint64_t>(runtime::kAllocAlignment, uint64_t{1} << std::min(zeros, 6)));
}

llvm::Value* CodeGenLLVM::load_mask(unsigned lanes) {
  if (!load_mask_) return nullptr;
  if (llvm::cast<llvm::FixedVectorType>(load_mask_->getType())->getNumElements() == lanes) return load_mask_;
  // A value of another width (a scalar under a Broadcast) is needed if any lane is.
  llvm::Value* any = builder_.CreateOrReduce(load_mask_);
  return lanes == 1 ? any : builder_.CreateVectorSplat(lanes, any);
}

namespace {

// The terms of `index` (a scalar sum) that clamp a row (min or max, or one times a stride;
// A[min(r*6 + i, M - 1)*K + k] in the last tile of a product) and the others, or no clamped terms.
std::pair<Expr, Expr> split_clamped_terms(const Expr& index) {
  const tensor_ir::arith::LinearForm sum = tensor_ir::arith::to_linear_form(index);
  tensor_ir::arith::LinearForm clamped{sum.type, {}, 0}, rest{sum.type, {}, 0};
  rest.constant = sum.constant;
  auto clamp = [](const Expr& e) { return e.as<tensor_ir::Min>() || e.as<tensor_ir::Max>(); };
  for (const auto& [term, coeff] : sum.terms) {
    const auto* mul = term.as<tensor_ir::Mul>();  // a row times a stride of symbolic size
    (clamp(term) || (mul && (clamp(mul->a) || clamp(mul->b))) ? clamped : rest).add_term(term, coeff);
  }
  if (clamped.is_constant() || (rest.is_constant() && rest.constant == 0)) return {};
  return {clamped.to_expr(), rest.to_expr()};
}

}  // namespace

llvm::Value* CodeGenLLVM::element_address(const BufferNode* buffer, const Expr& index, bool masked) {
  // A clamped row's address is a pointer of its own (hoisted out of the loops over the row): as
  // one sum with the column, the rows of a tile were added to the column in vectors by LLVM's
  // SLP vectorizer, their pointers extracted lane by lane in the inner loop, which spilled.
  if (index.type().is_scalar()) {
    auto [clamped, rest] = split_clamped_terms(index);
    if (clamped.defined()) {
      llvm::Type* element = memory_type(buffer->dtype);
      llvm::Value* row =
          builder_.CreateGEP(element, buffer_pointer(buffer), index_to_i64(emit(clamped), clamped.type()));
      return builder_.CreateGEP(element, row, index_to_i64(emit(rest), rest.type()));
    }
  }
  llvm::Value* offset = index_to_i64(emit(index), index.type());
  // Where the mask is off the address may lie outside the buffer (a padded border), which
  // `inbounds` would make poison; the lanes actually read are inside it.
  if (masked) return builder_.CreateGEP(memory_type(buffer->dtype), buffer_pointer(buffer), offset);
  return builder_.CreateInBoundsGEP(memory_type(buffer->dtype), buffer_pointer(buffer), offset);
}

// llvm.prefetch of the load's element into L2 (prefetcht1 on x86): what Stage::prefetch fetches
// is read an iteration or more later, after L1 has turned over. The address is never
// dereferenced, so it may lie past the buffer.
llvm::Value* CodeGenLLVM::emit_prefetch(const Call* op) {
  const auto* load = op->args[0].as<Load>();
  if (!load)
    fail("internal error: prefetch of ", tensor_ir::to_string(op->args[0]), " (a load of a flattened buffer expected)");
  llvm::Value* addr =
      builder_.CreateBitCast(element_address(load->buffer.get(), load->index, true), builder_.getInt8PtrTy());
  constexpr int kRead = 0, kL2 = 2, kData = 1;
  builder_.CreateIntrinsic(llvm::Intrinsic::prefetch, {addr->getType()},
                           {addr, builder_.getInt32(kRead), builder_.getInt32(kL2), builder_.getInt32(kData)});
  return llvm::Constant::getNullValue(value_type(op->type));
}

llvm::Value* CodeGenLLVM::load_scalar(const BufferNode* buffer, const Expr& index) {
  const DataType element = buffer->dtype;
  llvm::Type* mem = memory_type(element);
  llvm::Value* mask = load_mask(1);
  llvm::Value* addr = element_address(buffer, index, mask != nullptr);
  auto load = [&]() -> llvm::Value* { return builder_.CreateAlignedLoad(mem, addr, alignment_of(index, element)); };
  llvm::Value* v = mask ? emit_if_else(mask, load, [&] { return llvm::Constant::getNullValue(mem); }) : load();
  return from_memory(v, element);
}

// Every stride-th element from `base` (a Ramp of small constant stride): one masked load
// spanning them, reading only the wanted ones (so nothing past the last is touched), and a
// shuffle gathering them; far cheaper than a gather on x86.
llvm::Value* CodeGenLLVM::load_strided(const BufferNode* buffer, const Expr& base, unsigned stride,
                                       llvm::FixedVectorType* vec, llvm::Value* mask) {
  const unsigned lanes = vec->getNumElements();
  const unsigned span = lanes * stride;
  auto* wide = llvm::FixedVectorType::get(vec->getElementType(), span);
  std::vector<llvm::Constant*> wanted;
  std::vector<int> pick;
  for (unsigned j = 0; j < span; ++j) wanted.push_back(builder_.getInt1(j % stride == 0));
  for (unsigned i = 0; i < lanes; ++i) pick.push_back(static_cast<int>(i * stride));
  llvm::Value* wide_mask = llvm::ConstantVector::get(wanted);
  if (mask) {  // lane i's condition at wide lane i * stride
    std::vector<int> spread;
    for (unsigned j = 0; j < span; ++j) spread.push_back(static_cast<int>(j / stride));
    wide_mask = builder_.CreateAnd(wide_mask, builder_.CreateShuffleVector(mask, spread));
  }
  llvm::Value* addr = element_address(buffer, base, true);
  llvm::Value* v = masked_load(wide, addr, alignment_of(base, buffer->dtype), wide_mask);
  return builder_.CreateShuffleVector(v, pick);
}

// Of a power-of-two width, the lanes past `vec`'s off. Two reasons: LLVM turns masked loads of
// other widths into a branch per element (MobileNet's 28x28 stride-2 depthwise copy, 15 lanes a
// phase, took 7 times the scalar loop); and LLVM 14's x86 back end miscompiles some of them
// without AVX-512: a masked load of 8k+1 32-bit lanes under a mask known only at run time loads
// its last lane whatever the mask says (AVX2 convolutions read garbage into their padding).
llvm::Value* CodeGenLLVM::widened(llvm::Value* v, llvm::Value* past) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements();
  const auto width = static_cast<unsigned>(llvm::PowerOf2Ceil(lanes));
  if (width == lanes) return v;
  std::vector<int> widen;
  for (unsigned j = 0; j < width; ++j) widen.push_back(static_cast<int>(j < lanes ? j : lanes));
  return builder_.CreateShuffleVector(v, past, widen);
}

llvm::Value* CodeGenLLVM::lanes_off(unsigned lanes) {
  return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(lanes), builder_.getFalse());
}

llvm::Value* CodeGenLLVM::masked_load(llvm::FixedVectorType* vec, llvm::Value* addr, llvm::Align align,
                                      llvm::Value* mask) {
  const unsigned lanes = vec->getNumElements();
  const auto width = static_cast<unsigned>(llvm::PowerOf2Ceil(lanes));
  auto* wide = llvm::FixedVectorType::get(vec->getElementType(), width);
  mask = widened(mask, lanes_off(lanes));
  addr = builder_.CreateBitCast(addr, wide->getPointerTo());
  llvm::Value* v = builder_.CreateMaskedLoad(wide, addr, align, mask, llvm::Constant::getNullValue(wide));
  if (width == lanes) return v;
  std::vector<int> first;
  for (unsigned i = 0; i < lanes; ++i) first.push_back(static_cast<int>(i));
  return builder_.CreateShuffleVector(v, first);
}

// Under a vector select (load_mask_) only the selected lanes are read, by masked loads and
// gathers (zero elsewhere, which x86 gets for free); a scalar only if some lane needs it.
llvm::Value* CodeGenLLVM::emit_expr(const Load* op) {
  const BufferNode* buffer = op->buffer.get();
  const DataType element = buffer->dtype;
  const auto lanes = static_cast<unsigned>(op->type.lanes);
  const Expr& index = op->index;
  if (lanes == 1) return load_scalar(buffer, index);
  if (const auto* b = index.as<Broadcast>()) return builder_.CreateVectorSplat(lanes, load_scalar(buffer, b->value));
  auto* vec = llvm::FixedVectorType::get(memory_type(element), lanes);
  llvm::Value* mask = load_mask(lanes);
  llvm::Value* zero = mask ? llvm::Constant::getNullValue(vec) : nullptr;
  if (const auto* ramp = index.as<Ramp>(); ramp && is_one(ramp->stride)) {
    llvm::Value* addr = element_address(buffer, ramp->base, mask != nullptr);
    llvm::Align align = alignment_of(ramp->base, element);
    if (mask) return from_memory(masked_load(vec, addr, align, mask), op->type);
    addr = builder_.CreateBitCast(addr, vec->getPointerTo());
    return from_memory(builder_.CreateAlignedLoad(vec, addr, align), op->type);
  }
  if (const auto* ramp = index.as<Ramp>()) {
    const int64_t* stride = as_const_int(ramp->stride);
    if (stride && *stride >= 2 && *stride <= kMaxShuffledStride)
      return from_memory(load_strided(buffer, ramp->base, static_cast<unsigned>(*stride), vec, mask), op->type);
  }
  llvm::Value* addrs = element_address(buffer, index, mask != nullptr);
  llvm::Value* v = builder_.CreateMaskedGather(vec, addrs, llvm::Align(element.element_bytes()), mask, zero);
  return from_memory(v, op->type);
}

void CodeGenLLVM::emit_stmt(const Store* op) {
  const BufferNode* buffer = op->buffer.get();
  const DataType element = buffer->dtype;
  llvm::Value* value = to_memory(emit(op->value), op->value.type());
  const Expr& index = op->index;
  if (index.type().is_scalar()) {
    builder_.CreateAlignedStore(value, element_address(buffer, index, false), alignment_of(index, element));
    return;
  }
  if (const auto* ramp = index.as<Ramp>(); ramp && is_one(ramp->stride)) {
    llvm::Value* addr = element_address(buffer, ramp->base, false);
    addr = builder_.CreateBitCast(addr, value->getType()->getPointerTo());
    builder_.CreateAlignedStore(value, addr, alignment_of(ramp->base, element));
    return;
  }
  builder_.CreateMaskedScatter(value, element_address(buffer, index, false), llvm::Align(element.element_bytes()));
}

void CodeGenLLVM::masked_store(llvm::Value* value, llvm::Value* addr, llvm::Align align, llvm::Value* mask) {
  auto* vec = llvm::cast<llvm::FixedVectorType>(value->getType());
  mask = widened(mask, lanes_off(vec->getNumElements()));  // as masked_load
  value = widened(value, llvm::UndefValue::get(vec));
  addr = builder_.CreateBitCast(addr, value->getType()->getPointerTo());
  builder_.CreateMaskedStore(value, addr, align, mask);
}

void CodeGenLLVM::emit_predicated_store(const IfThenElse* op) {
  const auto* st = op->then_case.as<Store>();  // IfThenElse::make admits nothing else
  const BufferNode* buffer = st->buffer.get();
  const auto lanes = static_cast<unsigned>(st->index.type().lanes);
  llvm::Value* mask = emit(op->condition);
  llvm::Value* outer = load_mask_;
  if (outer) mask = builder_.CreateAnd(load_mask(lanes), mask);
  load_mask_ = mask;
  llvm::Value* value = to_memory(emit(st->value), st->value.type());
  if (const auto* ramp = st->index.as<Ramp>(); ramp && is_one(ramp->stride)) {
    masked_store(value, element_address(buffer, ramp->base, true), alignment_of(ramp->base, buffer->dtype), mask);
  } else {
    builder_.CreateMaskedScatter(value, element_address(buffer, st->index, true),
                                 llvm::Align(buffer->dtype.element_bytes()), mask);
  }
  load_mask_ = outer;
}

// The bytes aligned_alloc takes for `buffer`: its size rounded up to the alignment, at least one
// alignment unit (aligned_alloc may return null for 0 bytes); a symbolic size is computed here.
llvm::Value* CodeGenLLVM::allocation_bytes(const BufferNode* buffer) {
  const int64_t a = runtime::kAllocAlignment, element = buffer->dtype.element_bytes();
  llvm::Value* count = emit(cast(kIndexType, max(buffer->element_count(), Expr(int64_t{0}))));
  llvm::Value* bytes = builder_.CreateMul(count, builder_.getInt64(element));
  bytes =
      builder_.CreateMul(builder_.CreateUDiv(builder_.CreateAdd(bytes, builder_.getInt64(a - 1)), builder_.getInt64(a)),
                         builder_.getInt64(a));
  return builder_.CreateSelect(builder_.CreateICmpEQ(bytes, builder_.getInt64(0)), builder_.getInt64(a), bytes);
}

void CodeGenLLVM::emit_stmt(const Allocate* op) {
  const BufferNode* buffer = op->buffer.get();
  const bool static_size =
      std::all_of(buffer->shape.begin(), buffer->shape.end(), [](const Expr& d) { return d.as<IntImm>() != nullptr; });
  const int64_t count = static_size ? buffer->num_elements() : 0;
  const int64_t bytes = count * buffer->dtype.element_bytes();
  if (count < 0) fail("kernel '", kernel_name_, "': buffer '", buffer->name, "' has a negative size");
  llvm::Type* mem = memory_type(buffer->dtype);
  const bool on_stack = static_size && bytes <= kMaxStackBuffer && state_.stack_bytes + bytes <= kMaxStackPerFunction;
  // A buffer of symbolic size may go on the stack when the call's size is small: its room is
  // reserved against the function's cap at the largest size it takes there.
  const bool maybe_stack = !static_size && state_.stack_bytes + kMaxStackBuffer <= kMaxStackPerFunction;
  llvm::AllocaInst* slot = nullptr;
  llvm::Value* heap = nullptr;         // what to free (null where the buffer is on the stack)
  llvm::Value* saved_stack = nullptr;  // the stack pointer to restore after a dynamic stack buffer
  llvm::Value* pointer;
  if (on_stack) {
    slot = entry_alloca(mem, builder_.getInt64(count), buffer->name);
    state_.stack_bytes += bytes;
    // Lifetime markers let LLVM overlap the stack slots of buffers that are never live together.
    builder_.CreateLifetimeStart(slot, builder_.getInt64(bytes));
    pointer = slot;
  } else if (maybe_stack) {
    // Saved and restored around the buffer's scope, so a buffer allocated in every iteration of a
    // loop (a row buffer per row) costs a stack adjustment, not an allocation, and does not grow
    // the stack.
    state_.stack_bytes += kMaxStackBuffer;
    llvm::Value* size = allocation_bytes(buffer);
    saved_stack = builder_.CreateIntrinsic(llvm::Intrinsic::stacksave, {}, {});
    auto* stack_block = llvm::BasicBlock::Create(ctx_, "stack_buffer", state_.function);
    auto* heap_block = llvm::BasicBlock::Create(ctx_, "heap_buffer", state_.function);
    auto* done = llvm::BasicBlock::Create(ctx_, "buffer", state_.function);
    llvm::Value* small = builder_.CreateICmpULE(size, builder_.getInt64(kMaxStackBuffer));
    builder_.CreateCondBr(small, stack_block, heap_block);
    builder_.SetInsertPoint(stack_block);
    llvm::AllocaInst* dynamic = builder_.CreateAlloca(builder_.getInt8Ty(), size, buffer->name);
    dynamic->setAlignment(llvm::Align(runtime::kAllocAlignment));
    builder_.CreateBr(done);
    builder_.SetInsertPoint(heap_block);
    llvm::Value* allocated = heap_allocate(buffer, size);
    llvm::BasicBlock* heap_end = builder_.GetInsertBlock();
    builder_.CreateBr(done);
    builder_.SetInsertPoint(done);
    llvm::PHINode* raw = builder_.CreatePHI(builder_.getInt8PtrTy(), 2, buffer->name);
    raw->addIncoming(dynamic, stack_block);
    raw->addIncoming(allocated, heap_end);
    heap = builder_.CreateSelect(small, llvm::ConstantPointerNull::get(builder_.getInt8PtrTy()), raw);
    state_.heap_buffers.push_back(heap);
    pointer = builder_.CreateBitCast(raw, mem->getPointerTo());
  } else {
    heap = heap_allocate(buffer, allocation_bytes(buffer));
    state_.heap_buffers.push_back(heap);
    pointer = builder_.CreateBitCast(heap, mem->getPointerTo());
  }
  auto it = state_.buffers.find(buffer);
  llvm::Value* shadowed = it == state_.buffers.end() ? nullptr : it->second;
  state_.buffers[buffer] = pointer;
  emit(op->body);
  if (shadowed) state_.buffers[buffer] = shadowed;
  else state_.buffers.erase(buffer);
  if (on_stack) {
    builder_.CreateLifetimeEnd(slot, builder_.getInt64(bytes));
    return;
  }
  state_.heap_buffers.pop_back();
  builder_.CreateCall(
      external_function("free", llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getInt8PtrTy()}, false)),
      {heap});
  if (saved_stack) builder_.CreateIntrinsic(llvm::Intrinsic::stackrestore, {}, {saved_stack});
}

llvm::Value* CodeGenLLVM::heap_allocate(const BufferNode* buffer, llvm::Value* bytes) {
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::FunctionCallee aligned_alloc =
      external_function("aligned_alloc", llvm::FunctionType::get(builder_.getInt8PtrTy(), {i64, i64}, false));
  llvm::Value* heap =
      builder_.CreateCall(aligned_alloc, {builder_.getInt64(runtime::kAllocAlignment), bytes}, buffer->name);
  return_if_failed(
      builder_.CreateSelect(builder_.CreateIsNull(heap), builder_.getInt32(kStatusOutOfMemory), builder_.getInt32(0)));
  return heap;
}

}  // namespace tessera::targets::llvm_backend
