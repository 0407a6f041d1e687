// The progress engine of a TCP device: one epoll thread shared by every context on the device.
// It serves what arrives while no caller is waiting; senders write inline from their own thread
// and only hand over to the loop when the socket is full.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "gloo_lite/base/socket.h"

namespace gloo_lite::tcp {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Called on the loop thread with the epoll event mask.
  virtual void on_events(uint32_t events) = 0;
};

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void add(int fd, uint32_t events, EventHandler* handler);
  // Changes the event mask; callable from any thread.
  void modify(int fd, uint32_t events, EventHandler* handler);
  // Stops reporting fd at once, from any thread (the loop's included), without waiting: events
  // already collected may still reach its handler, which must stay alive until remove(). For
  // sockets that closed: even with no events asked for, epoll keeps reporting their hang-up.
  void forget(int fd);
  // Removes fd and returns once the loop thread can no longer be inside `handler` for it:
  // afterwards the handler may be destroyed. Must not be called on the loop thread.
  void remove(int fd);
  bool on_loop_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void run();
  void wake();

  Fd epoll_;
  Fd wake_fd_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable iteration_done_;
  uint64_t iterations_ = 0;  // loop iterations begun, guarded by mutex_
  bool stop_ = false;
};

}  // namespace gloo_lite::tcp
