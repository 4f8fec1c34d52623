// Parallel loops. The body is outlined into a task the runtime's thread pool runs once per
// thread; each task runs one contiguous chunk of the iterations, so neighbouring iterations
// (which share cache lines) stay on one core. A loop marked with its least work
// (tensor_ir/parallel_work.h) runs as one task, on the calling thread, below it. Everything the body uses from outside
// is passed through a closure struct on the launching function's stack.
//
//   int32_t name_parallel(int32_t task, int32_t num_tasks, void* closure)
//     loads the closure's fields and calls
//   int32_t name_parallel_body(int32_t task, int32_t num_tasks, int64 min, int64 extent,
//                              captured values..., captured buffers (noalias, aligned)...)
//
// The body function exists so captured buffers are again noalias arguments: inlined into the
// task, they become alias scopes, and the loop vectorizes as well as in the kernel itself.
#include <algorithm>

#include "runtime/error.h"
#include "targets/llvm/codegen_llvm.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/parallel_work.h"

namespace tessera::targets::llvm_backend {

namespace {

// The variables and buffers a loop body uses that are bound outside it, in order of first use.
class CaptureCollector : public IRVisitor {
 public:
  CaptureCollector(const std::unordered_map<const VarNode*, llvm::Value*>& vars,
                   const std::unordered_map<const BufferNode*, llvm::Value*>& buffers)
      : outer_vars_(vars), outer_buffers_(buffers) {}

  std::vector<const VarNode*> vars;
  std::vector<const BufferNode*> buffers;

 protected:
  void visit_(const VarNode* op) override {
    if (outer_vars_.count(op) && std::find(vars.begin(), vars.end(), op) == vars.end()) vars.push_back(op);
  }
  void visit_(const Load* op) override {
    add(op->buffer.get());
    IRVisitor::visit_(op);
  }
  // A buffer allocated inside may be sized by variables the body does not otherwise read.
  void visit_(const Allocate* op) override {
    for (const Expr& d : op->buffer->shape) visit(d);
    IRVisitor::visit_(op);
  }
  void visit_(const Store* op) override {
    add(op->buffer.get());
    IRVisitor::visit_(op);
  }

