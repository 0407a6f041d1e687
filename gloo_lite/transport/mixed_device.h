// A device made of several transports' devices, one of which serves each pair of ranks: the
// per-pair choice of the transport table (NCCL's canConnect loop). Its meshes (mixed_mesh.h)
// hold one sub-mesh per transport; connect() gives each peer to the first transport, in
// priority order, that both ranks offer and whose can_connect() accepts the pair.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::transport {

// One transport available on this host, as the table created it.
struct SubDevice {
  std::string name;  // no ';', '=' or space: it labels the transport's address
  std::shared_ptr<Device> device;
  bool progresses_alone = true;  // see TransportEntry
};

// `transports` in priority order, at least one. `forced`: the user chose this one transport
// (GLOO_LITE_TRANSPORT); a pair it cannot serve is then an error that says so.
std::shared_ptr<Device> create_mixed_device(std::vector<SubDevice> transports, bool forced);

// The address of a mixed mesh: its sub-meshes' addresses labelled by transport, in priority
// order, "tcp=10.0.0.2:41000;ibverbs=ib1|10.0.0.2:41001|...". TCP addresses hold host, ':',
// '[', ']', '%' and digits, ibverbs ones '|', ',', ':' and hex: neither holds ';', and a label
// ends at the first '='. encode throws when a sub-address holds ';' or a space.
struct LabelledAddress {
  std::string name;
  std::string address;
};
std::string encode_addresses(const std::vector<LabelledAddress>& parts);
// Throws InvalidArgument naming `rank` when `text` is not such a list.
std::vector<LabelledAddress> decode_addresses(const std::string& text, int rank);

}  // namespace gloo_lite::transport
