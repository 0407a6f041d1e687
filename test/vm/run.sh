#!/usr/bin/env bash
# The VM stage: the ibverbs transport tested on a real kernel RDMA stack without RDMA hardware.
#
#   test/vm/run.sh [--no-build] [BUILD_DIR] [STEP...]
#
# Boots Debian's stock kernel (downloaded with apt-get, never installed) in qemu under software
# emulation (TCG: no KVM needed), creates a Soft-RoCE device rxe0 on a dummy interface, and runs
# test/ibverbs/guest.sh chrooted into this host's / (shared read-only over virtio-9p), so the
# binaries of BUILD_DIR (default: build, as scripts/build.sh makes it) run unchanged, on the
# host's libraries. STEPs are guest.sh's: devinfo ibverbs transport matrix smoke collectives bench
# (the default), also processes and matrix-all. The kernel and the initramfs are cached, keyed
# by kernel package and version; a cached run needs no network.
#
# Exits 0 only when the guest printed "GLOO_LITE_VM_RESULT passed=N failed=0" and its script
# exited 0. Knobs (environment):
#   GLOO_LITE_VM_CACHE    kernel/initramfs cache (default ${XDG_CACHE_HOME:-~/.cache}/gloo_lite-vm)
#   GLOO_LITE_VM_KERNEL   Debian kernel package (default: the one linux-image-amd64 depends on)
#   GLOO_LITE_VM_MEM      guest memory in MiB (3072)
#   GLOO_LITE_VM_CPUS     guest CPUs (2)
#   GLOO_LITE_VM_TIMEOUT  seconds for the whole VM, a backstop over the steps' own limits (900)
#   GLOO_LITE_VM_LOG      where the console is kept (default: console.log in the cache)
# --no-build uses BUILD_DIR as it is; otherwise install-deps.sh runs and the targets the guest
# runs are (re)built first (BUILD_DIR is configured when it does not exist).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build_it=1
if [ "${1:-}" = --no-build ]; then
  build_it=0
  shift