 private:
  void add(const BufferNode* b) {
    if (outer_buffers_.count(b) && std::find(buffers.begin(), buffers.end(), b) == buffers.end()) buffers.push_back(b);
  }
  const std::unordered_map<const VarNode*, llvm::Value*>& outer_vars_;
  const std::unordered_map<const BufferNode*, llvm::Value*>& outer_buffers_;
};

}  // namespace

void CodeGenLLVM::emit_parallel_for(const For* op) {
  CaptureCollector captures(state_.vars, state_.buffers);
  captures.visit(op->body);
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* i64 = builder_.getInt64Ty();
  const DataType var_type = op->var.type();
  llvm::Value* min = index_to_i64(emit(op->min), var_type);
  llvm::Value* extent = index_to_i64(emit(op->extent), var_type);

  std::vector<llvm::Value*> fields = {min, extent};
  for (const VarNode* v : captures.vars) fields.push_back(state_.vars.at(v));
  for (const BufferNode* b : captures.buffers) fields.push_back(state_.buffers.at(b));
  std::vector<llvm::Type*> field_types;
  for (llvm::Value* f : fields) field_types.push_back(f->getType());
  auto* closure_type = llvm::StructType::get(ctx_, field_types);

  std::vector<llvm::Type*> body_params = {i32, i32};
  body_params.insert(body_params.end(), field_types.begin(), field_types.end());
  llvm::Function* body_fn =
      create_function(kernel_name_ + "_parallel_body", i32, body_params, llvm::GlobalValue::InternalLinkage);
  body_fn->addFnAttr(llvm::Attribute::AlwaysInline);
  const unsigned first_buffer = 4 + static_cast<unsigned>(captures.vars.size());
  for (unsigned j = 0; j < captures.buffers.size(); ++j)
    set_buffer_attributes(body_fn, first_buffer + j, captures.buffers[j]);
  auto* task_type = llvm::FunctionType::get(i32, {i32, i32, builder_.getInt8PtrTy()}, false);
  llvm::Function* task_fn =
      create_function(kernel_name_ + "_parallel", i32, task_type->params(), llvm::GlobalValue::InternalLinkage);

  // Launch: fill the closure, split into min(extent, threads) tasks, pass a failure on.
  llvm::AllocaInst* closure = entry_alloca(closure_type, nullptr, "closure");
  for (unsigned i = 0; i < fields.size(); ++i)
    builder_.CreateStore(fields[i], builder_.CreateStructGEP(closure_type, closure, i));
  llvm::Value* threads = builder_.CreateSExt(
      builder_.CreateCall(external_function("tessera_num_threads", llvm::FunctionType::get(i32, false))), i64);
  llvm::Value* tasks = builder_.CreateSelect(builder_.CreateICmpSLT(extent, threads), extent, threads);
  tasks = builder_.CreateSelect(builder_.CreateICmpSLT(tasks, builder_.getInt64(0)), builder_.getInt64(0), tasks);
  if (Expr worth = worth_parallel_launch(op); worth.defined()) {
    llvm::Value* one_task =
        builder_.CreateSelect(builder_.CreateICmpSLT(tasks, builder_.getInt64(1)), tasks, builder_.getInt64(1));
    tasks = builder_.CreateSelect(emit(worth), tasks, one_task);
  }
  auto* launch_type = llvm::FunctionType::get(i32, {task_type->getPointerTo(), builder_.getInt8PtrTy(), i32}, false);
  llvm::Value* status = builder_.CreateCall(
      external_function("tessera_parallel_launch", launch_type),
      {task_fn, builder_.CreateBitCast(closure, builder_.getInt8PtrTy()), builder_.CreateTrunc(tasks, i32)});
  return_if_failed(status);

  llvm::IRBuilderBase::InsertPointGuard keep_insert_point(builder_);
  FunctionState launcher = std::move(state_);

  start_function(task_fn);
  llvm::Value* fields_ptr = builder_.CreateBitCast(task_fn->getArg(2), closure_type->getPointerTo());
  std::vector<llvm::Value*> body_args = {task_fn->getArg(0), task_fn->getArg(1)};
  for (unsigned i = 0; i < fields.size(); ++i)
    body_args.push_back(builder_.CreateLoad(field_types[i], builder_.CreateStructGEP(closure_type, fields_ptr, i)));
  builder_.CreateRet(builder_.CreateCall(body_fn, body_args));

  start_function(body_fn);
  for (unsigned j = 0; j < captures.vars.size(); ++j) state_.vars[captures.vars[j]] = body_fn->getArg(4 + j);
  for (unsigned j = 0; j < captures.buffers.size(); ++j)
    state_.buffers[captures.buffers[j]] = body_fn->getArg(first_buffer + j);
  // Task t runs [t * n / T, (t + 1) * n / T): chunk sizes differ by at most one.
  llvm::Value* task = builder_.CreateSExt(body_fn->getArg(0), i64);
  llvm::Value* num_tasks = builder_.CreateSExt(body_fn->getArg(1), i64);
  llvm::Value* body_min = body_fn->getArg(2);
  llvm::Value* body_extent = body_fn->getArg(3);
  auto chunk_start = [&](llvm::Value* t) {
    return builder_.CreateAdd(body_min, builder_.CreateSDiv(builder_.CreateMul(t, body_extent), num_tasks));
  };
  llvm::Value* begin = chunk_start(task);
  llvm::Value* end = chunk_start(builder_.CreateAdd(task, builder_.getInt64(1)));
  llvm::Type* var_llvm_type = value_type(var_type);
  if (var_llvm_type != i64) {
    begin = builder_.CreateTrunc(begin, var_llvm_type);
    end = builder_.CreateTrunc(end, var_llvm_type);
  }
  emit_serial_loop(op->var, begin, end, op->body);
  builder_.CreateRet(builder_.getInt32(0));

  state_ = std::move(launcher);
}

}  // namespace tessera::targets::llvm_backend
