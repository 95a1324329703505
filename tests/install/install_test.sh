#!/usr/bin/env bash
# aisrv install test: `cmake --install` of the build tree into a throw-away root (DESTDIR), then what a user does with
# it: the files are where GNUInstallDirs puts them (versioned SONAMEs, headers, CMake package, pkg-config files, man
# pages, completion, units, MCU sources), and an install with --prefix DIR keeps every file in DIR; an application
# outside the tree builds with find_package(aisrv CONFIG) and with pkg-config (C with -std=c99 -Werror), and runs
# against the installed aisrvd (client library) and in-process (server library).
#   install_test.sh BUILD_DIR SOURCE_DIR "CXX_FLAGS" TESTDATA_DIR
set -euo pipefail
build="$1" src="$2" flags="$3" testdata="$4"
tmp="$(mktemp -d /tmp/aisrv-install-XXXXXX)"
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

root="$tmp/root"
DESTDIR="$root" cmake --install "$build" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
prefix="$root$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")"
libdir="$prefix/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")"
echo "installed into $prefix ($(find "$root" -type f | wc -l) files)"

# `cmake --install --prefix DIR` puts every file under DIR (the configuration file too); a DESTDIR catches what would
# escape, so that a failure writes nothing into the real /etc
guard="$tmp/guard" other="$tmp/other-prefix"
DESTDIR="$guard" cmake --install "$build" --prefix "$other" >"$tmp/install-prefix.log" ||
  { cat "$tmp/install-prefix.log"; fail "cmake --install --prefix"; }
outside=$(find "$guard" ! -type d | grep -v "^$guard$other/" || true)
[ -z "$outside" ] || fail "cmake --install --prefix $other wrote outside the prefix: ${outside//$guard/}"
[ -f "$guard$other/etc/aisrv/aisrvd.conf" ] || fail "cmake --install --prefix $other: no etc/aisrv/aisrvd.conf in it"

# --- what is where -------------------------------------------------------------------------------------------------
for f in sbin/aisrvd bin/aisrv include/aisrv/client/client.hpp include/aisrv/phy/aisrv_local.h \
         include/aisrv/protocol/commands.h include/aisrv/build_info.hpp share/aisrv/mcu/src/aisrv_mcu.c \
         share/aisrv/mcu/include/aisrv/mcu/aisrv_mcu.h share/man/man1/aisrv.1.gz share/man/man8/aisrvd.8.gz \
         share/bash-completion/completions/aisrv share/bash-completion/completions/aisrvd \
         lib/systemd/system/aisrvd.service lib/systemd/system/aisrvd.socket lib/udev/rules.d/70-aisrv.rules \
         lib/sysusers.d/aisrv.conf share/doc/libaisrv-dev/protocol.md lib/python3/dist-packages/aisrv/client.py; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done
for lib in aisrv-client aisrv-server; do
  [ -L "$libdir/lib$lib.so" ] || fail "missing the development link lib$lib.so"
  soname=$(readelf -d "$libdir/lib$lib.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$soname" = "lib$lib.so.0" ] || fail "lib$lib.so has SONAME '$soname', expected lib$lib.so.0"
done
[ -f "$libdir/cmake/aisrv/aisrvConfig.cmake" ] || fail "missing the CMake package"
for pc in aisrv aisrv-client aisrv-server; do [ -f "$libdir/pkgconfig/$pc.pc" ] || fail "missing $pc.pc"; done
conf=$(find "$root" -path '*/aisrv/aisrvd.conf' | head -1)
[ -n "$conf" ] || fail "missing aisrvd.conf"
grep -q "ExecStart=.*/aisrvd --config" "$prefix/lib/systemd/system/aisrvd.service" || fail "unit without ExecStart"
man -l "$prefix/share/man/man1/aisrv.1.gz" 2>/dev/null | grep -q "bench" || fail "aisrv(1) does not describe bench"
# bash completion, generated from the programs' parsers: subcommands, their options, the daemon's options
complete_words() {  # complete_words PROGRAM WORD... : what bash offers for the last word
  bash -c 'source /usr/share/bash-completion/bash_completion; source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
           COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; "_$1"; echo "${COMPREPLY[*]}"' \
    "$prefix/share/bash-completion/completions/$1" "$@"
}
[ "$(complete_words aisrv be)" = "bench" ] || fail "completion of 'aisrv be': '$(complete_words aisrv be)'"
[ "$(complete_words aisrv bench --cl)" = "--clients" ] || fail "completion of 'aisrv bench --cl'"
[ "$(complete_words aisrvd --con)" = "--config" ] || fail "completion of 'aisrvd --con'"

