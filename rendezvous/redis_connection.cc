#include "rendezvous/redis_connection.h"

#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::store_detail {

namespace {

constexpr const char* kServerHint =
    "; is redis-server alive, running (not stopped) and reachable from this host?";

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

std::unique_ptr<RedisConnection> RedisConnection::open(const RedisEndpoint& endpoint,
                                                       const Deadline& deadline) {
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(200));
  while (true) {
    // One attempt never outlasts the deadline; a long deadline still retries every few seconds,
    // in case a connect was lost on the way.
    auto attempt = std::clamp<std::chrono::milliseconds>(
        deadline.remaining(), std::chrono::milliseconds(1), std::chrono::milliseconds(5000));
    redisContext* context =
        redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, to_timeval(attempt));
    if (context == nullptr) throw StoreError(endpoint.name + ": cannot allocate a connection");
    if (context->err == 0) {
      std::unique_ptr<RedisConnection> connection(new RedisConnection(endpoint, context));
      std::vector<RedisCommand> handshake;
      std::string db = std::to_string(endpoint.db);
      if (!endpoint.user.empty()) {
        handshake.push_back({"AUTH", endpoint.user, endpoint.password});  // Redis 6 ACLs
      } else if (!endpoint.password.empty()) {
        handshake.push_back({"AUTH", endpoint.password});
      }
      if (endpoint.db != 0) handshake.push_back({"SELECT", db});
      if (!handshake.empty()) {
        auto replies = connection->run(handshake, deadline);
        // Redis's reply (WRONGPASS ..., or ERR for a server without ACLs) never echoes the
        // password, so it may be quoted.
        if (!endpoint.password.empty() && replies[0]->type == REDIS_REPLY_ERROR) {
          std::string as =
              endpoint.user.empty() ? "the default user" : "user '" + endpoint.user + "'";
          throw StoreError(endpoint.name + ": authentication as " + as + " failed (" +
                           std::string(replies[0]->str, replies[0]->len) +
                           "); check the user and password in the URL (a user needs Redis 6 "
                           "or later)");
        }
        for (const auto& reply : replies) expect_reply(reply, endpoint, "AUTH/SELECT");
      }
      return connection;
    }
    // Socket-level failures (refused, unreachable, timed out) may pass once the server is up;
    // others, such as an unknown host name, will not.
    std::string error = context->errstr;
    bool retryable = context->err == REDIS_ERR_IO;
    redisFree(context);
    if (!retryable) throw StoreError(endpoint.name + ": cannot connect: " + error);
    if (!backoff.sleep(deadline)) {
      throw StoreError(endpoint.name + ": cannot connect before the deadline (last error: " +
                       error + ")" + kServerHint);
    }
  }
}

void RedisConnection::set_timeout(const Deadline& deadline) {
  auto timeout = std::clamp<std::chrono::milliseconds>(
      deadline.remaining(), std::chrono::milliseconds(1), std::chrono::hours(24));
  if (timeout == timeout_) return;
  if (redisSetTimeout(context_.get(), to_timeval(timeout)) != REDIS_OK)
    fail("setting a timeout", errno);
  timeout_ = timeout;
}

std::vector<RedisReply> RedisConnection::run(const std::vector<RedisCommand>& commands,
                                             const Deadline& deadline) {
  started_ = Deadline::Clock::now();
  set_timeout(deadline);
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& command : commands) {
    argv.clear();
    lengths.clear();
    for (const auto& arg : command) {
      argv.push_back(arg.data);
      lengths.push_back(arg.size);
    }
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      fail("formatting a command", errno);
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    // hiredis's socket timeout bounds each read, not the exchange: shrink it to the time left.
    if (i > 0) set_timeout(deadline);
    void* reply = nullptr;
    if (redisGetReply(context_.get(), &reply) != REDIS_OK) fail("waiting for a reply", errno);
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  return replies;
}

void RedisConnection::fail(const std::string& doing, int saved_errno) const {
  const redisContext* c = context_.get();
  if (c->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)) {
    auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started_);
    throw StoreError(name_ + ": no reply from Redis within " + format_ms(waited) + " while " +
                     doing + kServerHint);
  }
  if (c->err == REDIS_ERR_EOF) {
    throw StoreError(name_ + ": Redis closed the connection while " + doing + kServerHint);
  }
  throw StoreError(name_ + ": " + doing + " failed: " + c->errstr + kServerHint);
}

const redisReply& expect_reply(const RedisReply& reply, const RedisEndpoint& endpoint,
                               const std::string& what) {
  if (reply->type != REDIS_REPLY_ERROR) return *reply;
  std::string message(reply->str, reply->len);
  if (message.rfind("NOAUTH", 0) == 0) {
    throw StoreError(endpoint.name +
                     ": Redis requires a password; give it in the URL as "
                     "redis://:password@host:port (or redis://user:password@host:port)");
  }
  throw StoreError(endpoint.name + ": " + what + " failed: " + message);
}

}  // namespace gloo_lite::store_detail
