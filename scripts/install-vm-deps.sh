#!/usr/bin/env bash
# Installs the Debian 12 packages that the VM stage (test/vm/run.sh: the ibverbs transport on
# Soft-RoCE inside qemu) needs on the host, on top of install-deps.sh. Nothing here is linked
# into gloo_lite. The guest runs chrooted into the host's / (shared read-only), so the RDMA
# user-space pieces it uses are the host's own.
# Idempotent and quick (scripts/lib/apt-install.sh): only dpkg is asked when all are there.
set -euo pipefail

packages=(
  qemu-system-x86    # qemu-system-x86_64: boots the guest under software emulation (no KVM)
  busybox-static     # the initramfs's only program (shell, mount, insmod, chroot, poweroff)
  kmod               # depmod/modprobe --show-depends on the unpacked kernel: module order
  cpio               # packs the initramfs
  xz-utils           # newer Debian kernels ship modules as .ko.xz; busybox insmod wants .ko
  iproute2           # `ip` (the dummy netdev) and `rdma link add` (rxe0), run in the guest
  ibverbs-providers  # librxe, the user-space Soft-RoCE driver (read from the host's /)
  ibverbs-utils      # ibv_devinfo: the guest's first sanity step
  libibverbs-dev     # the build must include the ibverbs transport (also in install-deps.sh)
)

source "$(dirname "$0")/lib/apt-install.sh"
install_packages install-vm-deps "${packages[@]}"
