#!/usr/bin/env bash
# The fault table: every fault and bad input a hostile but realistic user would try, injected
# into real jobs of fault_rank (fault_rank.cc), measured, and printed as a markdown table for
# docs/reliability.md.
#
#   test/faults/run_faults.sh BUILD_DIR [CASE_REGEX]
#
# For each fault: how it was injected, the time from the injection until every rank that was
# not the victim had ended (its final line's wall-clock time), the error each rank reported
# (first line, ranks with the same text grouped), the bound the library should meet, and
# whether it met it. It measures and reports; it does not fail on a missed bound. It never
# hangs: every job has an outer limit, after which what still runs is SIGKILLed and the row
# says so. Runs in about two minutes; the link-cut row needs root (network namespaces).
# Exit status: 0 when the table was produced (whatever it says), 2 on bad usage.
set -u

BUILD=${1:?usage: run_faults.sh BUILD_DIR [CASE_REGEX]}
ONLY=${2:-.}
FAULT_RANK=$BUILD/test/faults/fault_rank
STORE_BIN=$BUILD/tools/gloo_lite_store
LAUNCHER=$BUILD/tools/gloo_lite_run
for binary in "$FAULT_RANK" "$STORE_BIN" "$LAUNCHER"; do
  [ -x "$binary" ] || {
    echo "run_faults.sh: $binary is missing: build $BUILD first" >&2
    exit 2
  }
done
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fault_lib.sh
. "$HERE/fault_lib.sh"
# shellcheck source=../netns/netns_lib.sh
. "$HERE/../netns/netns_lib.sh"

DEADLINE_MS=3000       # GLOO_LITE_TIMEOUT_MS of every job
PROMPT_MS=1000         # the bound for faults the kernel reports at once (a closed socket)
LATE_MS=$((DEADLINE_MS + 1000))
OUTER_S=20             # no job runs longer than this
BYTES=$((4 << 20))     # per collective in the loops: every call is mid-transfer most of the time
P=4
EXTRA_ENV=()
WORK=$(mktemp -d)
cleanup() {
  kill_started
  # Quiet: bash would report each job that teardown kills as "Killed".
  {
    netns_teardown
    wait
  } 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

wanted() { [[ $1 =~ $ONLY ]]; }

# A job of P ranks looping on allreduce, every rank connected and inside the loop.
start_loop_job() {
  start_store "$1" || return 1
  start_ranks "$1" "$(seq -s ' ' 0 $((P - 1)))" "$P" loop "$BYTES" "$2"
  wait_ready "$1" "$(seq -s ' ' 0 $((P - 1)))" && sleep 1
}

others_than() { seq 0 $((P - 1)) | grep -vx "$1" | tr '\n' ' '; }

# measured_text: the time column from judge's results and the number of hung ranks.
measured_text() {
  local text="${SLOWEST_MS:-none} ms"
  [ -z "$SLOWEST_MS" ] && text="no rank ended"
  [ "$HUNG" -gt 0 ] && text="$text; **$HUNG hung**, killed after ${OUTER_S} s"
  echo "$text"
}

# errors_within RANKS_EXPECTED BOUND_MS [TYPE]: 0 when every rank ended in an error (of TYPE
# when given) no later than BOUND_MS and nothing hung.
errors_within() {
  [ "$HUNG" -eq 0 ] && [ "$ERRORED" -eq "$1" ] && [ -n "$SLOWEST_MS" ] &&
    [ "$SLOWEST_MS" -le "$2" ] && { [ -z "${3:-}" ] || ! grep -vq "$3" <<<"${TEXT//<br>/$'\n'}"; }
}

# completed_ok RANKS_EXPECTED: 0 when every rank returned verified results and nothing hung.
completed_ok() { [ "$HUNG" -eq 0 ] && [ "$OKS" -eq "$1" ]; }

case_rank_signal() {
  local signal=$1 name="rank_$1" victim=2 inject
  start_loop_job "$name" 60 || return
  inject=$(now_ms)
  kill_quietly "$signal" "${PIDS[victim]}"
  local survivors
  survivors=$(others_than $victim)
  # shellcheck disable=SC2046
  wait_pids "$OUTER_S" $(for r in $survivors; do echo "${PIDS[r]}"; done)
  judge "$name" "$survivors" "$inject"
  if [ "$signal" = KILL ]; then
    errors_within 3 "$PROMPT_MS" "ConnectionError.*rank 2 "
    local met=$?
    row "rank killed mid-collective" "SIGKILL to rank 2 of 4 in a 4 MiB allreduce loop" \
      "$(measured_text)" "$TEXT" "ConnectionError naming rank 2 on every survivor, ≤ ${PROMPT_MS} ms" \
      "$(met_if $met)"
  else
    errors_within 3 "$LATE_MS" "rank 2 "
    local met=$?
    row "rank stopped mid-collective" "SIGSTOP to rank 2 of 4 in a 4 MiB allreduce loop" \
      "$(measured_text)" "$TEXT" "an error naming rank 2 on every survivor, ≤ deadline + 1 s (${LATE_MS} ms)" \
      "$(met_if $met)"
  fi
  kill_started
}

# The store dies or stops while ranks 0-2 wait in rendezvous; rank 3 starts after the fault.
case_store_fault() {
  local signal=$1 name="store_$1" inject
  start_store "$name" || return
  start_ranks "$name" "0 1 2" "$P" once
  sleep 0.5
  inject=$(now_ms)
  kill_quietly "$signal" "$STORE_PID"
  start_ranks "$name" "3" "$P" once
  wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}" "${PIDS[2]}" "${PIDS[3]}"
  judge "$name" "0 1 2 3" "$inject"
  errors_within 4 "$LATE_MS" "StoreError.*tcp://"
  local met=$?
  local how=killed
  [ "$signal" = STOP ] && how=stopped
  row "TCP store $how during rendezvous" \
    "SIG$signal to gloo_lite_store while ranks 0-2 wait for rank 3; rank 3 starts after" \
    "$(measured_text)" "$TEXT" "StoreError naming the store on every rank, ≤ deadline + 1 s (${LATE_MS} ms)" \
    "$(met_if $met)"
  kill_started
}

