#include "transport_tcp/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/error.h"

namespace gloo_lite::tcp {
EventLoop::EventLoop()
    : epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!epoll_.valid() || !wake_fd_.valid()) {
    throw ConnectionError(std::string("cannot create the TCP event loop: ") + std::strerror(errno));
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;  // nullptr marks the wake-up eventfd
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &event);
  thread_ = std::thread([this] { run(); });
}

EventLoop::~EventLoop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake();
  thread_.join();
}

void EventLoop::add(int fd, uint32_t events, EventHandler* handler) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = handler;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    throw ConnectionError(std::string("epoll_ctl(ADD): ") + std::strerror(errno));
  }
}

void EventLoop::modify(int fd, uint32_t events, EventHandler* handler) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = handler;
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &event);
}

void EventLoop::forget(int fd) { epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::remove(int fd) {
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  // The loop may hold events for fd from an epoll_wait before the DEL: wait until it begins its
  // next iteration, whose epoll_wait can no longer return fd.
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t target = iterations_ + 1;
  wake();
  iteration_done_.wait(lock, [&] { return iterations_ >= target || stop_; });
}

void EventLoop::wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)ignored;
}

void EventLoop::run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++iterations_;
      if (stop_) return;
    }
    iteration_done_.notify_all();
    int n = epoll_wait(epoll_.get(), events, kMaxEvents, -1);
    for (int i = 0; i < n; ++i) {
      auto* handler = static_cast<EventHandler*>(events[i].data.ptr);
      if (handler == nullptr) {
        uint64_t drained = 0;
        ssize_t ignored = ::read(wake_fd_.get(), &drained, sizeof(drained));
        (void)ignored;
        continue;
      }
      handler->on_events(events[i].events);
    }
  }
}

}  // namespace gloo_lite::tcp
