// gloo_lite_store: the TCP store server as a standalone program, for jobs whose ranks are not
// started by gloo_lite_run.
//   gloo_lite_store [--host H] [--port P]
// Prints "tcp://host:port" (the GLOO_LITE_STORE value) on stdout once listening, then serves
// until SIGINT or SIGTERM.
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "rendezvous/stores.h"

namespace {

const char kUsage[] =
    "usage: gloo_lite_store [--host H] [--port P]\n"
    "  --host H  address to listen on (default 0.0.0.0, every IPv4 interface; :: for IPv6)\n"
    "  --port P  TCP port (default 0: a free port, shown in the printed URL)\n"
    "Prints tcp://host:port once listening and serves until SIGINT or SIGTERM.\n";

int usage_error(const std::string& problem) {
  std::cerr << "gloo_lite_store: " << problem << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gloo_lite::log_set_identity("store");
  std::string host = "0.0.0.0";
  long port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if ((arg == "--host" || arg == "--port") && i + 1 >= argc) {
      return usage_error(arg + " needs a value");
    }
    if (arg == "--host") {
      host = argv[++i];
    } else if (arg == "--port") {
      char* end = nullptr;
      port = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || port < 0 || port > 65535) {
        return usage_error(std::string("bad port '") + argv[i] + "'");
      }
    } else {
      return usage_error("unknown argument '" + arg + "'");
    }
  }

  // Block the signals before the server thread starts so that it inherits the mask and only
  // sigwait() below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    gloo_lite::TcpStoreServer server(
        gloo_lite::SocketAddress::resolve(host, static_cast<uint16_t>(port)));
    std::cout << server.url() << std::endl;
    int received = 0;
    sigwait(&signals, &received);
    std::cerr << "gloo_lite_store: " << strsignal(received) << ", shutting down after "
              << server.requests_handled() << " requests\n";
  } catch (const std::exception& e) {
    std::cerr << "gloo_lite_store: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