case_store_kill_after_connect() {
  local name=store_gone inject
  start_loop_job "$name" 2 || return
  inject=$(now_ms)
  kill_quietly KILL "$STORE_PID"
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  completed_ok 4
  local met=$?
  row "TCP store killed after rendezvous" "SIGKILL to gloo_lite_store 1 s into a 3 s allreduce loop" \
    "$(measured_text) (to the end of the loop)" "$TEXT" "the job is unaffected: it completes, results verified" \
    "$(met_if $met)"
  kill_started
}

# The listener is open only while the mesh connects: strangers come during rendezvous, while
# ranks 0-2 wait for rank 3.
case_listener_garbage() {
  local name=listener_garbage inject port=""
  start_store "$name" || return
  start_ranks "$name" "0 1 2" "$P" once
  local deadline=$(($(now_ms) + 5000))
  until [ -n "$port" ] || [ "$(now_ms)" -gt "$deadline" ]; do
    port=$(listener_port "${PIDS[1]}")
    sleep 0.05
  done
  inject=$(now_ms)
  if [ -n "$port" ]; then
    hold_silent "$port" 2 &
    STARTED_PIDS+=("$!")
    send_garbage "$port"
    send_garbage "$port"
  fi
  start_ranks "$name" "3" "$P" once
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  completed_ok 4 && [ -n "$port" ]
  local met=$?
  row "stranger on a rank's listener" "during rendezvous, rank 1's port ${port:-(not found)}: two connections sending 64 KiB of random bytes, one silent for 2 s; then the last rank starts" \
    "$(measured_text) (to the end of the job)" "$TEXT" "the job is unaffected: it completes, results verified" \
    "$(met_if $met)"
  kill_started
}

