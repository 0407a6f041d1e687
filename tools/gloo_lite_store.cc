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

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/base/tls.h"
#include "rendezvous/stores.h"

namespace {

const char kUsage[] =
    "usage: gloo_lite_store [--host H] [--port P]\n"
    "  --host H  address to listen on (default 0.0.0.0, every IPv4 interface; :: for IPv6)\n"
    "  --port P  TCP port (default 0: a free port, shown in the printed URL)\n"
    "Prints tcp://host:port once listening and serves until SIGINT or SIGTERM.\n"
    "Security (docs/security.md): with GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE set, only\n"
    "clients that prove they hold the same secret get in; with GLOO_LITE_TLS_CERT,\n"
    "GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA set, every connection runs over TLS 1.3. The ranks\n"
    "need the same settings. Without a secret, anyone who can reach the port may read and\n"
    "change the store.\n";

// One line on stderr saying who may use the store, so that an operator who starts it by hand
// sees at once whether it is open to anyone who can reach it. stdout stays the URL alone.
void say_who_gets_in(const std::string& url) {
  bool secret = gloo_lite::auth::configured_secret() != nullptr;
  bool tls = gloo_lite::tls::configured_context() != nullptr;
  std::cerr << "gloo_lite_store: serving " << url << "; ";
  if (secret) {
    std::cerr << "clients must prove the job's secret (GLOO_LITE_AUTH_SECRET or "
                 "GLOO_LITE_AUTH_FILE)";
  } else {
    std::cerr << "no authentication: anyone who can reach this port may read and change the "
                 "store (set GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE here and on every "
                 "rank; docs/security.md)";
  }
  std::cerr << (tls ? "; TLS 1.3 with peers of GLOO_LITE_TLS_CA" : "; plain TCP, not encrypted")
            << "\n";
}

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
    say_who_gets_in(server.url());
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
