#!/bin/sh
# What libgloo_lite.so exports (cmake/gloo_lite.map): its SONAME, every C entry point of
# gloo_lite/gloo_lite.h, the public C++ API, and none of the implementation namespaces.
#   exports_test.sh path/to/libgloo_lite.so
set -eu
lib=$1
here=$(cd "$(dirname "$0")" && pwd)
header=$here/../../gloo_lite/gloo_lite.h
fail() { echo "exports_test: $*" >&2; exit 1; }

readelf -d "$lib" | grep -q 'Library soname: \[libgloo_lite.so.0\]' || fail "SONAME is not libgloo_lite.so.0"
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//')
demangled=$(nm -D --defined-only -C "$lib" | cut -d' ' -f3- | sed 's/@@.*//')

# Every function the header declares is exported (names: "gloo_lite_x(" at a declaration).
declared=$(grep -o 'gloo_lite_[a-z_]*(' "$header" | tr -d '(' | sort -u)
count=0
for name in $declared; do
  printf '%s\n' "$symbols" | grep -qx "$name" || fail "$name is declared but not exported"
  count=$((count + 1))
done
[ "$count" -ge 50 ] || fail "only $count C functions found in $header"
# No other C symbol: every unmangled export is gloo_lite_*.
other=$(printf '%s\n' "$symbols" | grep -v '^_Z' | grep -v '^gloo_lite_' | grep -v '^GLOO_LITE_0$' || true)
[ -z "$other" ] || fail "unexpected C symbols exported: $other"
# The public C++ API is there...
for name in 'gloo_lite::allreduce(' 'gloo_lite::iallreduce(' 'gloo_lite::Context::create(' \
            'gloo_lite::Work::wait(' 'gloo_lite::init_from_env(' 'gloo_lite::open_store(' \
            'gloo_lite::tcp::create_device(' 'typeinfo for gloo_lite::TimeoutError'; do
  printf '%s\n' "$demangled" | grep -qF "$name" || fail "$name is not exported"
done
# ...and the implementation is not.
for space in 'gloo_lite::algo::' 'gloo_lite::detail::' 'gloo_lite::tcp_store::' \
             'gloo_lite::store_detail::' 'gloo_lite::tcp::TcpMesh'; do
  if printf '%s\n' "$demangled" | grep -E "^(typeinfo for |vtable for )?$space" | grep -q .; then
    fail "symbols of $space are exported: $(printf '%s\n' "$demangled" | grep -F "$space" | head -3)"
  fi
done
# The internals exist in the library (the check above would pass on an empty one).
nm -C "$lib" | grep -q 'gloo_lite::algo::' || fail "no gloo_lite::algo:: symbols at all in $lib"
echo "exports_test: $count C functions, $(printf '%s\n' "$symbols" | wc -l) symbols exported; internals hidden"
