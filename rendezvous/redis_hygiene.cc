#include "rendezvous/redis_hygiene.h"

#include <unistd.h>

#include <algorithm>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::store_detail {

namespace {

// Renewals and the close are housekeeping: they must not hold up a closing rank for long when
// Redis does not answer (the keys then simply expire).
constexpr std::chrono::milliseconds kHousekeeping(2000);
// Commands per pipeline of a renewal, so that a handle with many keys does not build one huge
// request.
constexpr size_t kRenewBatch = 256;

std::chrono::milliseconds renewal_period(int64_t ttl_s) {
  return std::chrono::milliseconds(std::max<int64_t>(1, ttl_s * 1000 / 3));
}

}  // namespace

std::string redis_scope_of(const std::string& key) {
  size_t slash = key.find('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

RedisHygiene::RedisHygiene(const RedisEndpoint& endpoint, RedisConnections& connections)
    : endpoint_(endpoint),
      connections_(connections),
      ttl_text_(std::to_string(endpoint.ttl_s)),
      period_(renewal_period(endpoint.ttl_s)) {}

RedisHygiene::~RedisHygiene() {
  // close() is the store's job; this only keeps a forgotten heartbeat from outliving `this`.
  stop_heartbeat();
}

RedisHygiene::Scope& RedisHygiene::scope_locked(const std::string& scope) {
  auto [it, added] = scopes_.try_emplace(scope);
  if (added) {
    it->second.name = scope;
    it->second.members = "gloo_lite:job:" + scope + ":members";
    it->second.keys = "gloo_lite:job:" + scope + ":keys";
  }
  return it->second;
}

std::vector<RedisCommand> RedisHygiene::wrap(const std::string& key,
                                             std::vector<RedisCommand> write,
                                             const std::vector<std::string>& written,
                                             size_t* first_reply) {
  std::vector<RedisCommand> pipeline;
  std::string name = redis_scope_of(key);
  std::lock_guard<std::mutex> lock(mutex_);
  pid_t self = getpid();
  if (written_by_ != self) {  // a child of fork() renews only what it writes itself
    written_.clear();
    written_by_ = self;
  }
  Scope* scope = name.empty() ? nullptr : &scope_locked(name);
  bool joining = scope != nullptr && scope->joined != self;
  // The join goes first: a last member closing between it and the write sees this one and
  // leaves the keys alone.
  if (joining) {
    scope->joined = self;
    pipeline.push_back({"INCR", scope->members});
    if (endpoint_.ttl_s > 0) pipeline.push_back({"EXPIRE", scope->members, ttl_text_});
  }
  *first_reply = pipeline.size();
  for (auto& command : write) pipeline.push_back(std::move(command));
  if (endpoint_.ttl_s > 0) {
    for (const auto& written_key : written) {
      pipeline.push_back({"EXPIRE", written_key, ttl_text_});
      written_.insert(written_key);
    }
    start_heartbeat_locked();
  }
  if (scope != nullptr) {
    RedisCommand listing{"SADD", scope->keys};
    for (const auto& written_key : written) listing.push_back(written_key);
    pipeline.push_back(std::move(listing));
    // After the SADD, which creates the set on the scope's first write.
    if (joining && endpoint_.ttl_s > 0) pipeline.push_back({"EXPIRE", scope->keys, ttl_text_});
  }
  return pipeline;
}

std::vector<RedisCommand> RedisHygiene::forget(const std::string& key,
                                               const std::vector<std::string>& erased) {
  std::string name = redis_scope_of(key);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& erased_key : erased) written_.erase(erased_key);
  if (name.empty()) return {};
  RedisCommand unlisting{"SREM", scope_locked(name).keys};
  for (const auto& erased_key : erased) unlisting.push_back(erased_key);
  return {unlisting};
}

void RedisHygiene::start_heartbeat_locked() {
  if (heartbeat_ && heartbeat_->pid == getpid()) return;
  // After fork(): the parent's heartbeat has no thread here; leak it (destroying a std::thread
  // that looks joinable would terminate) and start this process's own.
  if (heartbeat_) static_cast<void>(heartbeat_.release());
  heartbeat_ = std::make_unique<Heartbeat>();
  heartbeat_->pid = getpid();
  Heartbeat* heartbeat = heartbeat_.get();
  heartbeat_->thread = std::thread([this, heartbeat] { beat(heartbeat); });
}

void RedisHygiene::stop_heartbeat() {
  std::unique_ptr<Heartbeat> heartbeat;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heartbeat = std::move(heartbeat_);
  }
  if (!heartbeat) return;
  if (heartbeat->pid != getpid()) {
    static_cast<void>(heartbeat.release());  // the parent's: see start_heartbeat_locked
    return;
  }
  {
    std::lock_guard<std::mutex> lock(heartbeat->mutex);
    heartbeat->stopping = true;
  }
  heartbeat->wake.notify_all();
  heartbeat->thread.join();
}

