//===- HostCall.cpp - a CPU kernel's call from Python, in one C call ------===//
//
// CpuKernel.__call__ (runtime/cpu.py) checks its numpy arrays against the
// kernel's parameters, takes each one's address, starts an in-place
// output as its operand's copy and launches the grid (HostLaunch.cpp). In
// Python those steps took ~4 us a call: as long as a small kernel runs (a
// scatter-add of 500 rows, ~1.5 us). Here they are one call, made with the
// GIL held (ctypes.PyDLL), that reads each array through the buffer
// protocol, then copies and launches without the GIL.
//
// A fast path only: what it does not take -- an array that is not exactly
// a numpy.ndarray, another shape or element type, not C-contiguous, a
// read-only output, an empty array, a type numpy exports no buffer of
// (ml_dtypes') -- it leaves, untouched and with no Python error set, to
// the Python path, which checks and says what is wrong.
//
// The plugin library is loaded by tools without Python too, so this file
// does not link Python: the few C API functions it calls come from the
// running interpreter (xlaGpuHostCallInit, with ctypes.pythonapi's
// addresses), and Py_buffer and the object header are declared here as
// CPython 3.11's stable ABI has them.
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dialects/xla_gpu/HostLaunch.h"

namespace {

using PySsize = std::ptrdiff_t;
struct PyObject;

// The object header's first two fields (PyObject_HEAD, non-debug builds).
struct PyObjectHead {
  PySsize refcount;
  PyObject* type;
};

// Py_buffer (stable ABI since Python 3.11).
struct PyBuffer {
  void* buf;
  PyObject* obj;
  PySsize len;
  PySsize itemsize;
  int readonly;
  int ndim;
  char* format;
  PySsize* shape;
  PySsize* strides;
  PySsize* suboffsets;
  void* internal;
};

// PyBUF_* request flags.
constexpr int kWritable = 0x0001;
constexpr int kFormat = 0x0004;
constexpr int kCContiguous = 0x0020 | 0x0010 | 0x0008;  // with STRIDES and ND

}  // namespace

extern "C" {

// The interpreter's functions this file calls.
struct XlaGpuPythonApi {
  int (*getBuffer)(PyObject* object, PyBuffer* view, int flags);  // PyObject_GetBuffer
  void (*releaseBuffer)(PyBuffer* view);                          // PyBuffer_Release
  void (*clearError)();                                           // PyErr_Clear
  void* (*saveThread)();                                          // PyEval_SaveThread
  void (*restoreThread)(void* state);                             // PyEval_RestoreThread
  PySsize (*tupleSize)(PyObject* tuple);                          // PyTuple_Size
  PyObject* (*tupleItem)(PyObject* tuple, PySsize i);             // PyTuple_GetItem
};

// What a kernel's call needs, worked out once (CpuKernel builds it with
// ctypes; the arrays it points to live as long as the kernel).
struct XlaGpuHostCallSpec {
  void* fn;                    // the packed kernel (HostLaunch's `fn`)
  int64_t numParams;           // inputs, then outputs
  int64_t numResults;
  const int64_t* ranks;        // a parameter's rank
  const int64_t* dims;         // every parameter's dims, one after the other
  const char* const* formats;  // a parameter's accepted buffer formats,
                               // comma-separated ("i,I": a signless i32)
  int64_t numPassed;           // the parameters the kernel takes, in order
  const int64_t* passed;
  int64_t numInPlace;          // (output, operand) pairs: the output
  const int64_t* inPlace;      // starts as the operand's copy
  int64_t numBlocks;
  int64_t minBytesForWorkers;  // runtime/cpu.py's thresholds of a copy
  int64_t minBytesForStreaming;
  PyObject* ndarray;           // numpy.ndarray (the type)
};

__attribute__((visibility("default"))) void xlaGpuHostCallInit(const XlaGpuPythonApi* api);
__attribute__((visibility("default"))) int xlaGpuHostCall(const XlaGpuHostCallSpec* spec,
                                                          PyObject* arrays, int64_t workers,
                                                          int64_t copyThreads);
}

