#!/usr/bin/env bash
# Installs the Debian 12 packages that benchmark/compare needs to build and run the anchors
# (../shared/anchors: Debian's Gloo over TCP, Open MPI over TCP and shared memory) and to draw
# its plot. gloo_lite itself needs none of them (see install-deps.sh); never link them into it.
# Idempotent and quick: when every package is already installed it only asks dpkg and exits.
# Runs apt-get as root, through sudo when not root.
set -euo pipefail

packages=(
  build-essential     # g++/gcc/make for the anchors' Makefile
  libgloo-dev         # Debian's Gloo (/usr/lib/libgloo.so + headers): the gloo_bench anchor
  openmpi-bin         # mpirun
  libopenmpi-dev      # mpicc and mpi.h: the mpi_bench anchor
  bc                  # the anchors' lib.sh does its arithmetic with bc
  time                # /usr/bin/time -v: peak RSS per rank
  python3-matplotlib  # compare --plot (Debian's /usr/bin/python3; compare finds it)
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-bench-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo > /dev/null; then
  as_root=(sudo)
else
  echo "install-bench-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-bench-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
