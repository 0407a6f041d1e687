# shellcheck shell=bash
# Helpers of run_faults.sh: start a store and ranks, inject, wait with an outer bound, and turn
# what the ranks printed into a row of the table. Sourced; expects FAULT_RANK, STORE_BIN,
# LAUNCHER, WORK and DEADLINE_MS to be set.

now_ms() { date +%s%3N; }

# Every process started here, so that cleanup ends exactly these and nothing else.
STARTED_PIDS=()
kill_started() {
  local pid
  for pid in "${STARTED_PIDS[@]}"; do
    kill -CONT "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    # Reaped here, quietly: bash would otherwise report each "Killed" job on stderr.
    wait "$pid" 2>/dev/null
  done
  STARTED_PIDS=()
}

# start_store NAME: a gloo_lite_store on a free loopback port for a new job; sets STORE_PID and
# STORE_URL.
start_store() {
  PIDS=()  # a new job
  "$STORE_BIN" --host 127.0.0.1 --port 0 >"$WORK/$1.store" 2>&1 &
  STORE_PID=$!
  STARTED_PIDS+=("$STORE_PID")
  STORE_URL=""
  local _
  for _ in $(seq 100); do
    STORE_URL=$(grep -so 'tcp://[^ ]*' "$WORK/$1.store" | head -n 1)
    [ -n "$STORE_URL" ] && return 0
    sleep 0.05
  done
  echo "start_store: no URL from gloo_lite_store" >&2
  return 1
}

# start_ranks NAME "RANKS" SIZE ARGS...: fault_rank ARGS as each rank listed in RANKS (a job
# may start only some of them) against STORE_URL, prefix NAME, deadline DEADLINE_MS, plus the
# assignments in EXTRA_ENV. PIDS[rank] is the rank's own pid (env execs it).
start_ranks() {
  local name=$1 ranks=$2 size=$3 rank
  shift 3
  for rank in $ranks; do
    env GLOO_LITE_RANK="$rank" GLOO_LITE_SIZE="$size" GLOO_LITE_STORE="$STORE_URL" \
      GLOO_LITE_PREFIX="$name" GLOO_LITE_HOSTNAME=127.0.0.1 GLOO_LITE_TIMEOUT_MS="$DEADLINE_MS" \
      "${EXTRA_ENV[@]}" "$FAULT_RANK" "$@" >"$WORK/$name.$rank" 2>&1 &
    PIDS[rank]=$!
    STARTED_PIDS+=("$!")
  done
}

# wait_ready NAME "RANKS": until each listed rank printed its ready line (10 s at most).
wait_ready() {
  local name=$1 rank deadline=$(($(now_ms) + 10000))
  for rank in $2; do
    until grep -q ' ready ' "$WORK/$name.$rank" 2>/dev/null; do
      [ "$(now_ms)" -gt "$deadline" ] && return 1
      sleep 0.05
    done
  done
}

# wait_pids SECONDS PID...: waits for them all, then SIGKILLs whatever still runs; sets
# HUNG to the number killed and STATUS_OF[pid] to each exit status.
declare -A STATUS_OF
wait_pids() {
  local limit=$(($(now_ms) + $1 * 1000)) pid alive
  shift
  HUNG=0
  while :; do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    if [ "$(now_ms)" -gt "$limit" ]; then
      for pid in "$@"; do
        if kill -0 "$pid" 2>/dev/null; then
          HUNG=$((HUNG + 1))
          kill -CONT "$pid" 2>/dev/null
          kill -KILL "$pid" 2>/dev/null
        fi
      done
      break
    fi
    sleep 0.05
  done
  for pid in "$@"; do
    wait "$pid" 2>/dev/null
    STATUS_OF[$pid]=$?
  done
}

# final_field FILE KEY: KEY=... of the rank's final line ("what" runs to the end of the line).
final_field() {
  local line
  line=$(grep ' result=' "$1" 2>/dev/null | tail -n 1)
  if [ "$2" = what ]; then
    sed -n 's/.* what=//p' <<<"$line"
  else
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$line"
  fi
}

