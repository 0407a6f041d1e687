#!/bin/busybox sh
# PID 1 of the VM stage's guest (test/vm/run.sh packs it into the initramfs as /init).
# The initramfs holds only busybox, this file, a few kernel modules and /etc/vm.env (written per
# run). Everything else comes from the host: its / is shared read-only over virtio-9p and the
# guest script runs chrooted into it, so host-built binaries find exactly the host's libraries,
# and `ip`, `rdma` and librxe are the host's too.
#
# Console lines the runner reads:  "vm: ..." progress, the guest script's
# "GLOO_LITE_VM_RESULT passed=N failed=M", and last "GLOO_LITE_VM_EXIT rc=N".
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
# The kernel opened /dev/console from its built-in initramfs; reopen it from devtmpfs in case
# this kernel has none, so that every line below reaches the serial console.
exec < /dev/console > /dev/console 2>&1
. /etc/vm.env

uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "vm: $* (t=$(uptime_s)s)"; }
# Powers off (PID 1 must never exit: that panics the kernel). The exit line comes last, after
# sync, so that a line on the console means the guest really got here.
finish() {
  sync
  echo "GLOO_LITE_VM_EXIT rc=$1"
  poweroff -f
  sleep 30
}
# On a setup failure the kernel log is usually the only clue (pitfall: rxe without crc32 says
# only "No such file or directory").
fail() {
  say "setup failed: $*"
  dmesg | tail -25
  finish 90
}

say "kernel $(uname -r), $(nproc) cpus, $(($(sed -n 's/MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo) / 1024)) MiB"

# Modules in dependency order (the runner resolved it on the host with modprobe --show-depends).
while read -r module; do
  insmod "/lib/modules/$module" || fail "insmod $module"
done < /etc/vm-modules

# The host's / becomes the guest's root for everything below. Writable places (/tmp, /run,
# /dev/shm) are fresh tmpfs mounts inside the guest; nothing is ever written to the host.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /host ||
  fail "cannot mount the host's / over 9p"
for dir in proc sys dev; do mount -o bind "/$dir" "/host/$dir" || fail "bind /$dir"; done
mount -t devpts devpts /host/dev/pts
# The checkout and the build folder must stay visible where they are, also when they live in
# a folder that a tmpfs is about to cover (a CI clone in /tmp): hold them by bind mounts and put
# them back on top of the tmpfs.
kept=0
for dir in "$GLOO_LITE_VM_REPO" "$GLOO_LITE_VM_BUILD"; do
  kept=$((kept + 1))
  mkdir -p "/kept/$kept"
  mount -o bind "/host$dir" "/kept/$kept" || fail "bind $dir"
done
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
kept=0
for dir in "$GLOO_LITE_VM_REPO" "$GLOO_LITE_VM_BUILD"; do
  kept=$((kept + 1))
  case $dir in
    /tmp/* | /run/* | /dev/shm/*)
      mkdir -p "/host$dir"
      mount -o bind "/kept/$kept" "/host$dir" || fail "restore $dir"
      ;;
  esac
done
in_host() { timeout 30 chroot /host /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# Soft-RoCE needs an Ethernet-like netdev with an address: a dummy interface (no NIC, nothing
# leaves the VM) with a documentation-range IPv4 address, so that the GID table gets an
# IPv4-mapped RoCE v2 entry (loopback works for raw verbs only, not for rdma_cm).
in_host ip link set lo up || fail "lo up"
in_host ip link add glvm0 type dummy || fail "ip link add glvm0 type dummy"
in_host ip addr add 192.0.2.1/24 dev glvm0 || fail "ip addr add"
in_host ip link set glvm0 up || fail "glvm0 up"
in_host rdma link add rxe0 type rxe netdev glvm0 || fail "rdma link add rxe0"
say "rxe0 is up on glvm0 (192.0.2.1)"

# The guest script, with a limit of its own so that the exit line is still printed when a step
# hangs past its own timeout. It starts in /tmp: tests may write into the working folder.
timeout "$GLOO_LITE_VM_GUEST_TIMEOUT" chroot /host /usr/bin/env \
  PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 \
  /bin/sh -c 'cd /tmp && exec /bin/sh "$0"' "$GLOO_LITE_VM_GUEST"
rc=$?
say "guest script exited with $rc"
finish "$rc"
