//===- xla-gpu-opt.cpp - mlir-opt with the xla_gpu dialect and passes -----===//
//
// The upstream MlirOptMain library is not part of the bindings' shared MLIR,
// so this driver rebuilds its core from pieces that are: the pass-pipeline
// command-line parser (`--pass-pipeline`, one flag per registered pass), the
// diagnostic handlers (`--verify-diagnostics` is the upstream verifier), and
// the asm-printer/context/timing options (`--mlir-print-op-generic`,
// `--mlir-print-debuginfo`, `--mlir-disable-threading`, `--mlir-timing`...).
//
//===----------------------------------------------------------------------===//

#include <memory>
#include <string>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Tools/ParseUtilities.h"
#include "passes/Passes.h"

namespace cl = llvm::cl;

namespace {

constexpr llvm::StringLiteral kDefaultSplitMarker = "// -----";

struct Options {
  cl::opt<std::string> inputFilename{cl::Positional, cl::desc("<input file>"),
                                     cl::init("-")};
  cl::opt<std::string> outputFilename{"o", cl::desc("Output filename"),
                                      cl::value_desc("filename"),
                                      cl::init("-")};
  cl::opt<std::string> splitInputFile{
      "split-input-file", cl::ValueOptional,
      cl::desc("Split the input file into chunks at the given marker (default "
               "'// -----') and process each chunk independently"),
      cl::init("")};
  cl::opt<std::string> outputSplitMarker{
      "output-split-marker",
      cl::desc("Marker printed between the outputs of split input chunks"),
      cl::init(std::string(kDefaultSplitMarker))};
  cl::opt<bool> verifyDiagnostics{
      "verify-diagnostics",
      cl::desc("Check that emitted diagnostics match expected-* comments in "
               "the input"),
      cl::init(false)};
  cl::opt<bool> allowUnregisteredDialects{
      "allow-unregistered-dialect",
      cl::desc("Allow operations of unregistered dialects"), cl::init(false)};
  cl::opt<bool> verifyEach{"verify-each",
                           cl::desc("Run the verifier after each pass"),
                           cl::init(true)};
  cl::opt<bool> printIRBeforeAll{"mlir-print-ir-before-all",
                                 cl::desc("Print the IR before every pass"),
                                 cl::init(false)};
  cl::opt<bool> printIRAfterAll{"mlir-print-ir-after-all",
                                cl::desc("Print the IR after every pass"),
                                cl::init(false)};
  cl::opt<bool> printIRAfterChange{
      "mlir-print-ir-after-change",
      cl::desc("With -mlir-print-ir-after-all, print only when a pass changed "
               "the IR"),
      cl::init(false)};
  cl::opt<bool> printIRAfterFailure{
      "mlir-print-ir-after-failure",
      cl::desc("Print the IR after a pass that failed"), cl::init(false)};
  cl::opt<bool> printIRModuleScope{
      "mlir-print-ir-module-scope",
      cl::desc("Print the whole module when printing IR around passes"),
      cl::init(false)};
  cl::opt<bool> showDialects{"show-dialects",
                             cl::desc("Print the registered dialects and exit"),
                             cl::init(false)};
};

Options* options = nullptr;

// Parses one buffer, runs the pipeline on it and prints the result into `os`.
mlir::LogicalResult performActions(
    llvm::raw_ostream& os, const std::shared_ptr<llvm::SourceMgr>& sourceMgr,
    mlir::MLIRContext* context, const mlir::PassPipelineCLParser& pipeline) {
  mlir::DefaultTimingManager tm;
  mlir::applyDefaultTimingManagerCLOptions(tm);
  mlir::TimingScope timing = tm.getRootScope();

  mlir::ParserConfig config(context);
  mlir::TimingScope parserTiming = timing.nest("Parser");
  mlir::OwningOpRef<mlir::Operation*> op =
      mlir::parseSourceFileForTool(sourceMgr, config, /*insertImplicitModule=*/true);
  parserTiming.stop();
  if (!op) return mlir::failure();

  mlir::PassManager pm(op.get()->getName(), mlir::PassManager::Nesting::Implicit);
  pm.enableVerifier(options->verifyEach);
  pm.enableTiming(timing);
  if (options->printIRBeforeAll || options->printIRAfterAll ||
      options->printIRAfterFailure) {
    // The printer needs the passes to run one at a time.
    context->disableMultithreading();
    auto before = [](mlir::Pass*, mlir::Operation*) {
      return options->printIRBeforeAll.getValue();
    };
    auto after = [](mlir::Pass*, mlir::Operation*) {
      return options->printIRAfterAll.getValue();
    };
    pm.enableIRPrinting(before, after, options->printIRModuleScope,
                        options->printIRAfterChange,
                        options->printIRAfterFailure, llvm::errs());
  }
  auto errorHandler = [&](const llvm::Twine& msg) {
    mlir::emitError(mlir::UnknownLoc::get(context)) << msg;
    return mlir::failure();
  };
  if (mlir::failed(pipeline.addToPipeline(pm, errorHandler))) {
    return mlir::failure();
  }
  if (mlir::failed(pm.run(*op))) return mlir::failure();

  mlir::TimingScope outputTiming = timing.nest("Output");
  op.get()->print(os, mlir::OpPrintingFlags());
  os << '\n';
  return mlir::success();
}

// MLIR 22's parser aborts on a use of result N of a value when N is huge
// (`%r#2147483647`: it grows a vector to N before checking). No real IR
// has an op with a million results: such a use is refused here, located.
constexpr uint64_t kMaxResultNumber = 1 << 20;

mlir::LogicalResult refuseHugeResultNumbers(llvm::SourceMgr& sourceMgr) {
  const llvm::MemoryBuffer* buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  llvm::StringRef text = buffer->getBuffer();
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '#' || i == 0 || !llvm::isDigit(text[i + 1])) continue;
    // Only after an SSA name: %name#N.
    size_t j = i;
    while (j > 0 && (llvm::isAlnum(text[j - 1]) || text[j - 1] == '_' || text[j - 1] == '.' ||
                     text[j - 1] == '$' || text[j - 1] == '-')) {
      --j;
    }
    if (j == 0 || text[j - 1] != '%') continue;
    size_t end = i + 1;
    while (end < text.size() && llvm::isDigit(text[end])) ++end;
    uint64_t number;
    if (!text.slice(i + 1, end).getAsInteger(10, number) && number < kMaxResultNumber) continue;
    sourceMgr.PrintMessage(llvm::errs(), llvm::SMLoc::getFromPointer(text.data() + i),
                           llvm::SourceMgr::DK_Error,
                           "result number " + text.slice(i + 1, end) +
                               " is larger than any operation has");
    return mlir::failure();
  }
  return mlir::success();
}