void RedisHygiene::beat(Heartbeat* heartbeat) {
  std::unique_lock<std::mutex> lock(heartbeat->mutex);
  while (!heartbeat->wake.wait_for(lock, period_, [&] { return heartbeat->stopping; })) {
    lock.unlock();
    refresh();
    lock.lock();
  }
}

void RedisHygiene::refresh() {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys.assign(written_.begin(), written_.end());
    for (const auto& [name, scope] : scopes_) {
      if (scope.joined != getpid()) continue;
      keys.push_back(scope.members);
      keys.push_back(scope.keys);
    }
  }
  try {
    Deadline deadline = Deadline::after(kHousekeeping);
    std::unique_ptr<RedisConnection> connection = connections_.take(deadline);
    for (size_t start = 0; start < keys.size(); start += kRenewBatch) {
      std::vector<RedisCommand> batch;
      for (size_t i = start; i < std::min(keys.size(), start + kRenewBatch); ++i) {
        batch.push_back({"EXPIRE", keys[i], ttl_text_});
      }
      for (const auto& reply : connection->run(batch, deadline)) {
        expect_reply(reply, endpoint_, "renewing the expiry of this job's keys");
      }
    }
    connections_.give_back(std::move(connection));
    std::lock_guard<std::mutex> lock(mutex_);
    refresh_failing_ = false;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!refresh_failing_) {
      LOG_WARN("store", "cannot renew the expiry of " << keys.size() << " keys: " << e.what()
                                                      << "; unless Redis answers again within "
                                                      << ttl_text_
                                                      << " s, they expire while this job runs");
    }
    refresh_failing_ = true;
  }
}

void RedisHygiene::close() {
  stop_heartbeat();
  std::vector<const Scope*> joined;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (const auto& [name, scope] : scopes_) {
      if (scope.joined == getpid()) joined.push_back(&scope);
    }
  }
  Deadline deadline = Deadline::after(kHousekeeping);
  for (const Scope* scope : joined) {
    try {
      leave(*scope, deadline);
    } catch (const std::exception& e) {
      LOG_INFO("store", endpoint_.name << ": cannot tidy up after this job (" << e.what()
                                       << "); its keys expire instead");
    }
  }
}

void RedisHygiene::leave(const Scope& scope, const Deadline& deadline) {
  std::unique_ptr<RedisConnection> connection = connections_.take(deadline);
  // Ranks leaving together must not contend: all but the last need one atomic DECR.
  auto decremented = connection->run({{"DECR", scope.members}}, deadline);
  const redisReply& left = expect_reply(decremented[0], endpoint_, "closing");
  if (left.type == REDIS_REPLY_INTEGER && left.integer > 0) {
    connections_.give_back(std::move(connection));
    return;
  }
  // The last member (or the count had expired: DECR made it -1). Delete, unless someone joins
  // meanwhile: a join or a write changes a watched key and the EXEC comes back nil.
  for (;;) {
    auto looked = connection->run(
        {{"WATCH", scope.members, scope.keys}, {"GET", scope.members}, {"SMEMBERS", scope.keys}},
        deadline);
    for (const auto& reply : looked) expect_reply(reply, endpoint_, "closing");
    const redisReply& count = *looked[1];
    if (count.type == REDIS_REPLY_STRING && std::stoll(std::string(count.str, count.len)) > 0) {
      return;  // a new member tidies up; this connection, still watching, is dropped
    }
    std::vector<std::string> listed;
    const redisReply& set = *looked[2];
    for (size_t i = 0; set.type == REDIS_REPLY_ARRAY && i < set.elements; ++i) {
      listed.emplace_back(set.element[i]->str, set.element[i]->len);
    }
    RedisCommand del{"DEL", scope.members, scope.keys};
    for (const auto& key : listed) del.push_back(key);
    auto done = connection->run({{"MULTI"}, del, {"EXEC"}}, deadline);
    for (const auto& reply : done) expect_reply(reply, endpoint_, "closing");
    if (done.back()->type != REDIS_REPLY_NIL) {
      LOG_DEBUG("store", endpoint_.name << ": the last handle of job scope '" << scope.name
                                        << "' closed; deleted its " << listed.size() << " keys");
      break;
    }
    if (deadline.expired()) throw StoreError(endpoint_.name + ": closing kept racing writes");
  }
  connections_.give_back(std::move(connection));
}

}  // namespace gloo_lite::store_detail
