// The names of the built-in transports, in one place: what GLOO_LITE_TRANSPORT takes, the label
// of a transport's part of a mixed address, a device's name() and a mesh's log subsystem. The
// table (transports/builtin_transports.cc) registers them; code that must single one out (an
// error that explains what shared memory cannot reach, a hint to build with ibverbs) names it
// through these rather than by a literal.
#pragma once

namespace gloo_lite::transport {

inline constexpr const char* kShmTransport = "shm";
inline constexpr const char* kIbverbsTransport = "ibverbs";
inline constexpr const char* kTcpTransport = "tcp";

}  // namespace gloo_lite::transport
