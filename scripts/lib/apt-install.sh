# Sourced by the install scripts: install_packages LABEL PACKAGE... installs the Debian packages
# that are missing, through sudo when not root. Idempotent and quick: when every package is
# already installed it only asks dpkg.
install_packages() {
  local label=$1
  shift
  local missing=()
  local package status
  for package in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    if [ "$status" != "install ok installed" ]; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "$label: all $# packages are installed"
    return 0
  fi
  local as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo > /dev/null; then
      echo "$label: need root (or sudo) to install: ${missing[*]}" >&2
      return 1
    fi
    as_root=(sudo)
  fi
  echo "$label: installing ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}
