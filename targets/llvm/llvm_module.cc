// From lowered kernels to something runnable: code generation, verification, LLVM's O3 pipeline,
// then either ORC's LLJIT (a runtime::Module of callable kernels) or an object file.
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "runtime/error.h"
#include "targets/build.h"
#include "targets/llvm/build_llvm.h"
#include "targets/llvm/codegen_llvm.h"
#include "targets/llvm/external_symbols.h"
#include "targets/llvm/target_machine.h"

namespace tessera::targets {

namespace {

using namespace llvm_backend;

template <typename T>
T unwrap(llvm::Expected<T> value, const std::string& what) {
  if (!value) fail(what, ": ", llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string& what) {
  if (error) fail(what, ": ", llvm::toString(std::move(error)));
}

std::string module_name(const std::vector<tensor_ir::LoweredFunc>& funcs) {
  if (funcs.empty()) return "empty";
  std::string name = funcs[0].name;
  if (funcs.size() > 1) name += "_and_" + std::to_string(funcs.size() - 1) + "_more";
  return name;
}

// With TESSERA_DUMP_IR=<folder>, every module's IR before and after optimization lands there
// (with TESSERA_DUMP_IR=1 on stderr), beside lowering's steps.
void dump_ir(const llvm::Module& m, const char* stage) {
  const char* dir = std::getenv("TESSERA_DUMP_IR");
  if (!dir || !*dir) return;
  if (std::string(dir) == "1") {
    llvm::errs() << "; " << m.getName() << " " << stage << " optimization\n" << m;
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (std::filesystem::path(dir) / (m.getName().str() + "." + stage + ".ll")).string();
  llvm::raw_fd_ostream os(path, ec);
  if (ec) fail("TESSERA_DUMP_IR: cannot write ", path, ": ", ec.message());
  m.print(os, nullptr);
}

std::unique_ptr<llvm::TargetMachine> create_machine(const ResolvedTarget& t, bool pic) {
  return unwrap(machine_builder(t, pic).createTargetMachine(),
                "cannot create an LLVM target machine for " + t.triple + " (CPU " + t.cpu + ")");
}

// LLVM's O3 pipeline; the PassBuilder gets the TargetMachine so the vectorizers and the unroller
// see the real CPU (vector widths, costs) through TargetTransformInfo.
void optimize(llvm::Module& m, llvm::TargetMachine& machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions options;
  options.LoopVectorization = true;
  options.SLPVectorization = true;
  options.LoopInterleaving = true;
  options.LoopUnrolling = true;
  llvm::PassBuilder pb(&machine, options);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

// Generates, verifies and optimizes the module holding `funcs`.
std::unique_ptr<llvm::Module> compile(const std::vector<tensor_ir::LoweredFunc>& funcs, const ResolvedTarget& target,
                                      llvm::TargetMachine& machine, llvm::LLVMContext& context) {
  auto m = std::make_unique<llvm::Module>(module_name(funcs), context);
  m->setTargetTriple(target.triple);
  m->setDataLayout(machine.createDataLayout());
  CodeGenLLVM(*m, target).generate(funcs);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*m, &os))
    fail("internal error: the LLVM code generator produced invalid IR for ", m->getName().str(), ": ", os.str());
  dump_ir(*m, "before");
  optimize(*m, machine);
  dump_ir(*m, "after");
  return m;
}

// Object code or assembly, from a copy: code generation rewrites the module it is given.
std::string emit_machine_code(const llvm::Module& m, llvm::TargetMachine& machine, llvm::CodeGenFileType type) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, type))
    fail("LLVM cannot emit ", type == llvm::CGFT_ObjectFile ? "objects" : "assembly", " for ",
         machine.getTargetTriple().str());
  passes.run(*copy);
  return std::string(buffer.begin(), buffer.end());
}

// What the kernels of one build point into; they hold it, so it lives while any of them does.
struct JitSession {
  llvm::orc::ThreadSafeContext context;  // first: destroyed last, after the modules in it
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::mutex mutex;  // guards what follows and LLVMModule's cached assembly
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::Module> optimized;  // the IR the JIT compiled, for source("asm")
};

class LLVMModule final : public runtime::Module {
 public:
  LLVMModule(std::shared_ptr<JitSession> session, std::vector<runtime::Kernel> kernels, std::string ir)
      : session_(std::move(session)), kernels_(std::move(kernels)), ir_(std::move(ir)) {}

  runtime::Kernel get_kernel(const std::string& name) const override {
    std::string names;
    for (const auto& k : kernels_) {
      if (k.name() == name) return k;
      names += (names.empty() ? "" : ", ") + k.name();
    }
    fail("module has no kernel '", name, "' (it has: ", names.empty() ? "none" : names, ")");
  }

  std::vector<std::string> kernel_names() const override {
    std::vector<std::string> names;
    for (const auto& k : kernels_) names.push_back(k.name());
    return names;
  }

