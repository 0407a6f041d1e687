#include "transport_shm/segment.h"

#include <cstring>

namespace gloo_lite::shm {

Layout Layout::of(int size, uint32_t ring_bytes) {
  Layout layout;
  layout.ring_bytes = ring_bytes;
  layout.inbox_stride = (kInboxControlBytes + ring_bytes + 4095) / 4096 * 4096;
  layout.segment_bytes = kHeaderBytes + static_cast<uint64_t>(size) * layout.inbox_stride;
  return layout;
}

void RingView::attach(uint8_t* segment, const Layout& layout, int producer) {
  uint8_t* inbox = segment + layout.inbox_offset(producer);
  control = reinterpret_cast<InboxControl*>(inbox);
  data = inbox + kInboxControlBytes;
  capacity = layout.ring_bytes;
}

bool RingWriter::fits(size_t need, uint64_t tail, size_t* pad) const {
  size_t position = static_cast<size_t>(head_ % view_.capacity);
  size_t to_end = view_.capacity - position;
  *pad = to_end < need ? to_end : 0;  // a record never wraps: pad to the start
  return head_ + *pad + need - tail <= view_.capacity;
}

bool RingWriter::try_write(const Record& record, const void* payload, size_t bytes) {
  size_t need = record_footprint(bytes);
  uint64_t tail = view_.control->tail.load(std::memory_order_acquire);
  size_t pad = 0;
  if (!fits(need, tail, &pad)) return false;
  if (pad > 0) {
    // Less than a header of room is skipped by both ends without a record.
    if (pad >= kRecordBytes) {
      Record skip{};
      skip.kind = static_cast<uint32_t>(RecordKind::kSkip);
      std::memcpy(view_.data + head_ % view_.capacity, &skip, sizeof(skip));
    }
    head_ += pad;
  }
  uint8_t* at = view_.data + head_ % view_.capacity;
  Record header = record;
  header.payload_bytes = static_cast<uint32_t>(bytes);
  std::memcpy(at, &header, sizeof(header));
  if (bytes > 0) std::memcpy(at + kRecordBytes, payload, bytes);
  head_ += need;
  view_.control->head.store(head_, std::memory_order_release);
  return true;
}

bool RingWriter::has_room_after_announcing(size_t payload) {
  // Dekker with the consumer (which stores tail, then reads the flag): either it sees the flag
  // and rings our doorbell, or we see its new tail.
  view_.control->writer_waiting.store(1, std::memory_order_seq_cst);
  size_t pad = 0;
  return fits(record_footprint(payload), view_.control->tail.load(std::memory_order_seq_cst), &pad);
}

}  // namespace gloo_lite::shm