// MLIR's parser recurses once per nested region or attribute dictionary
// and overflows the stack between 2000 and 4000 levels: deeper input is
// refused here, located at the first brace past the limit. Braces inside
// string literals and // comments do not count.
constexpr int kMaxNesting = 1000;

mlir::LogicalResult refuseDeepNesting(llvm::SourceMgr& sourceMgr) {
  const llvm::MemoryBuffer* buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  llvm::StringRef text = buffer->getBuffer();
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '{' && ++depth > kMaxNesting) {
      sourceMgr.PrintMessage(llvm::errs(), llvm::SMLoc::getFromPointer(text.data() + i),
                             llvm::SourceMgr::DK_Error,
                             "regions and attribute dictionaries are nested deeper than " +
                                 llvm::Twine(kMaxNesting) + " levels");
      return mlir::failure();
    } else if (c == '}') {
      --depth;
    }
  }
  return mlir::success();
}

mlir::LogicalResult processBuffer(llvm::raw_ostream& os,
                                  std::unique_ptr<llvm::MemoryBuffer> buffer,
                                  const mlir::DialectRegistry& registry,
                                  const mlir::PassPipelineCLParser& pipeline) {
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  if (mlir::failed(refuseHugeResultNumbers(*sourceMgr)) ||
      mlir::failed(refuseDeepNesting(*sourceMgr))) {
    return mlir::failure();
  }
  mlir::MLIRContext context(registry);
  context.allowUnregisteredDialects(options->allowUnregisteredDialects);
  if (options->verifyDiagnostics) {
    context.printOpOnDiagnostic(false);
    mlir::SourceMgrDiagnosticVerifierHandler handler(*sourceMgr, &context);
    // The outcome is judged by the expected-* comments, not by the pipeline.
    (void)performActions(os, sourceMgr, &context, pipeline);
    return handler.verify();
  }
  mlir::SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
  return performActions(os, sourceMgr, &context, pipeline);
}