# A table cell: pipes escaped, at most 180 characters.
cell() {
  local text=${1//|/\\|}
  [ "${#text}" -gt 180 ] && text="${text:0:177}..."
  printf '%s' "$text"
}

# judge NAME "RANKS" INJECT_MS: reads the listed ranks' final lines. Sets
#   SLOWEST_MS  the latest final line, in ms after INJECT_MS (empty when none printed one)
#   ERRORED     how many listed ranks ended in an error; OKS how many ended ok; WRONGS wrong
#   TEXT        "rN (T ms): Type: first line" per distinct outcome, ranks sharing it grouped, T
#               (or a range) the time of their final lines after INJECT_MS
judge() {
  local name=$1 inject=$3 rank result t type what key
  SLOWEST_MS=""
  ERRORED=0
  OKS=0
  WRONGS=0
  local -A ranks_of=() first_of=() last_of=()
  local order=()
  for rank in $2; do
    local file="$WORK/$name.$rank"
    result=$(final_field "$file" result)
    t=$(final_field "$file" t_ms)
    case "$result" in
      error) ERRORED=$((ERRORED + 1)) ;;
      ok) OKS=$((OKS + 1)) ;;
      wrong) WRONGS=$((WRONGS + 1)) ;;
    esac
    if [ -n "$t" ] && { [ -z "$SLOWEST_MS" ] || [ $((t - inject)) -gt "$SLOWEST_MS" ]; }; then
      SLOWEST_MS=$((t - inject))
    fi
    type=$(final_field "$file" type)
    what=$(final_field "$file" what)
    if [ -z "$result" ]; then
      key="ended without a final line"
      local status=${PIDS[rank]:+${STATUS_OF[${PIDS[rank]}]:-}}
      if [ -n "$status" ] && [ "$status" -gt 128 ]; then
        key="$key, killed by SIG$(kill -l $((status - 128)))"
      elif [ -n "$status" ]; then
        key="$key, exit status $status"
      fi
      local said
      said=$(grep -v '^fault_rank' "$file" 2>/dev/null | head -n 1)
      [ -n "$said" ] && key="$key; it said: $said"
    elif [ "$result" = error ]; then
      # The rank's own number is the same in every message; group them by what they say
      # with it blanked out.
      key="$type: ${what//rank $rank /rank R }"
    else
      if [ "$result" = ok ]; then
        key="no error; its output is what its own arguments promise"
      else
        key="no error; its output is **wrong**"
      fi
    fi
    [ -z "${ranks_of[$key]+x}" ] && order+=("$key")
    ranks_of[$key]="${ranks_of[$key]:+${ranks_of[$key]},}r$rank"
    if [ -n "$t" ]; then
      t=$((t - inject))
      if [ -z "${first_of[$key]:-}" ] || [ "$t" -lt "${first_of[$key]}" ]; then first_of[$key]=$t; fi
      if [ -z "${last_of[$key]:-}" ] || [ "$t" -gt "${last_of[$key]}" ]; then last_of[$key]=$t; fi
    fi
  done
  TEXT=""
  local when
  for key in "${order[@]}"; do
    when=""
    if [ -n "${first_of[$key]:-}" ]; then
      when=" (${first_of[$key]} ms)"
      [ "${first_of[$key]}" != "${last_of[$key]}" ] && when=" (${first_of[$key]}-${last_of[$key]} ms)"
    fi
    TEXT="${TEXT:+$TEXT<br>}${ranks_of[$key]}$when: $(cell "$key")"
  done
}

# row FAULT INJECTION TIME TEXT BOUND MET: one line of the markdown table.
row() {
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$6" | tee -a "$WORK/table"
}

# met_if CONDITION-STATUS: "yes" or "**no**", for the last column.
met_if() { if [ "$1" -eq 0 ]; then echo yes; else echo "**no**"; fi; }

# listener_port PID: the TCP port a rank process listens on.
listener_port() {
  ss -Hltnp 2>/dev/null | grep "pid=$1," | awk '{print $4}' | sed 's/.*://' | head -n 1
}

# send_garbage PORT: a stranger connects to 127.0.0.1:PORT and writes 64 KiB of random bytes.
send_garbage() {
  timeout 5 bash -c "head -c 65536 /dev/urandom >/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# hold_silent PORT SECONDS: a stranger connects to 127.0.0.1:PORT and sends nothing.
hold_silent() {
  # Called in the background: exec, so that the pid is the one holding the connection.
  exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null && exec sleep "$2"
}

# kill_quietly SIGNAL PID: a process of ours; after SIGKILL it is reaped at once, so that bash
# reports no "Killed" job later in the middle of the table.
kill_quietly() {
  kill "-$1" "$2" 2>/dev/null
  [ "$1" = KILL ] && wait "$2" 2>/dev/null
  return 0
}

# hold_big_body PORT MIB SECONDS: a stranger speaking the TCP store's framing
# (rendezvous/tcp_store_protocol.h: magic "GLST", version 1, op set, no timeout, little-endian)
# announces the largest request body allowed, 64 MiB + 64 KiB, sends MIB MiB of it and stalls.
hold_big_body() {
  exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || return
  printf 'GLST\x01\x00\x01\x00\xff\xff\xff\xff\x00\x00\x01\x04' >&3
  head -c "$(($2 << 20))" /dev/zero >&3
  exec sleep "$3"  # in the background: the pid holds the connection
}

# rss_mib PID: the resident memory of a process of ours, in MiB.
rss_mib() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$1/status" 2>/dev/null; }
