// Internal: the layout of a shared-memory mesh's segment and the single-producer single-consumer
// rings in it (docs/transport-shm.md). Each rank owns one segment per mesh, a memfd that peers
// map through /proc/<pid>/fd/<fd>: a header (identity, the doorbell) and one inbox per rank of
// the context, which only that rank writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "gloo_lite/base/shared_word.h"

namespace gloo_lite::shm {

constexpr uint64_t kMagic = 0x31686d73656c6f67ull;  // "golesmh1"
constexpr uint32_t kVersion = 6;  // 5: failing cancels; 6: proofs of the job's secret
constexpr size_t kLine = 64;
constexpr size_t kHeaderBytes = 4096;  // the header page; inboxes follow it
constexpr uint32_t kMinRingBytes = 16 * 1024;
constexpr size_t kCloseTextBytes = 2048;
constexpr size_t kCancelSlots = 64;     // cancels a producer may have outstanding in one inbox
constexpr size_t kRefusedBytes = 2048;  // a bit per rank: contexts of up to 16384 ranks

static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring counters must be lock-free");

// Written once by the owner before `ready`; read by peers to verify whom they mapped.
struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t ring_bytes;  // data bytes of each inbox's ring
  uint64_t nonce;       // also in the address: a reused pid and fd cannot pass for this segment
  int32_t pid;
  int32_t rank;
  int32_t size;
  uint32_t reserved0;
  uint64_t inbox_stride;   // bytes from one inbox to the next
  uint64_t segment_bytes;  // the whole memfd
  uint64_t probe_address;  // a word in the owner's memory, for the process_vm_readv probe
  alignas(kLine) uint64_t probe_value;  // what that word holds
  uint64_t context_id;                  // valid once ready
  std::atomic<uint32_t> ready;          // 1: the connect-time fields are written
  // The doorbell: every writer rings it after a batch of records; the owner sleeps on it (the
  // futex of a SharedWord). Writers wake only an owner that counted itself a sleeper.
  alignas(kLine) SharedWord doorbell;
  // Written before `ready`: bit r says the owner could not reserve the inbox of rank r (its
  // pages are not ours to touch, so this lives in the header page, reserved at creation), and
  // refuse_error the first errno. Both ends of that pair then give it back to the transport
  // table (shm_connect.cc), which connects it over the next transport.
  alignas(kLine) uint32_t refuse_error;
  uint8_t refused[kRefusedBytes];
  // Written before `ready`: 1 when the owner holds the job's secret and admits only producers
  // that prove it, with the owner's fresh nonce for this segment (transport_shm/shm_auth.h).
  alignas(kLine) uint32_t auth;
  uint8_t auth_nonce[32];
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes, "the header must fit its page");

// Why a producer closed its side of a pair, out of band (a full ring cannot hold it back).
enum class CloseState : uint32_t { kOpen = 0, kGoodbye = 1, kAbort = 2, kMismatch = 3 };

// The control block of one inbox. head, tail and the waiting flag sit on their own lines: the
// producer writes head and the flag, the consumer writes tail.
struct InboxControl {
  alignas(kLine) std::atomic<uint64_t> head;  // bytes ever written (producer)
  alignas(kLine) std::atomic<uint64_t> tail;  // bytes ever consumed (consumer)
  // Set by a producer that found the ring full; the consumer clears it and rings the
  // producer's doorbell after it made room.
  alignas(kLine) std::atomic<uint32_t> writer_waiting;
  // The owner (consumer) reserved this inbox's pages (posix_fallocate): it serves this producer.
  alignas(kLine) std::atomic<uint32_t> reserved;
  // The producer mapped this segment and verified its header (the connect handshake).
  std::atomic<uint32_t> hello;
  // With a secret (SegmentHeader::auth), written before hello: the producer's proof that it
  // holds the job's secret (transport_shm/shm_auth.h).
  uint8_t proof[32];
  // Cancels of announced sends, out of band: the producer stores a send id in
  // cancel_ids[cancel_count % kCancelSlots], then bumps cancel_count (release), before it lets
  // go of the send's buffer. The consumer reads them after every copy from the producer's
  // memory, whatever the ring holds back, and publishes cancel_seen, which frees their slots.
  // kFailingCancel in an id: the producer's call is failing and its abort follows
  // (MatchingMesh::cancel_failing); the consumer keeps the receive for that abort's cause.
  alignas(kLine) std::atomic<uint64_t> cancel_count;
  std::atomic<uint64_t> cancel_ids[kCancelSlots];
  alignas(kLine) std::atomic<uint64_t> cancel_seen;  // consumer
  // Close notice from the producer: the state is stored last (release).
  alignas(kLine) std::atomic<uint32_t> close_state;
  uint32_t close_kind;  // transport::ErrorKind of an abort
  uint64_t close_tag;
  uint64_t close_posted;
  uint64_t close_sent;
  uint32_t close_text_bytes;
  char close_text[kCloseTextBytes];
};

