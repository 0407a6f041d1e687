# Sourced by the gloo_lite_bench smoke tests: set run, bench and work first.
#   fail MESSAGE          prints MESSAGE and the last output ($out), exits 1
#   bench NAME P ARGS...  runs gloo_lite_bench on P ranks, output in $work/NAME.out ($out);
#                         fails on a non-zero exit

fail() {
  echo "FAIL: $*" >&2
  [ -n "${out:-}" ] && [ -f "$out" ] && sed 's/^/  | /' "$out" >&2
  exit 1
}

bench() {
  name=$1
  ranks=$2
  shift 2
  out=$work/$name.out
  echo "== gloo_lite_run -n $ranks -- gloo_lite_bench $*"
  if ! "$run" -n "$ranks" --timeout 240 -- "$bench" "$@" >"$out" 2>&1; then
    fail "$name: exit status $?"
  fi
}
