# Sanitizer and fuzzing builds (scripts/sanitize.sh, scripts/fuzz.sh; each in its own build
# directory, since instrumented objects must not mix with a normal build's).
#
# GLOO_LITE_SANITIZE=address,undefined | thread: compiles and links everything (libraries,
#   tools, tests) with those sanitizers, so that ranks the tests fork or exec are instrumented
#   too. Undefined behaviour halts the program (-fno-sanitize-recover) instead of printing and
#   going on, so a ctest run fails on it.
# GLOO_LITE_FUZZ=ON: builds the libFuzzer targets in fuzz/ (clang only) with address and
#   undefined; the libraries get coverage instrumentation (fuzzer-no-link) so the fuzzer sees
#   the decoders' branches.
set(GLOO_LITE_SANITIZE "" CACHE STRING
    "Sanitizers to build with: address,undefined | thread (empty: none)")
option(GLOO_LITE_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang)" OFF)

set(GLOO_LITE_SANITIZE_FLAGS "")
if(GLOO_LITE_SANITIZE)
  string(REPLACE "," ";" _gloo_lite_sanitizers "${GLOO_LITE_SANITIZE}")
  foreach(_sanitizer IN LISTS _gloo_lite_sanitizers)
    if(NOT _sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "GLOO_LITE_SANITIZE=${GLOO_LITE_SANITIZE}: unknown sanitizer "
                          "'${_sanitizer}'; use address,undefined or thread")
    endif()
  endforeach()
  if("thread" IN_LIST _gloo_lite_sanitizers AND "address" IN_LIST _gloo_lite_sanitizers)
    message(FATAL_ERROR "GLOO_LITE_SANITIZE=${GLOO_LITE_SANITIZE}: ThreadSanitizer and "
                        "AddressSanitizer cannot be combined; build them in separate directories")
  endif()
  list(APPEND GLOO_LITE_SANITIZE_FLAGS -fsanitize=${GLOO_LITE_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _gloo_lite_sanitizers)
    list(APPEND GLOO_LITE_SANITIZE_FLAGS -fno-sanitize-recover=all)
  endif()
  # GCC's flow analysis sees the sanitizers' extra branches and reports false "may be used
  # uninitialized" in libstdc++ itself (<regex>, std::function); GCC's manual warns that
  # sanitizers cause such false positives. Normal builds keep the warning as an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

if(GLOO_LITE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GLOO_LITE_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  if(GLOO_LITE_SANITIZE)
    message(FATAL_ERROR "GLOO_LITE_FUZZ brings its own sanitizers (address,undefined); "
                        "leave GLOO_LITE_SANITIZE empty")
  endif()
  list(APPEND GLOO_LITE_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
       -fno-omit-frame-pointer)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(GLOO_LITE_SANITIZE_FLAGS)
  add_compile_options(${GLOO_LITE_SANITIZE_FLAGS})
  add_link_options(${GLOO_LITE_SANITIZE_FLAGS})
endif()
