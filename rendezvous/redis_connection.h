// One authenticated hiredis connection with RAII, pipelining and per-call socket timeouts.
// Internal to the Redis store (built only with hiredis).
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"
#include "rendezvous/store.h"

namespace gloo_lite::store_detail {

struct RedisEndpoint {
  std::string host;
  uint16_t port = 6379;
  std::string user;  // a Redis 6 ACL user; empty: the default user
  std::string password;
  int db = 0;
  std::string name;   // "redis://[user@]host:port/db", never showing the password
  int64_t ttl_s = 0;  // expiry of every key written (GLOO_LITE_REDIS_TTL_S); 0: none
};

// A binary-safe command argument viewing caller-owned bytes (no copy of large values).
struct RedisArg {
  RedisArg(const std::string& text) : data(text.data()), size(text.size()) {}
  RedisArg(const Bytes& bytes)
      : data(reinterpret_cast<const char*>(bytes.data())), size(bytes.size()) {}
  RedisArg(const char* text) : data(text), size(std::char_traits<char>::length(text)) {}
  const char* data;
  size_t size;
};
using RedisCommand = std::vector<RedisArg>;

struct RedisReplyFree {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyFree>;

class RedisConnection {
 public:
  // Connects, retrying while the server refuses (it may still be starting) with Backoff until
  // the deadline, then sends AUTH and SELECT when the endpoint needs them. StoreError when that
  // does not succeed by the deadline.
  static std::unique_ptr<RedisConnection> open(const RedisEndpoint& endpoint,
                                               const Deadline& deadline);

  // Sends every command, then reads every reply: one round trip, ending by `deadline` (socket
  // timeouts set to the time left). Error replies come back as replies (the connection stays
  // usable); no reply in time, a closed connection or another I/O failure is a StoreError
  // naming the server, after which this connection must be discarded.
  std::vector<RedisReply> run(const std::vector<RedisCommand>& commands, const Deadline& deadline);

 private:
  struct ContextFree {
    void operator()(redisContext* context) const { redisFree(context); }
  };
  RedisConnection(const RedisEndpoint& endpoint, redisContext* context)
      : name_(endpoint.name), context_(context) {}
  void set_timeout(const Deadline& deadline);
  [[noreturn]] void fail(const std::string& doing, int saved_errno) const;

  std::string name_;
  std::unique_ptr<redisContext, ContextFree> context_;
  std::chrono::milliseconds timeout_{-1};
  Deadline::Clock::time_point started_;  // of the current run(), for messages
};

// Throws StoreError naming the store and `what` when the reply is an error reply; explains
// NOAUTH (a password is needed in the URL).
const redisReply& expect_reply(const RedisReply& reply, const RedisEndpoint& endpoint,
                               const std::string& what);

}  // namespace gloo_lite::store_detail