case_store_garbage() {
  local name=store_garbage inject port
  start_store "$name" || return
  port=${STORE_URL##*:}
  inject=$(now_ms)
  hold_silent "$port" 2 &
  STARTED_PIDS+=("$!")
  send_garbage "$port"
  send_garbage "$port"
  start_ranks "$name" "0 1 2 3" "$P" once
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  completed_ok 4
  local met=$?
  row "stranger on the store port" "two connections to gloo_lite_store sending 64 KiB of random bytes, one silent for 2 s; then a job" \
    "$(measured_text) (to the end of the job)" "$TEXT" "the job is unaffected: it completes, results verified" \
    "$(met_if $met)"
  kill_started
}

# The issue-9 memory attack on the store: strangers announce maximum-size bodies and stall
# half-way; the store must cap what it buffers and keep serving the real job.
case_store_big_bodies() {
  local name=store_big_bodies inject port strangers=8 before after i established
  start_store "$name" || return
  port=${STORE_URL##*:}
  before=$(rss_mib "$STORE_PID")
  for ((i = 0; i < strangers; ++i)); do
    hold_big_body "$port" 32 6 &
    STARTED_PIDS+=("$!")
  done
  sleep 2
  after=$(rss_mib "$STORE_PID")
  inject=$(now_ms)
  start_ranks "$name" "0 1 2 3" "$P" once
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  established=$(ss -Htn state established "( sport = :$port )" 2>/dev/null | wc -l)
  completed_ok 4 && [ $((after - before)) -le 64 ]
  local met=$?
  row "strangers pinning store memory" "$strangers connections to gloo_lite_store, each announcing a 64 MiB set, sending 32 MiB of it and stalling; then a job" \
    "$(measured_text) (the job, from its start)" "store RSS ${before} → ${after} MiB with the strangers in; $established stranger connections still open after the job<br>$TEXT" \
    "the job is unaffected and the store buffers ≤ 64 MiB for strangers" "$(met_if $met)"
  kill_started
}

case_mismatch() {
  local kind=$1 check=$2 name="mismatch_$1_$2" inject what
  start_store "$name" || return
  EXTRA_ENV=(GLOO_LITE_CHECK="$check")
  inject=$(now_ms)
  start_ranks "$name" "0 1 2 3" "$P" mismatch "$kind"
  EXTRA_ENV=()
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  errors_within 4 "$LATE_MS" MismatchError
  local met=$?
  case "$kind" in
    count) what="allreduce: rank 1 passes count 1000, the others 2000" ;;
    dtype) what="allreduce: rank 1 passes int32, the others float32" ;;
    root) what="broadcast: rank 1 passes root 1, the others root 0" ;;
  esac
  row "ranks disagree on $kind (GLOO_LITE_CHECK=$check)" "$what" "$(measured_text) (from the start)" "$TEXT" \
    "MismatchError on every rank, ≤ deadline + 1 s (${LATE_MS} ms)" "$(met_if $met)"
  kill_started
}

case_sendrecv_size() {
  local send=$1 recv=$2 name="sendrecv_$1_$2" inject
  start_store "$name" || return
  inject=$(now_ms)
  start_ranks "$name" "0 1" 2 sendrecv "$send" "$recv"
  wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}"
  judge "$name" "0 1" "$inject"
  errors_within 2 "$LATE_MS"
  local met=$?
  row "send/recv size mismatch" "rank 0 sends $send B, rank 1 receives $recv B" \
    "$(measured_text) (from the start)" "$TEXT" "an error naming the sizes at both ends, ≤ deadline + 1 s (${LATE_MS} ms)" \
    "$(met_if $met)"
  kill_started
}

case_two_contexts() {
  local name=two_contexts inject
  start_store "$name" || return
  inject=$(now_ms)
  start_ranks "$name" "0 1 2 3" "$P" two-contexts
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "0 1 2 3" "$inject"
  completed_ok 4 && [ "$SLOWEST_MS" -le $((PROMPT_MS + 600)) ]
  local met=$?
  row "second context on the same prefix, one process" "each of 4 ranks: init_from_env(), an allreduce, init_from_env() again (rank r 200·(3−r) ms after rank 3), allreduces on both" \
    "$(measured_text) (from the start)" "$TEXT" "both contexts work, ≤ $((PROMPT_MS + 600)) ms (the staggering included)" "$(met_if $met)"
  kill_started
}

