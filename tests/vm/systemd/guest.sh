# aisrv VM test vm_systemd (guest script, run by systemd as PID 1 — tests/vm/systemd/stage-init set the guest up):
# the packaged units under a real systemd. aisrvd.socket is listening from boot; alice (a member of aisrv-users, not
# root) runs `aisrv version`, which starts aisrvd.service by socket activation; /run/aisrv stays root's and 0755 and the
# socket 0660 aisrv:aisrv-users while the service runs; `systemctl restart aisrvd` and `systemctl stop aisrvd` leave
# the socket in place and alice connects again (activation starts the daemon again after the stop); bob (not a
# member) is refused; the daemon runs as user aisrv; stopping the socket unit removes the socket.
# Prints PASS/FAIL lines; exit code = result.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
up() { cut -d' ' -f1 /proc/uptime; }
pass() { echo "PASS: $* [$(up) s]"; }
fail() { echo "FAIL: $* [$(up) s]"; rc=1; }
check() { if "$@"; then pass "$*"; else fail "$*"; fi; }
state() { systemctl show -p ActiveState --value "$1"; }
wait_state() {  # wait_state UNIT STATE: up to 60 s (an ASan daemon under TCG starts in a few seconds)
  end=$(($(cut -d. -f1 /proc/uptime) + 60))
  while [ "$(state "$1")" != "$2" ] && [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do sleep 0.2; done
  [ "$(state "$1")" = "$2" ]
}
as_user() {  # as_user NAME COMMAND...: the login user's uid, gid and supplementary groups, no XDG_RUNTIME_DIR
  u=$1; shift  # util-linux's setpriv by its path: busybox sh prefers its own applet, which cannot change users
  env -u XDG_RUNTIME_DIR HOME=/tmp /vmtest/bin/setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"
}
SOCK=/run/aisrv/aisrv.sock
# alice's `aisrv version`: no --connect — she has no daemon of her own, so the CLI falls back to the system socket.
alice_version() {  # alice_version WHAT
  # --timeout: socket activation answers once the daemon is up; an ASan build of it (hundreds of MB) takes tens of
  # seconds to start under TCG on a loaded machine, more than the CLI's default 10 s.
  if as_user alice aisrv --timeout 90000 version > /tmp/alice.out 2>&1 && grep -q "protocol" /tmp/alice.out; then
    pass "alice (aisrv-users) runs 'aisrv version' $1: $(tr '\n' ' ' < /tmp/alice.out | cut -c1-100)"
  else
    fail "alice (aisrv-users) runs 'aisrv version' $1: $(cat /tmp/alice.out)"
  fi
}
layout() {  # layout WHAT: the directory and the socket as aisrvd.socket made them
  d=$(stat -c '%a %U:%G' /run/aisrv 2>&1)
  s=$(stat -c '%a %U:%G %F' "$SOCK" 2>&1)
  if [ "$d" = "755 root:root" ]; then pass "/run/aisrv is 755 root:root $1"; else fail "/run/aisrv is '$d' $1 (want 755 root:root)"; fi
  if [ "$s" = "660 aisrv:aisrv-users socket" ]; then pass "$SOCK is 660 aisrv:aisrv-users $1"
  else fail "$SOCK is '$s' $1 (want a socket, 660 aisrv:aisrv-users)"; fi
}

echo "systemd $(systemctl --version | head -1); alice: $(id alice); bob: $(id bob)"
check wait_state aisrvd.socket active
check test "$(state aisrvd.service)" = inactive
layout "at boot, before the service started"

alice_version "at first (socket activation)"
check wait_state aisrvd.service active
pid=$(systemctl show -p MainPID --value aisrvd.service)
uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status" 2>/dev/null)
check test "$uid" = "$(id -u aisrv)"
layout "while the service runs"
alice_version "while the service runs"
if as_user bob aisrv --connect "unix:$SOCK" version > /tmp/bob.out 2>&1; then fail "bob (no aisrv-users) connected"
elif grep -qi "permission denied" /tmp/bob.out; then pass "bob (not in aisrv-users) is refused: $(head -1 /tmp/bob.out)"
else fail "bob (not in aisrv-users): not a permission refusal: $(cat /tmp/bob.out)"; fi

check systemctl restart aisrvd.service
check wait_state aisrvd.service active
layout "after 'systemctl restart aisrvd'"
alice_version "after 'systemctl restart aisrvd'"

check systemctl stop aisrvd.service
check test "$(state aisrvd.service)" = inactive
check test "$(state aisrvd.socket)" = active
layout "after 'systemctl stop aisrvd'"
alice_version "after 'systemctl stop aisrvd' (activation starts it again)"
check wait_state aisrvd.service active

check systemctl stop aisrvd.socket aisrvd.service
check test "$(systemctl show -p Result --value aisrvd.service)" = success
check test ! -e "$SOCK"
if [ $rc -ne 0 ]; then
  echo "--- systemctl status"; systemctl --no-pager status aisrvd.socket aisrvd.service 2>&1 | tail -n 40
  # No journald in the guest: what the daemon says when started by hand as its user, outside systemd.
  echo "--- aisrvd run by hand as user aisrv (3 s)"
  as_user aisrv timeout 3 /usr/sbin/aisrvd --config /etc/aisrv/aisrvd.conf --listen unix:/tmp/by-hand.sock 2>&1 | tail -n 20
fi
exit $rc
