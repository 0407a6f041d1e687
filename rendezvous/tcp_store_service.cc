#include "rendezvous/tcp_store_service.h"

#include "gloo_lite/base/error.h"
#include "rendezvous/counter.h"

namespace gloo_lite::tcp_store {

namespace {

Service::Outcome violation(std::string why) {
  Service::Outcome outcome;
  outcome.kind = Service::Outcome::kViolation;
  outcome.violation = std::move(why);
  return outcome;
}

Service::Outcome respond(Bytes response) {
  Service::Outcome outcome;
  outcome.response = std::move(response);
  return outcome;
}

Bytes bool_response(bool value) {
  MessageBuilder builder(kResponseHeaderBytes, 1);
  uint8_t byte = value ? 1 : 0;
  builder.add(&byte, 1);
  return builder.finish_response(Status::kOk);
}

// Every op's keys are bounded; the message names the limit so a client author can fix it.
std::string check_keys(const std::vector<Item>& keys) {
  for (const auto& key : keys) {
    if (key.size > kMaxKeyBytes) {
      return "key of " + std::to_string(key.size) + " bytes exceeds the limit of " +
             std::to_string(kMaxKeyBytes);
    }
  }
  return "";
}

}  // namespace

Service::Outcome Service::handle(ClientId client, const RequestHeader& header,
                                 const std::vector<Item>& items, Clock::time_point now) {
  switch (header.op) {
    case Op::kSet:
      return set(items);
    case Op::kAdd:
      return add(items);
    case Op::kGet:
    case Op::kWait:
      return get_or_wait(client, header, items, now);
    case Op::kCheck: {
      std::string problem = check_keys(items);
      if (!problem.empty()) return violation(problem);
      bool all = true;
      for (const auto& key : items) all = all && values_.count(key.str()) > 0;
      return respond(bool_response(all));
    }
    case Op::kErase: {
      if (items.size() != 1) return violation("erase takes one key");
      std::string problem = check_keys(items);
      if (!problem.empty()) return violation(problem);
      return respond(bool_response(values_.erase(items[0].str()) > 0));
    }
  }
  return violation("unknown request type");
}

Service::Outcome Service::set(const std::vector<Item>& items) {
  if (items.size() != 2) return violation("set takes a key and a value");
  std::string problem = check_keys({items[0]});
  if (!problem.empty()) return violation(problem);
  if (items[1].size > kMaxValueBytes) return violation("value exceeds the limit");
  std::string key = items[0].str();
  values_[key] = items[1].bytes();
  wrote(key);
  return respond(MessageBuilder(kResponseHeaderBytes, 0).finish_response(Status::kOk));
}

Service::Outcome Service::add(const std::vector<Item>& items) {
  int64_t delta = 0;
  if (items.size() != 2 || !items[1].to_i64(&delta)) {
    return violation("add takes a key and an 8-byte delta");
  }
  std::string problem = check_keys({items[0]});
  if (!problem.empty()) return violation(problem);
  std::string key = items[0].str();
  auto it = values_.find(key);
  int64_t sum = 0;
  try {
    sum = store_detail::add_to_counter(it == values_.end() ? nullptr : &it->second, delta, key,
                                       name_);
  } catch (const StoreError& e) {
    return respond(error_response(e.what()));
  }
  values_[key] = store_detail::format_counter(sum);
  wrote(key);
  MessageBuilder builder(kResponseHeaderBytes, 1);
  builder.add_i64(sum);
  return respond(builder.finish_response(Status::kOk));
}

Service::Outcome Service::get_or_wait(ClientId client, const RequestHeader& header,
                                      const std::vector<Item>& items, Clock::time_point now) {
  std::string problem = check_keys(items);
  if (!problem.empty()) return violation(problem);
  if (parked_.count(client) > 0) return violation("a second request while one is parked");
  std::vector<std::string> keys;
  keys.reserve(items.size());
  for (const auto& item : items) keys.push_back(item.str());
  const std::string* missing = first_missing(keys);
  if (missing == nullptr) return respond(ok_response(header.op, keys));
  if (header.timeout_ms == 0) return respond(timeout_response(keys));

  Clock::time_point deadline = header.timeout_ms == kNoTimeout
                                   ? Clock::time_point::max()
                                   : now + std::chrono::milliseconds(header.timeout_ms);
  Parked parked{header.op, std::move(keys), *missing, timers_.emplace(deadline, client)};
  watchers_[parked.watched].insert(client);
  parked_.emplace(client, std::move(parked));
  Outcome outcome;
  outcome.kind = Outcome::kParked;
  return outcome;
}

const std::string* Service::first_missing(const std::vector<std::string>& keys) const {
  for (const auto& key : keys) {
    if (values_.count(key) == 0) return &key;
  }
  return nullptr;
}

Bytes Service::ok_response(Op op, const std::vector<std::string>& keys) const {
  if (op == Op::kWait) return MessageBuilder(kResponseHeaderBytes, 0).finish_response(Status::kOk);
  size_t total = 4;
  for (const auto& key : keys) total += 4 + values_.at(key).size();
  if (total > kMaxResponseBodyBytes) {
    return error_response(name_ + ": the values asked for in one multi_get exceed " +
                          std::to_string(kMaxResponseBodyBytes) + " bytes; ask for fewer keys");
  }
  MessageBuilder builder(kResponseHeaderBytes, keys.size());
  for (const auto& key : keys) builder.add(values_.at(key));
  return builder.finish_response(Status::kOk);
}

Bytes Service::timeout_response(const std::vector<std::string>& keys) const {
  std::vector<const std::string*> missing;
  for (const auto& key : keys) {
    if (values_.count(key) == 0) missing.push_back(&key);
  }
  MessageBuilder builder(kResponseHeaderBytes, missing.size());
  for (const auto* key : missing) builder.add(*key);
  return builder.finish_response(Status::kTimeout);
}

// A write can only complete requests watching this key; each of them either completes or moves
// on to watch its next missing key, so no request is examined for unrelated writes.
void Service::wrote(const std::string& key) {
  auto node = watchers_.extract(key);
  if (node.empty()) return;
  for (ClientId client : node.mapped()) {
    Parked& parked = parked_.at(client);
    const std::string* missing = first_missing(parked.keys);
    if (missing != nullptr) {
      parked.watched = *missing;
      watchers_[parked.watched].insert(client);
      continue;
    }
    ready_.push_back(Delivery{client, ok_response(parked.op, parked.keys)});
    timers_.erase(parked.timer);
    parked_.erase(client);
  }
}

std::vector<Service::Delivery> Service::take_ready() {
  std::vector<Delivery> ready;
  ready.swap(ready_);
  return ready;
}

std::vector<Service::Delivery> Service::expire(Clock::time_point now) {
  std::vector<Delivery> expired;
  while (!timers_.empty() && timers_.begin()->first <= now) {
    ClientId client = timers_.begin()->second;
    expired.push_back(Delivery{client, timeout_response(parked_.at(client).keys)});
    unpark(client);
  }
  return expired;
}

std::optional<Service::Clock::time_point> Service::next_deadline() const {
  if (timers_.empty() || timers_.begin()->first == Clock::time_point::max()) return std::nullopt;
  return timers_.begin()->first;
}

void Service::forget(ClientId client) {
  if (parked_.count(client) > 0) unpark(client);
}

void Service::unpark(ClientId client) {
  auto it = parked_.find(client);
  auto watchers = watchers_.find(it->second.watched);
  watchers->second.erase(client);
  if (watchers->second.empty()) watchers_.erase(watchers);
  timers_.erase(it->second.timer);
  parked_.erase(it);
}

}  // namespace gloo_lite::tcp_store