constexpr size_t kInboxControlBytes = (sizeof(InboxControl) + kLine - 1) / kLine * kLine;

// A record in a ring: 8-byte aligned, never wraps (a skip record, or less than a header of room,
// pads the end of the ring).
enum class RecordKind : uint32_t {
  kSkip = 1,
  kEager = 2,        // payload: the message
  kReadyToSend = 3,  // a = send id, b = sender's buffer address (0: no CMA)
  kClearToSend = 4,  // a = send id, b = recv id (the pipelined fallback)
  kData = 5,         // a = recv id, b = offset; payload: a chunk
  kDone = 6,         // a = send id: the receiver copied the message (CMA)
  // 7 was the in-ring cancel of version 1; cancels are out of band now (InboxControl).
  kSendCancelled = 8,  // a = recv id, b = 1 if failing (kFailingCancel): the sender's answer
                       // to a clear-to-send it cannot serve
};

// Marks a cancelled send id (ids fit 32 bits) as a failing call's, in InboxControl::cancel_ids.
constexpr uint64_t kFailingCancel = uint64_t{1} << 63;

struct Record {
  uint32_t kind;
  uint32_t payload_bytes;
  uint64_t tag;
  uint64_t fingerprint;
  uint64_t length;  // the message's length
  uint64_t a;
  uint64_t b;
};
constexpr size_t kRecordBytes = sizeof(Record);
static_assert(kRecordBytes % 8 == 0, "records are 8-byte aligned");

inline size_t record_footprint(size_t payload) { return (kRecordBytes + payload + 7) & ~size_t{7}; }

// Where things are in a segment of `size` ranks with rings of `ring_bytes`.
struct Layout {
  uint32_t ring_bytes = 0;
  uint64_t inbox_stride = 0;
  uint64_t segment_bytes = 0;
  static Layout of(int size, uint32_t ring_bytes);
  uint64_t inbox_offset(int producer) const {
    return kHeaderBytes + static_cast<uint64_t>(producer) * inbox_stride;
  }
};

// One side of a ring, seen from this process: a control block and the data after it.
struct RingView {
  InboxControl* control = nullptr;
  uint8_t* data = nullptr;
  uint32_t capacity = 0;
  void attach(uint8_t* segment, const Layout& layout, int producer);
};

// The producer's end. `head` is this process's copy (it is the only writer).
class RingWriter {
 public:
  void attach(const RingView& view) {
    view_ = view;
    head_ = view.control->head.load(std::memory_order_relaxed);
  }
  // The largest payload one record can carry in this ring.
  size_t max_payload() const { return view_.capacity / 4; }
  // Writes one record with `payload` if it fits now; false: the ring is full.
  bool try_write(const Record& record, const void* payload, size_t bytes);
  // Announces a full ring (the consumer will ring our doorbell) and checks once more.
  bool has_room_after_announcing(size_t payload);
  InboxControl* control() const { return view_.control; }

 private:
  bool fits(size_t need, uint64_t tail, size_t* pad) const;
  RingView view_;
  uint64_t head_ = 0;
};

// A receiver copies a large message straight from the sender's buffer (process_vm_readv), and
// the sender may take the buffer back (a cancel, a close notice) and let its caller write it.
// Both sides order that with a read-modify-write on the same word (the cancel count, the close
// state), no fence: RMWs of one word are totally ordered and each reads the latest value. If
// the receiver's RMW comes first, its copy (before it: release) happened before the sender's
// RMW (acquire) and so before the caller's next writes; if the sender's comes first, the
// receiver's reads the cancel or the notice and discards the copy. ThreadSanitizer models both.
// The sender's side: publishes `value`, ordered before whatever this thread does next.
template <typename T>
void publish_before_reuse(std::atomic<T>& word, T value) {
  word.exchange(value, std::memory_order_acq_rel);
}
// The receiver's side, right after its copy: the word's latest value, ordered after the copy.
template <typename T>
T read_after_copy(std::atomic<T>& word) {
  return word.fetch_add(0, std::memory_order_acq_rel);
}

// Bumps the doorbell of `header` and wakes its sleepers, if any.
inline void ring_doorbell(SegmentHeader* header) { ring(header->doorbell); }

}  // namespace gloo_lite::shm
