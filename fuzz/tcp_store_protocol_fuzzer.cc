// Fuzzes the TCP store's protocol (rendezvous/tcp_store_protocol.h) along the path a request
// takes in the server (tcp_store_server.cc): decode_request_header on the 16 header bytes,
// parse_items on the body, then tcp_store::Service::handle, with parked get/wait requests
// completed by later writes or expired by time. Odd mode bytes fuzz the client's side instead:
// decode_response_header + parse_items on a response.
// Input (server side): mode byte, then requests, each: control byte (low 2 bits: which of four
// clients sends it; the rest: milliseconds that pass first) | 16-byte header | body.
// Invariants: decoders read only the bytes they are given (exact heap copies); an accepted
// request or response re-encodes (MessageBuilder) to exactly its bytes; every response the
// service produces is one the client accepts; answers agree with a reference key-value map
// (get, check, erase and the value set) kept here; parked clients get exactly one answer.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "rendezvous/tcp_store_protocol.h"
#include "rendezvous/tcp_store_service.h"

namespace ts = gloo_lite::tcp_store;
using gloo_lite::Bytes;
using gloo_lite::fuzz::exact_copy;
using gloo_lite::fuzz::Input;

namespace {

struct Response {
  ts::ResponseHeader header;
  std::vector<ts::Item> items;
  Bytes body;
};

// Decodes like the client (tcp_store_client.cc); false when it would refuse the bytes.
bool decode_response(const uint8_t* data, size_t size, Response* out) {
  if (size < ts::kResponseHeaderBytes) return false;
  auto header = exact_copy(data, ts::kResponseHeaderBytes);
  if (!ts::decode_response_header(header.get(), &out->header).empty()) return false;
  if (size - ts::kResponseHeaderBytes < out->header.body_bytes) return false;
  const uint8_t* body = data + ts::kResponseHeaderBytes;
  out->body.assign(body, body + out->header.body_bytes);
  if (!ts::parse_items(out->body, &out->items).empty()) return false;
  ts::MessageBuilder builder(ts::kResponseHeaderBytes, out->items.size());
  for (const auto& item : out->items) builder.add(item.data, item.size);
  Bytes again = builder.finish_response(out->header.status);
  FUZZ_CHECK(again.size() == ts::kResponseHeaderBytes + out->header.body_bytes);
  FUZZ_CHECK(std::memcmp(again.data(), data, again.size()) == 0);
  return true;
}

// A server response must be exactly one well-formed message.
Response check_response(const Bytes& bytes) {
  Response response;
  FUZZ_CHECK(decode_response(bytes.data(), bytes.size(), &response));
  FUZZ_CHECK(bytes.size() == ts::kResponseHeaderBytes + response.header.body_bytes);
  return response;
}

struct Client {
  ts::ClientId id = 0;
  bool parked = false;
};

class Server {
 public:
  Server() : service_("fuzz store") {
    for (size_t i = 0; i < 4; ++i) clients_[i].id = next_id_++;
  }

  void run(Input& input) {
    while (input.left() > 0) {
      uint8_t control = input.byte();
      now_ += std::chrono::milliseconds(control >> 2);
      deliver(service_.expire(now_));
      Client& client = clients_[control & 3];
      const uint8_t* header_bytes = input.take(ts::kRequestHeaderBytes);
      if (header_bytes == nullptr) break;
      if (client.parked) continue;  // the server reads nothing from a parked client
      auto header_copy = exact_copy(header_bytes, ts::kRequestHeaderBytes);
      ts::RequestHeader header;
      if (!ts::decode_request_header(header_copy.get(), &header).empty()) {
        drop(client);
        continue;
      }
      FUZZ_CHECK(header.body_bytes <= ts::kMaxRequestBodyBytes);
      const uint8_t* body_bytes = input.take(header.body_bytes);
      if (body_bytes == nullptr) break;  // the rest never arrives
      Bytes body(body_bytes, body_bytes + header.body_bytes);
      std::vector<ts::Item> items;
      if (!ts::parse_items(body, &items).empty()) {
        drop(client);
        continue;
      }
      check_reencoding(header, items, header_bytes);
      handle(client, header, items);
    }
    // Everything parked with a deadline times out in the end; nothing is answered twice.
    deliver(service_.expire(now_ + std::chrono::hours(24 * 365)));
    for (auto& client : clients_) drop(client);
    FUZZ_CHECK(!service_.next_deadline());
  }

