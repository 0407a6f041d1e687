#!/usr/bin/env bash
# Installs the Debian 12 packages that gloo_lite needs to build, test and benchmark.
# Idempotent and quick: when every package is already installed it only asks dpkg and exits.
# Runs apt-get as root, through sudo when not root.
set -euo pipefail

packages=(
  build-essential   # g++, make, libc headers
  cmake
  ninja-build
  pkg-config        # finds hiredis; the install test links with pkg-config
  libgtest-dev      # tests
  libgmock-dev
  libbenchmark-dev  # benchmark/
  libhiredis-dev    # the Redis store
  redis-server      # the Redis store tests start their own server on loopback
  clang-format      # scripts and reviewers format C++ with it
  iproute2          # `ip`: network-namespace tests (interface selection, cut links)
  libibverbs-dev    # the ibverbs transport (transport_ibverbs/)
  ibverbs-providers # user-space RDMA drivers (rxe for the VM stage, mlx5, ...)
  rdma-core
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo > /dev/null; then
  as_root=(sudo)
else
  echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
