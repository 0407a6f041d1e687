// Keeps a shared Redis from filling up with the keys of finished or killed jobs (docs/stores.md,
// "Redis hygiene"). Internal to the Redis store.
//
// * Expiry. Every key a store handle writes gets an expiry of GLOO_LITE_REDIS_TTL_S, and a
//   heartbeat thread of the handle renews it every third of that while the handle lives. A key
//   read hours after it was written (a counter of contexts, say) is still there as long as its
//   writer runs; the keys of a job whose processes were all killed vanish within the TTL.
// * Deletion. A key's job scope is its text up to the first '/': a job's GLOO_LITE_PREFIX (or
//   its first segment). The first write of a process into a scope joins it (INCR of a member
//   count) and every write lists its keys in the scope's key set; when a handle closes it leaves
//   every scope it joined (DECR), and the one that leaves last deletes the listed keys, the set
//   and the count, in one MULTI/EXEC guarded by WATCH, so a write or join racing it makes it
//   look again (and a new member leaves the keys to that member).
//   Closing never waits for other ranks: a rank that was killed never leaves, so its job's keys
//   are not deleted but expire. Keys without '/' belong to no job: they expire, never deleted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "rendezvous/redis_connection.h"

namespace gloo_lite::store_detail {

// The job scope of `key`: its text before the first '/', or "" (no job) when it has none.
std::string redis_scope_of(const std::string& key);

// Where the hygiene gets connections: the store's pool.
class RedisConnections {
 public:
  virtual ~RedisConnections() = default;
  virtual std::unique_ptr<RedisConnection> take(const Deadline& deadline) = 0;
  virtual void give_back(std::unique_ptr<RedisConnection> connection) = 0;
};

class RedisHygiene {
 public:
  RedisHygiene(const RedisEndpoint& endpoint, RedisConnections& connections);
  // close() must have run (the store's destructor calls it while its pool still exists).
  ~RedisHygiene();
  RedisHygiene(const RedisHygiene&) = delete;
  RedisHygiene& operator=(const RedisHygiene&) = delete;

  // The pipeline for `write`, commands that create or overwrite `written` (keys of the scope of
  // `key`, the key the caller was asked to write): the join before them, on this process's first
  // write into the scope, and after them the expiries and the listing in the key set.
  // `*first_reply` is set to the index of the reply to write's first command. The commands view
  // `written` (which must outlive the exchange) and storage of this object.
  std::vector<RedisCommand> wrap(const std::string& key, std::vector<RedisCommand> write,
                                 const std::vector<std::string>& written, size_t* first_reply);
  // Commands to pipeline after erasing `erased` (keys of the scope of `key`): they leave the
  // key set and are no longer renewed.
  std::vector<RedisCommand> forget(const std::string& key, const std::vector<std::string>& erased);

  // Stops the heartbeat and leaves every scope this process joined, deleting a scope's keys when
  // it was the last member. Bounded (about 2 s when Redis does not answer); never throws: a
  // failure is logged and the keys expire instead.
  void close();

 private:
  struct Scope {
    std::string name;
    std::string members;  // count of joined handles
    std::string keys;     // set of every key written in the scope
    pid_t joined = 0;     // the process that joined it through this handle (fork: children differ)
  };
  // Its own mutex and condition variable: a child of fork() leaks its parent's heartbeat (whose
  // thread does not exist there, and whose condition variable may count it as a waiter) and
  // starts its own.
  struct Heartbeat {
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    pid_t pid = 0;
    std::thread thread;
  };

  Scope& scope_locked(const std::string& scope);
  void start_heartbeat_locked();
  void stop_heartbeat();
  void beat(Heartbeat* heartbeat);
  void refresh();
  void leave(const Scope& scope, const Deadline& deadline);

  const RedisEndpoint& endpoint_;
  RedisConnections& connections_;
  const std::string ttl_text_;
  const std::chrono::milliseconds period_;

  std::mutex mutex_;
  std::map<std::string, Scope> scopes_;      // nodes never move: commands view their names
  std::unordered_set<std::string> written_;  // keys this process wrote, renewed by the heartbeat
  pid_t written_by_ = 0;                     // the process written_ belongs to
  std::unique_ptr<Heartbeat> heartbeat_;
  bool refresh_failing_ = false;  // one warning per outage
  bool closed_ = false;
};

}  // namespace gloo_lite::store_detail