# A job on a fixed prefix ends (cleanly, or with a rank killed); the same job is started again
# on the same store and prefix, as `gloo_lite_run --no-prefix` with GLOO_LITE_PREFIX set does
# when the store outlives the job.
case_restart_same_prefix() {
  local how=$1 name=restart_$1 inject
  start_store "$name" || return
  if [ "$how" = clean ]; then
    start_ranks "$name" "0 1" 2 once
    wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}"
  else
    start_ranks "$name" "0 1" 2 loop "$BYTES" 60
    wait_ready "$name" "0 1"
    kill_quietly KILL "${PIDS[1]}"
    wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}"
  fi
  mv "$WORK/$name.0" "$WORK/$name.first0"
  # Rank 1 comes back first, as a rank that is quicker to restart would: it finds rank 0's
  # address key still there, from the first job.
  inject=$(now_ms)
  start_ranks "$name" "1" 2 once
  sleep 0.3
  start_ranks "$name" "0" 2 once
  wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}"
  judge "$name" "0 1" "$inject"
  completed_ok 2 && [ "$SLOWEST_MS" -le $((PROMPT_MS + 300)) ]
  local met=$?
  local first="ended cleanly"
  [ "$how" = killed ] && first="had rank 1 SIGKILLed"
  row "restarted job on the same store prefix" "a 2-rank job on prefix P $first; the same job again on the same store and P, rank 1 starting 0.3 s before rank 0" \
    "$(measured_text) (from the restart)" "$TEXT" "the new job works, ≤ $((PROMPT_MS + 300)) ms (the stagger included)" "$(met_if $met)"
  kill_started
}

# Calls that break the API's rules on purpose (issue 9's memory-safety, lost-cause and
# thread-safety items): run MODE on SIZE ranks, measured from the start.
case_api_misuse() {
  local mode=$1 size=$2 name="api_$1" inject ranks
  ranks=$(seq -s ' ' 0 $((size - 1)))
  start_store "$name" || return
  inject=$(now_ms)
  start_ranks "$name" "$ranks" "$size" "$mode"
  wait_pids "$OUTER_S" "${PIDS[@]}"
  judge "$name" "$ranks" "$inject"
  local fault how bound met
  case "$mode" in
    huge-count)
      errors_within "$size" "$PROMPT_MS" InvalidArgument
      met=$?
      fault="element count whose byte size overflows"
      how="allreduce of 2^62 float32 on a 16-element buffer, 2 ranks"
      bound="InvalidArgument in element counts on every rank, before any memory is touched, ≤ ${PROMPT_MS} ms" ;;
    throwing-reduction)
      errors_within "$size" "$PROMPT_MS" "refused its input"
      met=$?
      fault="custom reduction throws"
      how="ReduceOp::kCustom whose function throws on rank 1, 4 ranks, 64 Ki floats"
      bound="every rank fails with rank 1's exception text, ≤ ${PROMPT_MS} ms" ;;
    same-tag-threads)
      { completed_ok "$size" || errors_within "$size" "$LATE_MS"; }
      met=$?
      fault="two threads, one tag"
      how="2 threads per rank, 200 allreduces of 64 Ki floats each, same context and tag 0, 4 ranks"
      bound="every sum right (serialised), or an error on every rank; never a wrong sum" ;;
  esac
  row "$fault" "$how" "$(measured_text) (from the start)" "$TEXT" "$bound" "$(met_if $met)"
  kill_started
}

# launcher_job NAME ARGS...: gloo_lite_run ARGS with its output in NAME.launcher and each
# rank's lines in NAME.R (the "[R] " tags taken off); sets LAUNCHER_PID.
launcher_job() {
  local name=$1
  shift
  PIDS=()  # the ranks are the launcher's children, not ours
  env GLOO_LITE_TIMEOUT_MS="$DEADLINE_MS" "${EXTRA_ENV[@]}" \
    "$LAUNCHER" --timeout "$OUTER_S" "$@" >"$WORK/$name.launcher" 2>&1 &
  LAUNCHER_PID=$!
  STARTED_PIDS+=("$LAUNCHER_PID")
}

split_launcher_output() {
  local name=$1 rank
  for ((rank = 0; rank < $2; ++rank)); do
    sed -n "s/^\[$rank\] //p" "$WORK/$name.launcher" >"$WORK/$name.$rank"
  done
}

