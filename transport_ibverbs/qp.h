// One RC queue pair per peer: creation (straight to INIT) and the RTR/RTS transitions.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace gloo_lite::ibverbs {

struct RemoteQp {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  uint8_t gid[16] = {};
  ibv_mtu mtu = IBV_MTU_1024;
};

struct LocalPort {
  int port = 1;
  int gid_index = 0;
  bool ethernet = true;
  ibv_mtu mtu = IBV_MTU_1024;
  uint32_t psn = 0;
  int timeout = 17;  // 4.096 us * 2^timeout per try
  int retry_count = 7;
};

// Throws Error with errno's text on failure.
ibv_qp* create_rc_qp(ibv_pd* pd, ibv_cq* cq, int send_depth, int recv_depth, int port);
void connect_rc_qp(ibv_qp* qp, const LocalPort& local, const RemoteQp& remote);
// Flushes every posted work request; the peer can no longer write into our memory through it.
void move_to_error(ibv_qp* qp);

}  // namespace gloo_lite::ibverbs