# --- an application outside the tree -------------------------------------------------------------------------------
consumer="$src/tests/install/consumer"
cmake -S "$consumer" -B "$tmp/cmake-app" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake-app.log" 2>&1 || { cat "$tmp/cmake-app.log"; fail "configure (CMake)"; }
cmake --build "$tmp/cmake-app" >>"$tmp/cmake-app.log" 2>&1 || { cat "$tmp/cmake-app.log"; fail "build (CMake)"; }
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
pkg-config --exists aisrv aisrv-client aisrv-server || fail "pkg-config does not find the packages"
# shellcheck disable=SC2046
c++ $flags "$consumer/remote_app.cpp" -o "$tmp/pc-remote-app" $(pkg-config --cflags --libs aisrv) || fail "build (pkg-config, C++)"
# shellcheck disable=SC2046
cc $flags -std=c99 -Werror "$consumer/pkgconfig_app.c" -o "$tmp/pc-c-app" $(pkg-config --cflags --libs aisrv-client) ||
  fail "build (pkg-config, C, -std=c99 -Werror: aisrv-client's Cflags are for C compilers too)"
case " $(pkg-config --cflags aisrv-client) " in *" -std="*) fail "aisrv-client.pc passes a language standard to C";; esac
case " $(pkg-config --cflags aisrv) " in *" -std=c++20 "*) ;; *) fail "aisrv.pc does not give C++ -std=c++20";; esac
echo "built: CMake (aisrv::client, aisrv::local) and pkg-config (aisrv, aisrv-client) consumers"

export LD_LIBRARY_PATH="$libdir"
"$tmp/pc-c-app" | grep -q "commands, GET_SERVER_STATS" || fail "the C program"
model="$testdata/tflite/tensorflow__tflite-micro/person_detect.tflite"
input="$testdata/reference_io/tflite-micro/person_int8_96x96.bin"
expected="$testdata/expected/person_detect__person_int8_96x96.out0.bin"
if [ ! -f "$model" ]; then
  [ "${AISRV_REQUIRE_TESTDATA:-}" = 1 ] && fail "test data missing at $testdata"
  echo "test data absent: the built applications were not run"; exit 0
fi
mkdir -m 700 "$tmp/run"
"$prefix/sbin/aisrvd" --listen "unix:$tmp/run/s.sock" --engine 0=cpu --log-level warn &
daemon_pid=$!
for _ in $(seq 200); do [ -S "$tmp/run/s.sock" ] && break; sleep 0.05; done
want_top=$(od -An -v -tx1 "$expected" | tr -d ' \n')
for app in "$tmp/cmake-app/remote_app" "$tmp/pc-remote-app"; do
  out=$("$app" "unix:$tmp/run/s.sock" "$model" "$input") || fail "$app"
  echo "$(basename "$app"): $out"
  [[ "$out" == *"top 1" ]] || fail "$app: expected top 1 (person), got '$out' (expected output $want_top)"
done
out=$("$tmp/cmake-app/embedded_app" "$model" "$input") || fail "embedded_app"
[ "$out" = "$want_top" ] || fail "embedded_app printed $out, TFLite Micro's output is $want_top"
echo "embedded_app: $out (TFLite Micro's expected output)"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the installed aisrvd exited with $?"
daemon_pid=""
echo "install test passed"