namespace {

XlaGpuPythonApi python{};

// Whether `format` is one of the comma-separated `accepted`.
bool accepts(const char* accepted, const char* format) {
  if (format == nullptr) return false;
  size_t n = std::strlen(format);
  for (const char* p = accepted; *p;) {
    const char* end = std::strchr(p, ',');
    size_t len = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (len == n && std::strncmp(p, format, n) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

// The buffers of one call, released on every way out.
class Views {
 public:
  explicit Views(size_t n) : views_(n) {}
  ~Views() {
    for (size_t i = 0; i < held_; ++i) python.releaseBuffer(&views_[i]);
  }
  // The next parameter's view of `array`, or false (no error left set).
  bool take(PyObject* array, bool writable) {
    if (python.getBuffer(array, &views_[held_], kFormat | kCContiguous |
                                                    (writable ? kWritable : 0)) != 0) {
      python.clearError();
      return false;
    }
    ++held_;
    return true;
  }
  const PyBuffer& operator[](size_t i) const { return views_[i]; }

 private:
  std::vector<PyBuffer> views_;
  size_t held_ = 0;
};

}  // namespace

void xlaGpuHostCallInit(const XlaGpuPythonApi* api) { python = *api; }

int xlaGpuHostCall(const XlaGpuHostCallSpec* spec, PyObject* arrays, int64_t workers,
                   int64_t copyThreads) {
  if (python.getBuffer == nullptr) return 0;
  if (python.tupleSize(arrays) != spec->numParams) {
    python.clearError();  // not a tuple
    return 0;
  }
  const size_t n = static_cast<size_t>(spec->numParams);
  const size_t firstOutput = n - static_cast<size_t>(spec->numResults);
  Views views(n);
  std::vector<int64_t> addresses(n);
  const int64_t* dims = spec->dims;
  for (size_t i = 0; i < n; ++i) {
    PyObject* array = python.tupleItem(arrays, static_cast<PySsize>(i));
    if (reinterpret_cast<PyObjectHead*>(array)->type != spec->ndarray) return 0;
    if (!views.take(array, /*writable=*/i >= firstOutput)) return 0;
    const PyBuffer& view = views[i];
    if (view.ndim != spec->ranks[i] || view.len == 0 || !accepts(spec->formats[i], view.format)) {
      return 0;
    }
    for (int d = 0; d < view.ndim; ++d) {
      if (view.shape[d] != dims[d]) return 0;
    }
    dims += spec->ranks[i];
    addresses[i] = reinterpret_cast<intptr_t>(view.buf);
  }
  std::vector<int64_t> values(static_cast<size_t>(spec->numPassed));
  void* state = python.saveThread();
  // An output in place of its operand starts as its copy, and its buffer
  // is the one the kernel reads and writes (two inputs of one buffer are
  // read from the first: the later one is not passed).
  for (int64_t j = 0; j < spec->numInPlace; ++j) {
    int64_t k = spec->inPlace[2 * j], v = spec->inPlace[2 * j + 1];
    if (addresses[k] != addresses[v]) {
      int64_t bytes = views[k].len;
      xlaGpuHostCopy(reinterpret_cast<void*>(addresses[k]),
                     reinterpret_cast<const void*>(addresses[v]), static_cast<size_t>(bytes),
                     bytes >= spec->minBytesForStreaming,
                     bytes < spec->minBytesForWorkers ? 1 : copyThreads);
    }
    addresses[v] = addresses[k];
  }
  for (int64_t j = 0; j < spec->numPassed; ++j) values[j] = addresses[spec->passed[j]];
  xlaGpuHostLaunch(spec->fn, values.data(), spec->numPassed, spec->numBlocks, /*numChunks=*/0,
                   workers);
  python.restoreThread(state);
  return 1;
}
