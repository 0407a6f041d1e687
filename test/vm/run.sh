#!/bin/sh
# The project's VM stage: boots Debian's stock kernel in qemu with Soft-RoCE (rxe0) and runs
# test/ibverbs/guest.sh inside, against the binaries of a host build folder.
# This is a thin wrapper around ../shared/vmtest/run-vm.sh (VMTEST_HOSTROOT=1 mode); set
# VMTEST_RUNNER to another copy of that script when running outside this workspace.
#   test/vm/run.sh [BUILD_DIR] [STEPS...]     e.g. test/vm/run.sh build-ib transport ibverbs
# Exits non-zero when a step fails or the guest's result line is missing.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$here/build-ib}" && pwd); [ $# -gt 0 ] && shift
steps=${*:-"transport matrix ibverbs"}
runner=${VMTEST_RUNNER:-$here/../shared/vmtest/run-vm.sh}
work=${TMPDIR:-/tmp}/gloo_lite_vm.$$
mkdir -p "$work"
# The guest reads its settings from /tmp/guest.env: prepend them to a copy of the script.
{ echo "BUILD='$build'"; echo "STEPS='$steps'"; cat "$here/test/ibverbs/guest.sh"; } > "$work/guest.sh"
start=$(date +%s)
VMTEST_HOSTROOT=1 VMTEST_MEM=${VMTEST_MEM:-3072} VMTEST_SMP=${VMTEST_SMP:-2} \
  VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1500} bash "$runner" "$work/guest.sh" > "$work/console.log" 2>&1
rc=$?
tr -d '\r' < "$work/console.log" | grep -a -E "^(STEP|guest:|GLOO_LITE_VM_RESULT|\[  |  [A-Za-z]|.*Failure|.*error)" | head -200
result=$(tr -d '\r' < "$work/console.log" | grep -a -o "GLOO_LITE_VM_RESULT passed=[0-9]* failed=[0-9]*" | tail -1)
echo "vm stage: ${result:-NO RESULT LINE} (run-vm rc=$rc, $(( $(date +%s) - start ))s, console: $work/console.log)"
[ -n "$result" ] && [ "$rc" -eq 0 ] && case $result in *failed=0) exit 0;; esac
exit 1
