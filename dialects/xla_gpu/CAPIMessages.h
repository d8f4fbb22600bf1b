//===- CAPIMessages.h - messages out of the plugin's C API -------*- C++ -*-===//
//
// The C API returns a failure's message in a caller's buffer (char* and its
// capacity), as the Python side allocates it: written truncated and
// NUL-terminated.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_DIALECTS_XLA_GPU_CAPIMESSAGES_H
#define XLA_GPU_DIALECTS_XLA_GPU_CAPIMESSAGES_H

#include <algorithm>
#include <cstring>
#include <string>

namespace xla::gpu {

inline void writeMessage(const std::string& message, char* buffer, size_t capacity) {
  if (!buffer || capacity == 0) return;
  size_t n = std::min(message.size(), capacity - 1);
  std::memcpy(buffer, message.data(), n);
  buffer[n] = '\0';
}

}  // namespace xla::gpu

#endif  // XLA_GPU_DIALECTS_XLA_GPU_CAPIMESSAGES_H