 private:
  void check_reencoding(const ts::RequestHeader& header, const std::vector<ts::Item>& items,
                        const uint8_t* original) {
    ts::MessageBuilder builder(ts::kRequestHeaderBytes, items.size());
    for (const auto& item : items) builder.add(item.data, item.size);
    Bytes again = builder.finish_request(header.op, header.timeout_ms);
    FUZZ_CHECK(again.size() == ts::kRequestHeaderBytes + header.body_bytes);
    FUZZ_CHECK(std::memcmp(again.data(), original, again.size()) == 0);
  }

  void handle(Client& client, const ts::RequestHeader& header, const std::vector<ts::Item>& items) {
    auto outcome = service_.handle(client.id, header, items, now_);
    switch (outcome.kind) {
      case ts::Service::Outcome::kRespond:
        check_answer(header, items, check_response(outcome.response));
        break;
      case ts::Service::Outcome::kParked:
        FUZZ_CHECK(header.op == ts::Op::kGet || header.op == ts::Op::kWait);
        FUZZ_CHECK(header.timeout_ms != 0);
        client.parked = true;
        break;
      case ts::Service::Outcome::kViolation:
        FUZZ_CHECK(!outcome.violation.empty());
        drop(client);
        break;
    }
    deliver(service_.take_ready());
  }

  // Compares an immediate answer with the reference map, and updates it for writes.
  void check_answer(const ts::RequestHeader& header, const std::vector<ts::Item>& items,
                    const Response& response) {
    bool ok = response.header.status == ts::Status::kOk;
    switch (header.op) {
      case ts::Op::kSet:
        FUZZ_CHECK(ok && items.size() == 2);
        reference_[items[0].str()] = items[1].bytes();
        break;
      case ts::Op::kAdd: {
        FUZZ_CHECK(items.size() == 2);
        if (!ok) break;  // not a counter, or overflow: the value is unchanged
        int64_t sum = 0;
        FUZZ_CHECK(response.items.size() == 1 && response.items[0].to_i64(&sum));
        reference_[items[0].str()] = gloo_lite::to_bytes(std::to_string(sum));
        break;
      }
      case ts::Op::kGet:
      case ts::Op::kWait: {
        bool all = true;
        for (const auto& key : items) all = all && reference_.count(key.str()) > 0;
        if (!all) {
          FUZZ_CHECK(response.header.status == ts::Status::kTimeout && header.timeout_ms == 0);
          break;
        }
        if (!ok) break;  // a multi_get answer over the size limit
        if (header.op == ts::Op::kWait) {
          FUZZ_CHECK(response.items.empty());
          break;
        }
        FUZZ_CHECK(response.items.size() == items.size());
        for (size_t i = 0; i < items.size(); ++i) {
          FUZZ_CHECK(response.items[i].bytes() == reference_[items[i].str()]);
        }
        break;
      }
      case ts::Op::kCheck: {
        bool all = true;
        for (const auto& key : items) all = all && reference_.count(key.str()) > 0;
        FUZZ_CHECK(ok && response.items.size() == 1 && response.items[0].size == 1);
        FUZZ_CHECK(response.items[0].data[0] == (all ? 1 : 0));
        break;
      }
      case ts::Op::kErase: {
        bool existed = reference_.erase(items[0].str()) > 0;
        FUZZ_CHECK(ok && response.items.size() == 1 && response.items[0].size == 1);
        FUZZ_CHECK(response.items[0].data[0] == (existed ? 1 : 0));
        break;
      }
    }
  }

  void deliver(const std::vector<ts::Service::Delivery>& deliveries) {
    for (const auto& delivery : deliveries) {
      Client* client = find(delivery.client);
      FUZZ_CHECK(client != nullptr && client->parked);
      client->parked = false;
      Response response = check_response(delivery.response);
      FUZZ_CHECK(response.header.status != ts::Status::kError || !response.items.empty());
    }
  }

  Client* find(ts::ClientId id) {
    for (auto& client : clients_) {
      if (client.id == id) return &client;
    }
    return nullptr;
  }

  // The server closes the connection; the next bytes in that slot come from a new client.
  void drop(Client& client) {
    service_.forget(client.id);
    client.id = next_id_++;
    client.parked = false;
  }

  ts::Service service_;
  Client clients_[4];
  ts::ClientId next_id_ = 2;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::now();
  std::map<std::string, Bytes> reference_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input input(data, size);
  if (input.byte() & 1) {
    Response response;
    size_t left = input.left();
    const uint8_t* bytes = input.take(left);
    decode_response(bytes == nullptr ? data : bytes, left, &response);
  } else {
    Server server;
    server.run(input);
  }
  return 0;
}
