// The Redis store. Values are plain Redis strings (SET/MGET, counters via INCRBY), so they can
// be inspected and changed with redis-cli. Waiting does not poll. Every write that creates a key
// also appends to that key's "notify stream", trimmed to one entry (XADD MAXLEN 1), and a waiter
// blocks in
//     XREAD BLOCK <ms> STREAMS notify 0-0
// which returns at once when the stream holds an entry and otherwise sleeps in Redis until one
// is added. XREAD does not consume, so one write wakes every waiter of the key, however many,
// and the entry stays for waiters that arrive later. (A notify list with BLPOP would wake only
// one waiter per element; BRPOPLPUSH rotation wakes all but needs a DEL+RPUSH pair per write
// to stay bounded, and before Redis 6 takes whole seconds only.)
// Every write is wrapped by RedisHygiene (redis_hygiene.h): expiry and deletion with its job.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "rendezvous/connection_pool.h"
#include "rendezvous/redis_connection.h"
#include "rendezvous/redis_hygiene.h"
#include "rendezvous/store_util.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

using store_detail::expect_reply;
using store_detail::RedisCommand;
using store_detail::RedisConnection;
using store_detail::RedisEndpoint;
using store_detail::RedisReply;

// Long blocks are cut into slices so that a dead server is noticed by a socket timeout.
constexpr std::chrono::milliseconds kMaxBlock(30000);
// Socket time beyond a blocking command's own timeout for its nil reply to arrive: Redis
// expires blocked commands from its event loop, up to 1000/hz ms (100 ms at the default hz 10)
// late. No reply by then means the server is stopped or gone: a StoreError, not the
// TimeoutError that blames the ranks which never set the key.
constexpr std::chrono::milliseconds kReplyGrace(200);

std::string notify_key(const std::string& key) { return "gloo_lite:notify:" + key; }

// The arguments view `notify`, which must outlive the command.
RedisCommand notify_command(const std::string& notify) {
  return {"XADD", notify, "MAXLEN", "1", "*", "set", "1"};
}

class RedisStore final : public Store, private store_detail::RedisConnections {
 public:
  RedisStore(RedisEndpoint endpoint, const Deadline& deadline) : endpoint_(std::move(endpoint)) {
    pool_.give_back(RedisConnection::open(endpoint_, deadline));
  }
  // The job's last handle deletes its keys; while the pool still exists.
  ~RedisStore() override { hygiene_.close(); }

  // One round trip. The XADD also runs on overwrites: knowing whether the key is new would cost
  // a round trip before it, and MAXLEN keeps the stream at one entry either way.
  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override {
    std::string notify = notify_key(key);
    std::vector<std::string> written{key, notify};
    size_t first = 0;
    auto replies =
        exchange(hygiene_.wrap(key, {{"SET", key, value}, notify_command(notify)}, written, &first),
                 deadline);
    for (const auto& reply : replies) expect_reply(reply, endpoint_, "set");
  }

