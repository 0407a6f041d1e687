#!/usr/bin/env bash
# Installs the Debian 12 packages that benchmark/compare needs to build and run the anchors
# (../shared/anchors: Debian's Gloo over TCP, Open MPI over TCP and shared memory) and to draw
# its plot. gloo_lite itself needs none of them (see install-deps.sh); never link them into it.
# Idempotent and quick (scripts/lib/apt-install.sh): only dpkg is asked when all are there.
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

source "$(dirname "$0")/lib/apt-install.sh"
install_packages install-bench-deps "${packages[@]}"
