#!/usr/bin/env bash
# Installs what benchmark/python_compare.py needs beside gloo_lite's own Python module: Open MPI
# (Debian's, for mpirun and the libmpi that mpi4py loads; mpicc in case pip has to build
# mpi4py from source) and, for the Python that runs the comparison, numpy and mpi4py from PyPI.
#   scripts/install-compare-deps.sh             # for `python3` on PATH
#   PYTHON=.venv/bin/python scripts/install-compare-deps.sh
# Idempotent and quick: dpkg and one import are all it asks when everything is there; pip keeps
# its downloads in its cache. mpi4py's PyPI wheels find Debian's Open MPI at run time.
set -euo pipefail

python=${PYTHON:-python3}
packages=(
  openmpi-bin     # mpirun
  libopenmpi-dev  # mpicc and mpi.h, for a source build of mpi4py
)

source "$(dirname "$0")/lib/apt-install.sh"
install_packages install-compare-deps "${packages[@]}"

if "$python" -c "import numpy, mpi4py" 2>/dev/null; then
  echo "install-compare-deps: $python has numpy and mpi4py"
  exit 0
fi
echo "install-compare-deps: installing numpy and mpi4py for $python"
if ! "$python" -m pip install --quiet "numpy" "mpi4py>=4"; then
  echo "install-compare-deps: pip failed for $python; for a system Python that refuses pip" \
       "(externally managed), make a virtual environment and pass PYTHON=venv/bin/python" >&2
  exit 1
fi
"$python" -c "import numpy, mpi4py; print('install-compare-deps: numpy', numpy.__version__, 'mpi4py', mpi4py.__version__)"
