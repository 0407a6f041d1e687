#!/usr/bin/env bash
# Creates (or reuses) the project's Python virtual environment, .venv/ at the top of the
# repository (GLOO_LITE_VENV=... for another), with the packages the Python module needs to
# build and test. A venv rather than the system interpreter: Debian's Python refuses pip
# installs into it (PEP 668), and a venv in the tree keeps the project's packages apart from the
# user's. CMake looks for .venv/bin/python3 first (python/CMakeLists.txt), so a plain
# `cmake -B build` builds the module once this has run. Idempotent and quick: when the venv
# already has this list of packages it only checks that they import.
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)
cd "$scripts/.."

packages=(
  numpy              # the arrays the module works on (a runtime dependency of the package)
  nanobind           # the C++ <-> Python binding library (build time)
  scikit-build-core  # the build backend of `pip install .` (pyproject.toml)
  pytest             # test/python
  ml_dtypes          # bfloat16 for numpy (optional at run time; tested when present)
)
imports="import numpy, nanobind, scikit_build_core, pytest, ml_dtypes"

venv=${GLOO_LITE_VENV:-.venv}
python=${PYTHON:-python3}
stamp="$venv/.gloo_lite-python-deps"

if [ -x "$venv/bin/python3" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${packages[*]}" ] &&
  "$venv/bin/python3" -c "$imports" 2> /dev/null; then
  echo "install-python-deps: $venv has all ${#packages[@]} packages"
  exit 0
fi

# Debian's python3 comes without venv/ensurepip and without its C headers.
if ! "$python" -c "import ensurepip, sysconfig, os, sys; \
    sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
    2> /dev/null; then
  source "$scripts/lib/apt-install.sh"
  install_packages install-python-deps python3 python3-venv python3-dev
  python=python3
fi

"$python" -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
"$venv/bin/python3" -c "$imports"
echo "${packages[*]}" > "$stamp"
echo "install-python-deps: $venv ready ($("$venv/bin/python3" --version))"