  std::string source(const std::string& format) const override {
    if (format == "ll") return ir_;
    if (format != "asm") fail("no source in format '", format, "' (available: ll, asm)");
    // Assembly costs a second code generation; most modules are never asked for it.
    std::lock_guard<std::mutex> guard(session_->mutex);
    if (asm_.empty()) {
      auto lock = session_->context.getLock();
      asm_ = emit_machine_code(*session_->optimized, *session_->machine, llvm::CGFT_AssemblyFile);
    }
    return asm_;
  }

 private:
  std::shared_ptr<JitSession> session_;
  std::vector<runtime::Kernel> kernels_;
  std::string ir_;
  mutable std::string asm_;
};

// An exported module's kernels reach the runtime through pointer variables (runtime::kRuntimeHooks)
// that the loader fills in: each runtime function they declare becomes a local stub calling
// through its hook, so the shared library has no undefined reference to the runtime.
void route_runtime_calls_through_hooks(llvm::Module& m) {
  for (const runtime::RuntimeHook& h : runtime::kRuntimeHooks) {
    llvm::Function* f = m.getFunction(h.function);
    if (!f || !f->isDeclaration()) continue;
    llvm::PointerType* pointer = f->getFunctionType()->getPointerTo();
    auto* hook = new llvm::GlobalVariable(m, pointer, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                          llvm::ConstantPointerNull::get(pointer), h.hook);
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(m.getContext(), "entry", f));
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : f->args()) args.push_back(&a);
    llvm::CallInst* call = b.CreateCall(f->getFunctionType(), b.CreateLoad(pointer, hook), args);
    call->setTailCall();
    if (f->getReturnType()->isVoidTy()) b.CreateRetVoid();
    else b.CreateRet(call);
  }
}

}  // namespace

std::shared_ptr<runtime::Module> build_llvm(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  const ResolvedTarget resolved = resolve(target);
  check_runs_on_host(resolved);
  auto session = std::make_shared<JitSession>();
  session->context = llvm::orc::ThreadSafeContext(std::make_unique<llvm::LLVMContext>());
  std::unique_ptr<llvm::Module> module;
  std::string ir;
  {
    auto lock = session->context.getLock();
    session->machine = create_machine(resolved, /*pic=*/false);
    module = compile(funcs, resolved, *session->machine, *session->context.getContext());
    llvm::raw_string_ostream(ir) << *module;
    session->optimized = llvm::CloneModule(*module);
  }

  session->jit =
      unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(machine_builder(resolved, /*pic=*/false)).create(),
             "cannot create the LLVM JIT");
  llvm::orc::LLJIT& jit = *session->jit;
  // The session reports why materialization failed (say, a missing symbol) here, not in the
  // error lookup returns; keep it for the message instead of letting LLVM print it.
  auto jit_errors = std::make_shared<std::string>();
  jit.getExecutionSession().setErrorReporter(
      [jit_errors](llvm::Error e) { *jit_errors += (jit_errors->empty() ? "" : "; ") + llvm::toString(std::move(e)); });
  llvm::orc::SymbolMap symbols;
  for (const ExternalSymbol& s : external_symbols())
    symbols[jit.mangleAndIntern(s.name)] = llvm::JITEvaluatedSymbol::fromPointer(s.address);
  check(jit.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))),
        "cannot define the runtime's symbols in the JIT");
  check(jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(module), session->context)),
        "cannot add module " + module_name(funcs) + " to the JIT");

  // Looking every kernel up now compiles the module, so link errors surface here, not at a call.
  std::vector<runtime::Kernel> kernels;
  for (const auto& f : funcs) {
    llvm::Expected<llvm::JITEvaluatedSymbol> symbol = jit.lookup(f.name);
    if (!symbol)
      fail("cannot JIT-compile kernel '", f.name, "': ", llvm::toString(symbol.takeError()),
           jit_errors->empty() ? "" : " (" + *jit_errors + ")");
    auto fn = reinterpret_cast<TesseraKernelFn>(static_cast<uintptr_t>(symbol->getAddress()));
    kernels.emplace_back(kernel_signature(f), fn, session);
  }
  return std::make_shared<LLVMModule>(std::move(session), std::move(kernels), std::move(ir));
}

void emit_object_file(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target, const std::string& path) {
  const ResolvedTarget resolved = resolve(target);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::TargetMachine> machine = create_machine(resolved, /*pic=*/true);
  std::unique_ptr<llvm::Module> module = compile(funcs, resolved, *machine, context);
  route_runtime_calls_through_hooks(*module);
  const std::string object = emit_machine_code(*module, *machine, llvm::CGFT_ObjectFile);
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("cannot open '", path, "' to write an object file");
  out.write(object.data(), static_cast<std::streamsize>(object.size()));
  out.close();
  if (!out) fail("cannot write the object file '", path, "'");
}

}  // namespace tessera::targets