// Splits `input` at lines that hold only the marker. Each chunk keeps its
// place in the file (earlier lines become empty), so diagnostics give the
// line numbers of the original file.
llvm::SmallVector<std::unique_ptr<llvm::MemoryBuffer>> splitInput(
    const llvm::MemoryBuffer& input, llvm::StringRef marker) {
  llvm::SmallVector<std::unique_ptr<llvm::MemoryBuffer>> chunks;
  llvm::StringRef rest = input.getBuffer();
  std::string chunk;
  unsigned linesBefore = 0, linesInChunk = 0;
  auto flush = [&]() {
    chunks.push_back(llvm::MemoryBuffer::getMemBufferCopy(
        std::string(linesBefore, '\n') + chunk, input.getBufferIdentifier()));
    linesBefore += linesInChunk;
    chunk.clear();
    linesInChunk = 0;
  };
  while (!rest.empty()) {
    auto [line, tail] = rest.split('\n');
    bool hasNewline = rest.size() > line.size();
    rest = tail;
    if (line.trim() == marker) {
      flush();
      linesBefore += 1;  // the marker line itself
      continue;
    }
    chunk += line.str();
    if (hasNewline) {
      chunk += '\n';
      ++linesInChunk;
    }
  }
  flush();
  return chunks;
}

}  // namespace

int main(int argc, char** argv) {
  llvm::InitLLVM initLLVM(argc, argv);

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  xla::gpu::registerXlaGpuDialect(registry);
  mlir::registerAllPasses();
  xla::gpu::registerXlaGpuPasses();
  xla::gpu::registerXlaGpuTestPipelines();

  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  Options opts;
  options = &opts;
  mlir::PassPipelineCLParser pipeline("", "Compiler passes to run", "p");
  cl::ParseCommandLineOptions(
      argc, argv,
      "xla-gpu-opt: the MLIR optimizer driver with the xla_gpu dialect and "
      "passes\n");

  if (opts.showDialects) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return 0;
  }

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(opts.inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << "xla-gpu-opt: " << errorMessage << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(opts.outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "xla-gpu-opt: " << errorMessage << "\n";
    return 1;
  }

  bool failed = false;
  if (opts.splitInputFile.getNumOccurrences() == 0) {
    failed = mlir::failed(processBuffer(output->os(), std::move(input),
                                        registry, pipeline));
  } else {
    llvm::StringRef marker = opts.splitInputFile.empty()
                                 ? llvm::StringRef(kDefaultSplitMarker)
                                 : llvm::StringRef(opts.splitInputFile);
    bool first = true;
    for (auto& chunk : splitInput(*input, marker)) {
      if (!first) output->os() << opts.outputSplitMarker << "\n";
      first = false;
      // Every chunk runs, even after one fails, as with mlir-opt.
      failed |= mlir::failed(
          processBuffer(output->os(), std::move(chunk), registry, pipeline));
    }
  }
  if (failed) return 1;
  output->keep();
  return 0;
}