fi
case ${1:-} in -h | --help)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
esac
build=${1:-$repo/${BUILD_DIR:-build}}
[ $# -gt 0 ] && shift
steps=${*:-}
cache=${GLOO_LITE_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gloo_lite-vm}
mem=${GLOO_LITE_VM_MEM:-3072}
cpus=${GLOO_LITE_VM_CPUS:-2}
vm_timeout=${GLOO_LITE_VM_TIMEOUT:-900}
log=${GLOO_LITE_VM_LOG:-$cache/console.log}
# The modules the guest loads, with their dependencies. crc32_generic is not in rdma_rxe's
# dependencies but rxe allocates a "crc32" hash when a link is added: without it,
# `rdma link add` fails with only "No such file or directory".
modules=(crc32_generic rdma_rxe ib_uverbs dummy virtio_pci 9pnet_virtio 9p)

started=$(date +%s)
phase_start=$started
timings=()
say() { printf '[vm %(%T)T] %s\n' -1 "$*"; }
die() {
  say "error: $*" >&2
  exit 1
}
# Records how long the phase since the previous call took.
phase_done() {
  local now
  now=$(date +%s)
  timings+=("$1 $((now - phase_start))s")
  phase_start=$now
}
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# ---- host packages and the build --------------------------------------------------------------
"$repo/scripts/install-vm-deps.sh"
if [ "$build_it" = 1 ]; then
  "$repo/scripts/install-deps.sh"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
fi
[ -f "$build/CMakeCache.txt" ] || die "$build is not a CMake build folder (scripts/build.sh makes one)"
build=$(cd "$build" && pwd)
# Without libibverbs at configure time the transport is silently left out: say so instead.
if ! grep -q '^IBVERBS_LIBRARY:FILEPATH=/' "$build/CMakeCache.txt"; then
  die "$build was configured without libibverbs: install libibverbs-dev, then re-run cmake there"
fi
# qemu's TCG emulates AVX2 but not AVX-512: code built for this host's CPU may die of SIGILL.
# (reduction_avx2.cc is fine: it is chosen at run time, by what the CPU reports.)
if grep -E '^CMAKE_(C|CXX)_FLAGS[A-Z_]*:STRING=.*(-march=native|-mavx512|x86-64-v4)' \
  "$build/CMakeCache.txt"; then
  die "$build targets this CPU (flags above); the guest needs baseline x86-64 code"
fi
if [ "$build_it" = 1 ]; then
  cmake --build "$build" --target transport_tests collectives_matrix_tests collectives_tests \
    ibverbs_tests gloo_lite_bench gloo_lite_run
fi
phase_done "packages+build"

# ---- the kernel: Debian's package, downloaded once -------------------------------------------
mkdir -p "$cache"
apt_lists_fresh=0
refresh_apt_lists() {
  [ "$apt_lists_fresh" = 1 ] && return 0
  say "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q > /dev/null
  apt_lists_fresh=1
}
kernel_package() {
  apt-cache depends linux-image-amd64 2> /dev/null |
    awk '/Depends: linux-image-[0-9]/ && !found { print $2; found = 1 }'
}
package=${GLOO_LITE_VM_KERNEL:-$(kernel_package)}
if [ -z "$package" ]; then
  refresh_apt_lists
  package=$(kernel_package)
fi
[ -n "$package" ] || die "apt knows no linux-image-amd64 (is a Debian archive in sources.list?)"
deb=$(ls "$cache/debs/${package}_"*.deb 2> /dev/null | tail -n 1 || true)
if [ -z "$deb" ]; then
  say "downloading $package"
  # Into a folder of its own first, so that an interrupted download is never taken for a
  # cached package. (As root apt warns that it downloads "unsandboxed": harmless, filtered out.)
  partial=$cache/debs/partial
  rm -rf "$partial"
  mkdir -p "$partial"
  download() {
    (cd "$partial" && apt-get download -q "$package") 2>&1 | { grep -v unsandboxed || true; }
  }
  # Stale package lists name a version the archive no longer has: refresh them once.
  download || { refresh_apt_lists && download; } || die "apt-get download $package failed"
  mv "$partial/${package}_"*.deb "$cache/debs/"
  rm -rf "$partial"
  deb=$(ls "$cache/debs/${package}_"*.deb | tail -n 1)
fi
# Everything built from the package is kept under its name and version
# (e.g. linux-image-6.1.0-57-amd64_6.1.192-3_amd64), so a new kernel gets a new folder.
kdir=$cache/$(basename "$deb" .deb)
phase_done "kernel"

# ---- the initramfs: busybox, /init, the modules ----------------------------------------------
# Rebuilt when the kernel, init.sh or the module list changes.
recipe=$( (cat "$repo/test/vm/init.sh" && echo "${modules[*]}") | sha256sum | cut -c1-12)
initrd=$kdir/initrd-$recipe.cpio.gz
if [ ! -f "$kdir/vmlinuz" ] || [ ! -f "$initrd" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/gloo_lite-vm-kernel.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  dpkg-deb -x "$deb" "$scratch/pkg"
  # depmod and modprobe look in <base>/lib/modules; newer packages ship usr/lib/modules.
  if [ ! -d "$scratch/pkg/lib/modules" ]; then ln -s usr/lib "$scratch/pkg/lib"; fi
  release=
  for dir in "$scratch"/pkg/lib/modules/*/; do
    if [ -d "$dir" ]; then release=$(basename "$dir"); fi
  done
  [ -n "$release" ] || die "no lib/modules/<release>/ in $deb"
  say "building the initramfs for $release"
  depmod -b "$scratch/pkg" "$release"
  root=$scratch/initramfs
  mkdir -p "$root"/{bin,dev,etc,host,lib/modules,proc,sys,tmp}
  busybox=$(command -v busybox || echo /bin/busybox)
  # The initramfs has no libraries: busybox must be the static one (busybox-static).
  if ldd "$busybox" > /dev/null 2>&1; then die "$busybox is not static: install busybox-static"; fi
  cp "$busybox" "$root/bin/busybox"
  install -m 0755 "$repo/test/vm/init.sh" "$root/init"
  # modprobe prints "insmod <path>" lines, dependencies first; built-in ones print "builtin".
  for module in "${modules[@]}"; do
    modprobe -C /dev/null -d "$scratch/pkg" -S "$release" --show-depends "$module" ||
      die "kernel $release has no module $module"
  done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$scratch/order"
  while read -r path; do
    name=$(basename "$path")
    # busybox insmod reads only uncompressed modules.
    case $name in
      *.ko.xz) xz -dc "$path" > "$root/lib/modules/${name%.xz}" ;;
      *.ko.zst) zstd -qdc "$path" > "$root/lib/modules/${name%.zst}" ;;
      *.ko.gz) gzip -dc "$path" > "$root/lib/modules/${name%.gz}" ;;
      *) cp "$path" "$root/lib/modules/$name" ;;
    esac
    echo "${name%.ko*}.ko" >> "$root/etc/vm-modules"
  done < "$scratch/order"
  mkdir -p "$kdir"
  cp "$scratch/pkg/boot/vmlinuz-$release" "$kdir/vmlinuz"
  echo "$release" > "$kdir/release"
  (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 > "$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
  rm -rf "$scratch"
  trap - EXIT
fi
release=$(cat "$kdir/release")
phase_done "initramfs"

# ---- this run's settings: a second cpio appended to the cached one ---------------------------
# The kernel unpacks concatenated archives in order, so /etc/vm.env lands next to the cached
# files without rebuilding them.
run=$(mktemp -d "${TMPDIR:-/tmp}/gloo_lite-vm-run.XXXXXX")
trap 'rm -rf "$run"' EXIT
for value in "$build" "$steps" "$repo"; do
  case $value in *"'"*) die "quotes are not allowed in paths or steps: $value" ;; esac
done
mkdir -p "$run/extra/etc"
cat > "$run/extra/etc/vm.env" << EOF
export GLOO_LITE_VM_REPO='$repo'
export GLOO_LITE_VM_GUEST='$repo/test/ibverbs/guest.sh'
export GLOO_LITE_VM_BUILD='$build'
export GLOO_LITE_VM_STEPS='$steps'
export GLOO_LITE_VM_GUEST_TIMEOUT=$((vm_timeout > 90 ? vm_timeout - 30 : vm_timeout * 2 / 3))
EOF
(cd "$run/extra" && echo ./etc/vm.env | cpio -o -H newc -R 0:0 --quiet) | gzip > "$run/extra.cpio.gz"
cat "$initrd" "$run/extra.cpio.gz" > "$run/initrd"

# ---- boot ---------------------------------------------------------------------------------
say "booting $release under qemu (TCG, $cpus CPUs, $mem MiB); console: $log"
mkdir -p "$(dirname "$log")"
qemu_args=(
  -machine q35 -accel tcg -cpu max -smp "$cpus" -m "$mem"
  -nodefaults -no-user-config -display none -no-reboot -serial stdio -nic none
  -kernel "$kdir/vmlinuz" -initrd "$run/initrd"
  # panic=-1: a panic reboots at once, and -no-reboot turns that into qemu exiting.
  -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init"
  # The host's / read-only; multidevs=remap keeps inode numbers unique across its mounts.
  -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
)
set +e
# The serial console ends lines with CR LF and the firmware writes terminal escapes: clean both
# so that the log greps plainly.
timeout -k 10 "$vm_timeout" qemu-system-x86_64 "${qemu_args[@]}" < /dev/null 2> "$run/qemu.err" |
  tr -d '\r' | sed -u 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[()c][0-9A-Z]\{0,1\}//g' | tee "$log"
qemu_rc=${PIPESTATUS[0]}
set -e
phase_done "vm"
grep -v -i 'TCG doesn.t support requested feature' "$run/qemu.err" >&2 || true

# ---- verdict --------------------------------------------------------------------------------
result=$(grep -a -o 'GLOO_LITE_VM_RESULT passed=[0-9]* failed=[0-9]*' "$log" | tail -n 1 || true)
guest_rc=$(grep -a -o 'GLOO_LITE_VM_EXIT rc=[0-9]*' "$log" | tail -n 1 | sed 's/.*=//' || true)
ready=$(grep -a -o 'rxe0 is up.*(t=[0-9.]*s)' "$log" | sed 's/.*t=\([0-9.]*\)s.*/\1/' || true)
say "times: ${timings[*]} (rxe0 up ${ready:-?}s after boot), total $(($(date +%s) - started))s"
verdict=failed
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
  say "the VM ran past GLOO_LITE_VM_TIMEOUT=${vm_timeout}s"
elif [ -z "$result" ]; then
  say "no GLOO_LITE_VM_RESULT line: the guest did not finish (qemu exit $qemu_rc, see $log)"
elif [ "${result##*failed=}" = 0 ] && [ "$guest_rc" = 0 ]; then
  verdict=passed
fi
say "vm stage $verdict: ${result:-no result line} (guest exit ${guest_rc:-none})"
[ "$verdict" = passed ]
