#include "transport_ibverbs/qp.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite::ibverbs {
namespace {

[[noreturn]] void fail(const char* what, int error) {
  throw Error(std::string("ibverbs: ") + what + " failed: " + std::strerror(error));
}

}  // namespace

ibv_qp* create_rc_qp(ibv_pd* pd, ibv_cq* cq, int send_depth, int recv_depth, int port) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = static_cast<uint32_t>(send_depth);
  init.cap.max_recv_wr = static_cast<uint32_t>(recv_depth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  if (qp == nullptr) fail("ibv_create_qp", errno);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port);
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  // INIT at once, so that receive buffers can be posted before the peer's address is known.
  int rc = ibv_modify_qp(qp, &attr,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) {
    ibv_destroy_qp(qp);
    fail("ibv_modify_qp to INIT", rc);
  }
  return qp;
}

void connect_rc_qp(ibv_qp* qp, const LocalPort& local, const RemoteQp& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(local.mtu, remote.mtu);
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;  // 0.64 ms
  attr.ah_attr.port_num = static_cast<uint8_t>(local.port);
  attr.ah_attr.dlid = remote.lid;
  if (local.ethernet) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(local.gid_index);
    attr.ah_attr.grh.hop_limit = 64;
  }
  int rc = ibv_modify_qp(qp, &attr,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) fail("ibv_modify_qp to RTR (wrong GID index? see GLOO_LITE_IB_GID_INDEX)", rc);

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = local.psn;
  attr.timeout = static_cast<uint8_t>(local.timeout);
  attr.retry_cnt = static_cast<uint8_t>(local.retry_count);
  attr.rnr_retry = 7;  // infinite: credits keep receivers from running dry, RNR is only a backstop
  attr.max_rd_atomic = 1;
  rc = ibv_modify_qp(qp, &attr,
                     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) fail("ibv_modify_qp to RTS", rc);
}

void move_to_error(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

}  // namespace gloo_lite::ibverbs