launcher_summary() { grep '^gloo_lite_run:' "$WORK/$1.launcher" | tail -n 1; }

case_bad_knob() {
  local knob=$1 name="knob_${1%%=*}_$2" inject summary
  inject=$(now_ms)
  EXTRA_ENV=("$knob")
  launcher_job "$name" -n 2 -- "$FAULT_RANK" once
  EXTRA_ENV=()
  wait_pids $((OUTER_S + 5)) "$LAUNCHER_PID"
  split_launcher_output "$name" 2
  local ended=$(($(now_ms) - inject))
  judge "$name" "0 1" "$inject"
  errors_within 2 "$PROMPT_MS" "${knob%%=*}"
  local met=$?
  summary=$(launcher_summary "$name")
  # Refused by the launcher before any rank starts (the earliest place): as good as the ranks.
  if [ "$met" -ne 0 ] && grep -q "${knob%%=*}" <<<"$summary" && [ "$ended" -le "$PROMPT_MS" ]; then
    met=0
    TEXT="no rank started"
    SLOWEST_MS=$ended
  fi
  [ -n "$summary" ] && TEXT="$TEXT<br>launcher: $(cell "${summary#gloo_lite_run: }")"
  row "bad knob value" "\`$knob\` (gloo_lite_run -n 2, one allreduce)" "$(measured_text) (from the start)" \
    "$TEXT" "fails at start, naming the knob, its value and what is allowed, ≤ ${PROMPT_MS} ms" "$(met_if $met)"
}

# The launcher's own report of a rank that is stopped or killed under it.
case_launcher_blame() {
  local signal=$1 name="launcher_$1" inject victim="" pid summary
  launcher_job "$name" -n "$P" --grace 1 -- "$FAULT_RANK" loop "$BYTES" 60
  local deadline=$(($(now_ms) + 10000))
  until [ "$(grep -c ' ready ' "$WORK/$name.launcher")" -ge "$P" ] || [ "$(now_ms)" -gt "$deadline" ]; do
    sleep 0.05
  done
  sleep 1
  for pid in $(pgrep -P "$LAUNCHER_PID"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'GLOO_LITE_RANK=2' && victim=$pid
  done
  inject=$(now_ms)
  [ -n "$victim" ] && kill "-$signal" "$victim"  # the launcher's child: the launcher reaps it
  wait_pids $((OUTER_S + 5)) "$LAUNCHER_PID"
  local ended=$(($(now_ms) - inject))
  summary=$(launcher_summary "$name")
  local met=1
  [ "$HUNG" -eq 0 ] && grep -Eq 'rank 2[ ,]' <<<"$summary" && [ "$ended" -le $((LATE_MS + 2000)) ] && met=0
  local measured="${ended} ms (launcher exit)"
  [ "$HUNG" -gt 0 ] && measured="**hung**, killed after $((OUTER_S + 5)) s"
  row "rank $([ "$signal" = STOP ] && echo stopped || echo killed) under gloo_lite_run" \
    "SIG$signal to rank 2 of \`gloo_lite_run -n 4 --grace 1\`, allreduce loop" "$measured" \
    "launcher: $(cell "${summary#gloo_lite_run: }")" \
    "the launcher's summary names rank 2, exit ≤ deadline + grace + 2 s" "$(met_if $met)"
  kill_started
}

# Rank 2's cable cut on the bridge of a network namespace topology (test/netns/). Each
# namespace is a host of its own (GLOO_LITE_HOST_ID): the collectives go over the network.
case_link_cut() {
  local why
  if ! why=$(netns_available); then
    row "link cut mid-transfer" "ip link set down on rank 2's veth" "not run" "skipped: $why" \
      "an error on every rank, ≤ deadline + 1 s" "not run"
    return
  fi
  local name=link_cut ranks=3 rank inject
  netns_setup "$ranks" || return
  netns_exec hub "$STORE_BIN" --host 0.0.0.0 --port 29500 >"$WORK/$name.store" 2>&1 &
  STARTED_PIDS+=("$!")
  sleep 0.3
  for ((rank = 0; rank < ranks; ++rank)); do
    ip netns exec "$(netns_name "$rank")" env -u GLOO_LITE_HOSTNAME -u GLOO_LITE_IFNAME \
      GLOO_LITE_RANK="$rank" GLOO_LITE_SIZE="$ranks" GLOO_LITE_PREFIX="$name" \
      GLOO_LITE_HOST_ID="$(netns_name "$rank")" \
      GLOO_LITE_STORE="tcp://$NETNS_HUB_ADDRESS:29500" GLOO_LITE_TIMEOUT_MS="$DEADLINE_MS" \
      "$FAULT_RANK" loop $((16 << 20)) 60 >"$WORK/$name.$rank" 2>&1 &
    PIDS[rank]=$!
    STARTED_PIDS+=("$!")
  done
  wait_ready "$name" "0 1 2" && sleep 1
  inject=$(now_ms)
  netns_cut 2
  wait_pids "$OUTER_S" "${PIDS[0]}" "${PIDS[1]}" "${PIDS[2]}"
  judge "$name" "0 1 2" "$inject"
  errors_within 3 "$LATE_MS"
  local met=$?
  row "link cut mid-transfer" "ip link set down on the bridge end of rank 2's veth (3 ranks in network namespaces, 16 MiB allreduce loop)" \
    "$(measured_text)" "$TEXT" "an error on every rank (all 3 are cut off from someone), ≤ deadline + 1 s (${LATE_MS} ms)" \
    "$(met_if $met)"
  kill_started
  netns_teardown
}

source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
commit=$(git -C "${source_dir:-$HERE}" rev-parse --short HEAD 2>/dev/null)
dirty=$(git -C "${source_dir:-$HERE}" status --porcelain --untracked-files=no 2>/dev/null | head -c1)
echo "Fault table, $(date -u '+%Y-%m-%d %H:%M UTC'), build of ${commit:-unknown}${dirty:+ (with local changes)}," \
  "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); deadline GLOO_LITE_TIMEOUT_MS=$DEADLINE_MS"
echo
row "Fault" "How it was injected" "Time until every rank ended" "What each rank reported (first line)" "Bound" "Met"
row "---" "---" "---" "---" "---" "---"
start_s=$SECONDS
wanted rank_kill && case_rank_signal KILL
wanted rank_stop && case_rank_signal STOP
wanted launcher_kill && case_launcher_blame KILL
wanted launcher_stop && case_launcher_blame STOP
wanted store_kill && case_store_fault KILL
wanted store_stop && case_store_fault STOP
wanted store_gone && case_store_kill_after_connect
wanted listener_garbage && case_listener_garbage
wanted store_garbage && case_store_garbage
wanted store_big_bodies && case_store_big_bodies
for kind in count dtype root; do
  for check in 0 1; do
    wanted "mismatch_${kind}_$check" && case_mismatch "$kind" "$check"
  done
done
wanted sendrecv_eager_long && case_sendrecv_size 4096 1024
wanted sendrecv_eager_short && case_sendrecv_size 1024 4096
wanted sendrecv_rendezvous_long && case_sendrecv_size $((1 << 20)) $((1 << 19))
wanted sendrecv_rendezvous_short && case_sendrecv_size $((1 << 19)) $((1 << 20))
wanted two_contexts && case_two_contexts
wanted restart_clean && case_restart_same_prefix clean
wanted restart_killed && case_restart_same_prefix killed
wanted api_huge_count && case_api_misuse huge-count 2
wanted api_throwing_reduction && case_api_misuse throwing-reduction 4
wanted api_same_tag_threads && case_api_misuse same-tag-threads 4
wanted knob_timeout_zero && case_bad_knob GLOO_LITE_TIMEOUT_MS=0 zero
wanted knob_timeout_negative && case_bad_knob GLOO_LITE_TIMEOUT_MS=-5 negative
wanted knob_timeout_huge && case_bad_knob GLOO_LITE_TIMEOUT_MS=10000000000000 huge
wanted knob_algo && case_bad_knob GLOO_LITE_ALGO=allreduce:rnig typo
wanted knob_eager && case_bad_knob GLOO_LITE_TCP_EAGER_BYTES=-1 negative
wanted link_cut && case_link_cut
echo
echo "($((SECONDS - start_s)) s)"
exit 0
