#include "transport_ibverbs/ib_select.h"

#include <arpa/inet.h>

#include <cstring>
#include <memory>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::ibverbs {

DeviceSpec parse_device_spec(const std::string& spec) {
  DeviceSpec out;
  auto colon = spec.find(':');
  out.name = spec.substr(0, colon);
  if (colon != std::string::npos) {
    try {
      out.port = std::stoi(spec.substr(colon + 1));
    } catch (const std::exception&) {
      throw InvalidArgument("GLOO_LITE_IB_DEVICE='" + spec +
                            "': the port after ':' must be a number");
    }
    if (out.port < 1)
      throw InvalidArgument("GLOO_LITE_IB_DEVICE='" + spec + "': ports count from 1");
  }
  return out;
}

bool gid_is_ipv4_mapped(const uint8_t raw[16]) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(raw, prefix, sizeof(prefix)) == 0;
}

bool gid_is_zero(const uint8_t raw[16]) {
  for (int i = 0; i < 16; ++i) {
    if (raw[i] != 0) return false;
  }
  return true;
}

static bool gid_is_link_local(const uint8_t raw[16]) {
  return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

std::string gid_to_string(const uint8_t raw[16]) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, raw, text, sizeof(text));
  return text;
}

int choose_gid(const std::vector<GidEntry>& table) {
  auto score = [](const GidEntry& e) {
    if (gid_is_zero(e.raw)) return 0;
    bool v4 = gid_is_ipv4_mapped(e.raw);
    if (e.type == 2 && v4) return 6;
    if (e.type == 2 && !gid_is_link_local(e.raw)) return 5;
    if (e.type == 1 && v4) return 4;
    if (e.type == 0) return 3;  // InfiniBand: the table's first entry is the port GID
    if (!gid_is_link_local(e.raw)) return 2;
    return 1;
  };
  int best = -1;
  int best_score = 0;
  for (const auto& entry : table) {
    int s = score(entry);
    if (s > best_score) {
      best_score = s;
      best = entry.index;
    }
  }
  return best;
}

int mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

static std::vector<GidEntry> read_gid_table(ibv_context* context, int port, int table_len) {
  std::vector<GidEntry> table;
  std::vector<ibv_gid_entry> entries(static_cast<size_t>(table_len > 0 ? table_len : 1));
  // Every port's valid entries in one call: querying 1024 entries one by one is slow.
  ssize_t n = ibv_query_gid_table(context, entries.data(), entries.size(), 0);
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& e = entries[static_cast<size_t>(i)];
    if (static_cast<int>(e.port_num) != port) continue;
    GidEntry entry;
    entry.index = static_cast<int>(e.gid_index);
    std::memcpy(entry.raw, e.gid.raw, 16);
    entry.type = e.gid_type == IBV_GID_TYPE_ROCE_V2   ? 2
                 : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? 1
                                                      : 0;
    table.push_back(entry);
  }
  if (n < 0) {
    // Older kernels: fall back to the plain query, typed as RoCE v2 when IPv4-mapped.
    for (int index = 0; index < table_len; ++index) {
      ibv_gid gid;
      if (ibv_query_gid(context, static_cast<uint8_t>(port), index, &gid) != 0) break;
      GidEntry entry;
      entry.index = index;
      std::memcpy(entry.raw, gid.raw, 16);
      entry.type = gid_is_ipv4_mapped(gid.raw) ? 2 : 1;
      table.push_back(entry);
    }
  }
  return table;
}

namespace {

// The GID of an ACTIVE port: GLOO_LITE_IB_GID_INDEX's (throws when the port has no such
// index), else choose_gid's pick of its table. False: none (a RoCE port without an address
// yet is skipped; an InfiniBand port is still reached by its LID).
bool pick_gid(int gid_index, PortChoice* choice) {
  const uint8_t port = static_cast<uint8_t>(choice->port);
  std::vector<GidEntry> table =
      read_gid_table(choice->context, choice->port, choice->attr.gid_tbl_len);
  int chosen = gid_index >= 0 ? gid_index : choose_gid(table);
  bool found = false;
  for (const auto& entry : table) {
    if (entry.index == chosen) {
      choice->gid = entry;
      found = true;
    }
  }
  if (found || gid_index < 0) return found;
  ibv_gid gid;
  if (ibv_query_gid(choice->context, port, gid_index, &gid) != 0) {
    throw InvalidArgument("GLOO_LITE_IB_GID_INDEX=" + std::to_string(gid_index) +
                          " is not a valid GID index of " + choice->device + ":" +
                          std::to_string(choice->port));
  }
  choice->gid.index = gid_index;
  std::memcpy(choice->gid.raw, gid.raw, 16);
  choice->gid.type = 2;
  return true;
}

}  // namespace

PortChoice open_port(const std::string& device_spec, int gid_index) {
  DeviceSpec spec = parse_device_spec(device_spec);
  int count = 0;
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> list(ibv_get_device_list(&count),
                                                            ibv_free_device_list);
  if (!list || count == 0) {
    throw InvalidArgument(
        "GLOO_LITE_TRANSPORT=ibverbs: no RDMA device found (ibv_get_device_list is empty; is an "
        "RDMA driver or rdma_rxe loaded, and ibverbs-providers installed?); use "
        "GLOO_LITE_TRANSPORT=tcp");
  }
  std::string seen;
  for (int i = 0; i < count; ++i) {
    const char* name = ibv_get_device_name(list.get()[i]);
    seen += (seen.empty() ? "" : ", ") + std::string(name);
    if (!spec.name.empty() && spec.name != name) continue;
    ibv_context* context = ibv_open_device(list.get()[i]);
    if (context == nullptr) continue;
    ibv_device_attr device_attr{};
    if (ibv_query_device(context, &device_attr) != 0) {
      ibv_close_device(context);
      continue;
    }
    for (int port = 1; port <= device_attr.phys_port_cnt; ++port) {
      if (spec.port != 0 && port != spec.port) continue;
      ibv_port_attr attr{};
      if (ibv_query_port(context, static_cast<uint8_t>(port), &attr) != 0) continue;
      if (attr.state != IBV_PORT_ACTIVE) continue;
      PortChoice choice;
      choice.context = context;
      choice.device = name;
      choice.port = port;
      choice.attr = attr;
      bool found = false;
      try {
        found = pick_gid(gid_index, &choice);
      } catch (const InvalidArgument&) {
        ibv_close_device(context);
        throw;
      }
      if (!found && attr.link_layer == IBV_LINK_LAYER_ETHERNET) continue;  // no address yet
      return choice;
    }
    ibv_close_device(context);
  }
  throw InvalidArgument("GLOO_LITE_TRANSPORT=ibverbs: no ACTIVE port with a usable GID" +
                        (device_spec.empty()
                             ? std::string()
                             : " matching GLOO_LITE_IB_DEVICE='" + device_spec + "'") +
                        " among RDMA devices [" + seen + "]; check `ibv_devinfo`");
}

}  // namespace gloo_lite::ibverbs
