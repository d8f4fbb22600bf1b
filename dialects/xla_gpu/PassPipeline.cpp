//===- PassPipeline.cpp - a pass pipeline run without the Python GIL -----===//
//
// `PassManager.run` of the Python bindings holds the GIL while the passes
// run, so the kernels of a module could not go through our pipeline on
// several threads at once (only LLVM's share of a compile did). Called
// through ctypes, which releases the GIL, xlaGpuRunPassPipeline does what
// PassManager.parse + run do, the diagnostics gathered here instead of by
// the bindings' capture (which needs the GIL, and aborted the process when
// a verifier error came from a worker thread).
//
//===----------------------------------------------------------------------===//

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "dialects/xla_gpu/CAPI.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

// `"file":line:col` for a location (its text without `loc(...)`).
std::string locationText(mlir::Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  llvm::StringRef inner(text);
  if (inner.consume_front("loc(") && inner.consume_back(")")) return inner.str();
  return text;
}

// The diagnostics of a run, as the bindings' MLIRError prints them: an
// `error: <loc>: <message>` line each, its notes indented below it.
class DiagnosticText {
 public:
  explicit DiagnosticText(mlir::MLIRContext* context)
      : handler_(context, [this](mlir::Diagnostic& diagnostic) {
          std::lock_guard<std::mutex> hold(mutex_);
          append(diagnostic, "");
          for (mlir::Diagnostic& note : diagnostic.getNotes()) append(note, " ");
          return mlir::success();
        }) {}
  std::string take() {
    std::lock_guard<std::mutex> hold(mutex_);
    return std::move(text_);
  }

 private:
  void append(mlir::Diagnostic& diagnostic, const char* indent) {
    const char* severity = "error";
    switch (diagnostic.getSeverity()) {
      case mlir::DiagnosticSeverity::Note: severity = "note"; break;
      case mlir::DiagnosticSeverity::Warning: severity = "warning"; break;
      case mlir::DiagnosticSeverity::Remark: severity = "remark"; break;
      case mlir::DiagnosticSeverity::Error: break;
    }
    text_ += "\n" + std::string(indent) + severity + ": " +
             locationText(diagnostic.getLocation()) + ": " + diagnostic.str();
  }

  std::mutex mutex_;
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

char* copyOut(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace

extern "C" {

char* xlaGpuRunPassPipeline(MlirModule module, const char* pipeline, int verifyEach) {
  char* error = nullptr;
  void* pm = xlaGpuParsePassPipeline(wrap(unwrap(module)->getContext()), pipeline, &error);
  if (!pm) return error;
  char* message = xlaGpuRunParsedPassPipeline(pm, module, verifyEach);
  xlaGpuDestroyPassPipeline(pm);
  return message;
}

void* xlaGpuParsePassPipeline(MlirContext context, const char* pipeline, char** error) {
  auto pm = std::make_unique<mlir::PassManager>(unwrap(context),
                                                mlir::ModuleOp::getOperationName());
  std::string parseError;
  llvm::raw_string_ostream errorStream(parseError);
  if (failed(mlir::parsePassPipeline(pipeline, *pm, errorStream))) {
    *error = copyOut("the pass pipeline does not parse: " + parseError);
    return nullptr;
  }
  return pm.release();
}

char* xlaGpuRunParsedPassPipeline(void* pipeline, MlirModule module, int verifyEach) {
  auto* pm = static_cast<mlir::PassManager*>(pipeline);
  mlir::ModuleOp op = unwrap(module);
  DiagnosticText diagnostics(op.getContext());
  pm->enableVerifier(verifyEach != 0);
  if (failed(pm->run(op))) {
    return copyOut("Failure while executing pass pipeline:" + diagnostics.take());
  }
  // Without the verifier after each pass, the pipeline's output is verified
  // once: what leaves here is valid IR either way.
  if (!verifyEach && failed(mlir::verify(op))) {
    return copyOut("the pass pipeline's output does not verify:" + diagnostics.take());
  }
  return nullptr;
}

void xlaGpuDestroyPassPipeline(void* pipeline) { delete static_cast<mlir::PassManager*>(pipeline); }

}  // extern "C"
