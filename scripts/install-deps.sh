#!/usr/bin/env bash
# Installs the Debian 12 packages that gloo_lite needs to build, test and benchmark.
# Idempotent and quick (scripts/lib/apt-install.sh): only dpkg is asked when all are there.
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
  libssl-dev        # libcrypto: HMAC and random nonces for authentication; libssl: TLS (docs/security.md)
  openssl           # the TLS tests make their CA and certificates with the openssl command
  redis-server      # the Redis store tests start their own server on loopback
  clang-format      # scripts and reviewers format C++ with it
  clang             # the libFuzzer targets (scripts/fuzz.sh); GCC builds everything else
  libclang-rt-14-dev  # libFuzzer and clang's sanitizer runtimes (GCC's come with g++)
  iproute2          # `ip`: network-namespace tests (interface selection, cut links)
  libibverbs-dev    # the ibverbs transport (transport_ibverbs/)
  ibverbs-providers # user-space RDMA drivers (rxe for the VM stage, mlx5, ...)
  rdma-core
)

source "$(dirname "$0")/lib/apt-install.sh"
install_packages install-deps "${packages[@]}"