  Bytes get(const std::string& key, const Deadline& deadline) override {
    return std::move(multi_get({key}, deadline).front());
  }

  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override {
    std::vector<Bytes> values(keys.size());
    std::vector<size_t> missing(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) missing[i] = i;
    wait_loop(keys, missing, deadline, [&](std::vector<size_t>& todo) {
      RedisCommand mget{"MGET"};
      for (size_t i : todo) mget.push_back(keys[i]);
      auto replies = exchange({mget}, probe_deadline(deadline));
      const redisReply& reply = expect_reply(replies[0], endpoint_, "multi_get");
      if (reply.type != REDIS_REPLY_ARRAY || reply.elements != todo.size()) malformed("MGET");
      std::vector<size_t> still;
      for (size_t j = 0; j < todo.size(); ++j) {
        const redisReply* element = reply.element[j];
        if (element->type == REDIS_REPLY_STRING) {
          values[todo[j]].assign(element->str, element->str + element->len);
        } else {
          still.push_back(todo[j]);
        }
      }
      todo.swap(still);
    });
    return values;
  }

  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    std::vector<size_t> missing(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) missing[i] = i;
    wait_loop(keys, missing, deadline, [&](std::vector<size_t>& todo) {
      std::vector<RedisCommand> commands;
      for (size_t i : todo) commands.push_back({"EXISTS", keys[i]});
      auto replies = exchange(commands, probe_deadline(deadline));
      std::vector<size_t> still;
      for (size_t j = 0; j < todo.size(); ++j) {
        if (expect_reply(replies[j], endpoint_, "wait").integer == 0) still.push_back(todo[j]);
      }
      todo.swap(still);
    });
  }

  // Only the write that creates the counter can complete a waiter (waiters wait for existence),
  // so later increments cost one INCRBY and nothing else.
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    std::string text = std::to_string(delta);
    std::vector<std::string> written{key};
    size_t first = 0;
    auto replies = exchange(hygiene_.wrap(key, {{"INCRBY", key, text}}, written, &first), deadline);
    const redisReply& reply =
        expect_reply(replies[first], endpoint_, "add(" + store_detail::quote_key(key) + ")");
    if (reply.type != REDIS_REPLY_INTEGER) malformed("INCRBY");
    for (const auto& other : replies) expect_reply(other, endpoint_, "add");
    if (reply.integer == delta) {
      std::vector<std::string> notify{notify_key(key)};
      for (const auto& other :
           exchange(hygiene_.wrap(key, {notify_command(notify[0])}, notify, &first), deadline)) {
        expect_reply(other, endpoint_, "add");
      }
    }
    return reply.integer;
  }

  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override {
    if (keys.empty()) return true;
    RedisCommand exists{"EXISTS"};
    for (const auto& key : keys) exists.push_back(key);
    auto replies = exchange({exists}, deadline);
    const redisReply& reply = expect_reply(replies[0], endpoint_, "check");
    return reply.type == REDIS_REPLY_INTEGER &&
           reply.integer == static_cast<long long>(keys.size());
  }

  bool erase(const std::string& key, const Deadline& deadline) override {
    std::vector<std::string> erased{key, notify_key(key)};
    std::vector<RedisCommand> commands{{"DEL", erased[0]}, {"DEL", erased[1]}};
    for (auto& command : hygiene_.forget(key, erased)) commands.push_back(std::move(command));
    auto replies = exchange(commands, deadline);
    bool existed = expect_reply(replies[0], endpoint_, "erase").integer > 0;
    for (const auto& reply : replies) expect_reply(reply, endpoint_, "erase");
    return existed;
  }

  std::string describe() const override { return endpoint_.name; }

 private:
  // Runs `probe` (which removes the keys it found from `todo`) until nothing is missing,
  // blocking on the first missing key's notify list between probes.
  template <typename Probe>
  void wait_loop(const std::vector<std::string>& keys, std::vector<size_t>& todo,
                 const Deadline& deadline, Probe&& probe) {
    auto started = Deadline::Clock::now();
    // Only for a notify entry that outlived its key (an erase racing a set): without a pause
    // the waiter would wake instantly again and again.
    Backoff stale(std::chrono::milliseconds(1), std::chrono::milliseconds(100));
    constexpr size_t kNone = SIZE_MAX;
    size_t woken_for = kNone;
    while (!todo.empty()) {
      probe(todo);
      if (todo.empty()) return;
      if (woken_for == todo.front()) stale.sleep(deadline);
      if (deadline.expired()) {
        std::vector<std::string> missing;
        for (size_t i : todo) missing.push_back(keys[i]);
        store_detail::throw_key_timeout(endpoint_.name, missing, started);
      }
      woken_for = block(notify_key(keys[todo.front()]), deadline) ? todo.front() : kNone;
    }
  }

  // A probe after a wake-up at the deadline must still be able to report the missing keys (a
  // TimeoutError), so it gets the grace a live server needs to answer.
  static Deadline probe_deadline(const Deadline& deadline) {
    if (deadline.is_never()) return deadline;
    return Deadline::after(deadline.remaining() + kReplyGrace);
  }

  // Returns true when the watched key's notify stream has an entry, false when the slice ended.
  bool block(const std::string& notify, const Deadline& deadline) {
    auto slice = std::min(deadline.remaining(), kMaxBlock);
    if (slice.count() <= 0) return false;  // BLOCK 0 would mean forever
    std::string ms = std::to_string(slice.count());
    auto replies = exchange({{"XREAD", "BLOCK", ms, "STREAMS", notify, "0-0"}},
                            Deadline::after(slice + kReplyGrace));
    return expect_reply(replies[0], endpoint_, "waiting").type != REDIS_REPLY_NIL;
  }

  std::unique_ptr<RedisConnection> take(const Deadline& deadline) override {
    std::unique_ptr<RedisConnection> connection = pool_.take();
    if (!connection) connection = RedisConnection::open(endpoint_, deadline);
    return connection;
  }
  void give_back(std::unique_ptr<RedisConnection> connection) override {
    pool_.give_back(std::move(connection));
  }

  // A connection that failed mid-exchange is dropped, never returned to the pool.
  std::vector<RedisReply> exchange(const std::vector<RedisCommand>& commands,
                                   const Deadline& deadline) {
    std::unique_ptr<RedisConnection> connection = take(deadline);
    auto replies = connection->run(commands, deadline);
    give_back(std::move(connection));
    return replies;
  }

  [[noreturn]] void malformed(const char* command) const {
    throw StoreError(endpoint_.name + ": unexpected reply to " + command);
  }

  RedisEndpoint endpoint_;
  store_detail::ConnectionPool<RedisConnection> pool_;
  store_detail::RedisHygiene hygiene_{endpoint_, *this};
};

}  // namespace

std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& user, const std::string& password,
                                        int db, const Deadline& deadline) {
  if (db < 0) throw InvalidArgument("make_redis_store: negative database index");
  if (!user.empty() && password.empty()) {
    throw InvalidArgument("make_redis_store: user '" + user + "' needs a password");
  }
  RedisEndpoint endpoint;
  endpoint.host = host;
  endpoint.port = port;
  endpoint.user = user;
  endpoint.password = password;
  endpoint.db = db;
  endpoint.ttl_s = knob_int("GLOO_LITE_REDIS_TTL_S");
  bool v6 = host.find(':') != std::string::npos;
  endpoint.name = "redis://" + (user.empty() ? "" : user + "@") + (v6 ? "[" + host + "]" : host) +
                  ":" + std::to_string(port) + "/" + std::to_string(db);
  return std::make_shared<RedisStore>(std::move(endpoint), deadline);
}

std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& password, int db,
                                        const Deadline& deadline) {
  return make_redis_store(host, port, "", password, db, deadline);
}

}  // namespace gloo_lite
