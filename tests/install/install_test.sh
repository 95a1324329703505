#!/usr/bin/env bash
# aisrv install test: `cmake --install` of the build tree into a throw-away root (DESTDIR), then what a user does with
# it: the files are where GNUInstallDirs puts them (versioned SONAMEs, headers, CMake package, pkg-config files, man
# pages, completion, units, MCU sources), and an install with --prefix DIR keeps every file in DIR; an application
# outside the tree builds with find_package(aisrv CONFIG) and with pkg-config (C with -std=c99 -Werror), and runs
# against the installed aisrvd (client library) and in-process (server library); a daemon installed with --prefix
# starts from its installed configuration file on a machine without the aisrv-admins group.
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

# An install without the Debian package has no aisrv-admins group (only the package's sysusers file creates it): the
# daemon installed with --prefix DIR starts from DIR with the configuration file installed there, warns that the group
# is missing and what that means, and answers the installed tool.
plain="$tmp/plain-prefix"
cmake --install "$build" --prefix "$plain" >"$tmp/install-plain.log" || { cat "$tmp/install-plain.log"; fail "cmake --install --prefix $plain"; }
grep -q '^admin-group = "aisrv-admins"' "$plain/etc/aisrv/aisrvd.conf" || fail "the installed aisrvd.conf names no admin-group"
mkdir -m 700 "$tmp/plain-run"
"$plain/sbin/aisrvd" --config "$plain/etc/aisrv/aisrvd.conf" --engine 0=cpu --listen "unix:$tmp/plain-run/s.sock" \
  >"$tmp/plain-daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do [ -S "$tmp/plain-run/s.sock" ] && break; kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.05; done
[ -S "$tmp/plain-run/s.sock" ] || { cat "$tmp/plain-daemon.log"; fail "$plain/sbin/aisrvd with its installed aisrvd.conf did not start"; }
out=$("$plain/bin/aisrv" --connect "unix:$tmp/plain-run/s.sock" version) || fail "the installed aisrv against the installed aisrvd"
[[ "$out" == *"server: aisrvd"* ]] || fail "aisrv version printed '$out'"
if getent group aisrv-admins >/dev/null; then
  echo "the group aisrv-admins exists on this machine: the missing-group warning is not checked"
else
  grep -q "group 'aisrv-admins' does not exist: only root and aisrvd's own user" "$tmp/plain-daemon.log" ||
    { cat "$tmp/plain-daemon.log"; fail "no warning naming the missing group aisrv-admins"; }
fi
kill -TERM "$daemon_pid"
wait "$daemon_pid" || { cat "$tmp/plain-daemon.log"; fail "the aisrvd installed with --prefix exited with $?"; }
daemon_pid=""
echo "installed with --prefix $plain: aisrvd started from its own aisrvd.conf without the aisrv-admins group"

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
# Man pages written for man: a NAME line saying what the program is, nothing about how the page was made, every
# SEE ALSO page either installed here or present on this system, and the documents they name installed.
for page in man1/aisrv.1.gz:aisrv man8/aisrvd.8.gz:aisrvd; do
  file="$prefix/share/man/${page%%:*}" program=${page#*:}
  text=$(LC_ALL=C.UTF-8 MANWIDTH=1000 man -l "$file" 2>/dev/null)  # wide: no line breaks inside paths
  name=$(sed -n '/^NAME/{n;p;q}' <<< "$text" | sed 's/^ *//')
  case "$name" in
    "aisrv - command-line client of the aisrv AI inference server"|"aisrvd - AI inference server: "*) ;;
    *) fail "$program's NAME line does not say what it is: '$name'" ;;
  esac
  ! grep -qiE "made from|this page is made" <<< "$text" || fail "$program's page talks about how it was made"
  see_also=$(sed -n '/^SEE ALSO/,/^[A-Z]/p' <<< "$text")
  for ref in $(grep -oE '[a-z][a-z0-9_.-]*\([1-8]\)' <<< "$see_also" | sort -u); do
    n=${ref%(*} sec=${ref#*(}; sec=${sec%)}
    [ -e "$prefix/share/man/man$sec/$n.$sec.gz" ] || man -w "$sec" "$n" >/dev/null 2>&1 ||
      fail "$program's SEE ALSO names $ref, which neither this install nor this system has"
  done
  for doc in $(grep -oE '/usr/share/doc/[A-Za-z0-9_./-]*[A-Za-z0-9_]' <<< "$text" | sort -u); do
    [ -e "$root$doc" ] || fail "$program's page names $doc, which the install does not have"
  done
done
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
