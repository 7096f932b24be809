#!/bin/sh
# Run by `npm test` before the suite. The suite talks to real peers that no
# npm package provides; this makes them available or stops at once with one
# line naming the command that would.
#
# On Debian as root it installs what is missing itself (quietly, through
# apt-get); elsewhere it prints that one line and exits non-zero.
#
# One need a line: "<check> <Debian package> <what it is for>", where the
# check is `cmd:NAME` (a program on PATH), `file:PATH` (a file that must
# exist) or `exe:PATH` (an executable at that path). Add a line for a new peer.
NEEDS='
exe:/usr/sbin/sshd      openssh-server    a throwaway OpenSSH server standing in for a customer (customer-SFTP tests)
cmd:sftp                openssh-client    the real sftp client against the hosted SFTP server
cmd:ssh-keygen          openssh-client    client and host keys for the SFTP tests
cmd:ssh-keyscan         openssh-client    reads the host key the hosted server presents
cmd:cc                  gcc               builds the native row loop and its AddressSanitizer fuzzer
file:/usr/include/stdint.h libc6-dev      C headers for that build
cmd:fincore             util-linux-extra  page-cache checks of the local object store
cmd:flock               util-linux        serialises the creation of the SFTP test user across test files
cmd:useradd             passwd            creates that user (fpstest) and sets its password
cmd:gpg                 gnupg             encrypts and signs the PGP test files as a partner would
exe:/usr/bin/chromium   chromium          the dashboard end-to-end tests: playwright-core drives Debian Chromium, no browser download
'

missing=""
log=""
check() {
  case "$1" in
    cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
    file:*) [ -f "${1#file:}" ] ;;
    exe:*) [ -x "${1#exe:}" ] ;;
    *) return 1 ;;
  esac
}
scan() {
  missing=""
  while read -r what pkg _; do
    [ -n "$what" ] || continue
    check "$what" && continue
    case " $missing " in *" $pkg "*) ;; *) missing="${missing:+$missing }$pkg" ;; esac
  done <<EOF
$NEEDS
EOF
}

root=false
[ "$(id -u)" = 0 ] && root=true
scan
if [ -n "$missing" ]; then
  cmd="apt-get install -y --no-install-recommends $missing"
  if $root && command -v apt-get >/dev/null 2>&1; then
    log="${TMPDIR:-/tmp}/fps-test-prereqs.log"
    echo "npm test: installing $missing (the suite's real peers; log: $log)" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A fresh image often has no package lists yet: update once and retry.
    # shellcheck disable=SC2086
    { apt-get install -y -q --no-install-recommends $missing || { apt-get update -q && apt-get install -y -q --no-install-recommends $missing; }; } >"$log" 2>&1
    scan
  fi
fi
if [ -n "$missing" ]; then
  if $root; then
    echo "npm test needs Debian packages that are missing; install them with: apt-get install -y --no-install-recommends $missing${log:+ (the attempt's output: $log)}" >&2
  else
    echo "npm test needs Debian packages that are missing; install them with: sudo apt-get install -y --no-install-recommends $missing" >&2
  fi
  exit 1
fi
if ! $root; then
  # sshd checks real passwords from /etc/shadow for a real system user, and
  # real permissions need a user other than root: the SFTP tests need root.
  echo "npm test must run as root: the SFTP tests start sshd and log in as a system user it creates (fpstest); run: sudo npm test" >&2
  exit 1
fi
# sshd refuses to start without its privilege-separation folder.
mkdir -p /run/sshd && chmod 0755 /run/sshd
# `npm install` builds the native row loop only when a C compiler was there;
# one installed just now builds it here, as the suite compares it with the
# JavaScript row loop. A library older than its source is rebuilt too.
lib=build/native/librowloop.so
src=src/engine/native/rowloop.c
cd "$(dirname "$0")/.." || exit 1
if [ ! -f "$lib" ] || [ "$src" -nt "$lib" ]; then
  sh scripts/build-native.sh || exit 1
fi
