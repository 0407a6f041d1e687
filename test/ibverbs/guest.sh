# The VM stage's guest script: runs inside the Soft-RoCE VM (test/vm/run.sh), chrooted into the
# host's / so the host-built binaries run unchanged. Every step has a timeout; the last line is
#   GLOO_LITE_VM_RESULT passed=N failed=M
# BUILD (the build folder) and STEPS (which steps; default all) come from the environment file
# the runner writes next to this script.
set -u
[ -f /tmp/guest.env ] && . /tmp/guest.env
BUILD=${BUILD:-/work/main/build-ib}
STEPS=${STEPS:-"transport matrix ibverbs"}
export GLOO_LITE_TEST_TRANSPORT=ibverbs GLOO_LITE_IB_DEVICE=rxe0 GLOO_LITE_LOG=${GLOO_LITE_LOG:-warn}
passed=0 failed=0
step() {  # step NAME SECONDS COMMAND...
  name=$1 limit=$2; shift 2
  start=$(date +%s)
  timeout "$limit" "$@" > "/tmp/$name.log" 2>&1; rc=$?
  took=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then passed=$((passed + 1)); echo "STEP $name ok (${took}s)"
  else failed=$((failed + 1)); echo "STEP $name FAILED rc=$rc (${took}s)"; tail -40 "/tmp/$name.log"; fi
  grep -a -E "^\[  (PASSED|FAILED) |tests? ran" "/tmp/$name.log" | tail -3
}
echo "guest: $(uname -r), $(nproc) cpus, $(ls /sys/class/infiniband)"
for s in $STEPS; do
  case $s in
    transport) step transport 420 "$BUILD/test/transport/transport_tests" \
        --gtest_filter='-Handshake.Strangers*:SendRecv.Ipv6Loopback' ;;
    matrix) step matrix 360 "$BUILD/test/collectives/collectives_matrix_tests" ;;
    collectives) step collectives 420 "$BUILD/test/collectives/collectives_tests" ;;
    ibverbs) step ibverbs 300 "$BUILD/test/ibverbs/ibverbs_tests" ;;
  esac
done
echo "GLOO_LITE_VM_RESULT passed=$passed failed=$failed"
[ $failed -eq 0 ]
