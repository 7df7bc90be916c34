#!/usr/bin/env bash
# read-only.sh DIR CMD...: runs CMD with DIR a folder no one may write in,
# then makes it writable again, whatever CMD did; exits with CMD's status.
# Permission bits do not bind root (CI runs as root), so as root the folder
# is made immutable (chattr +i) instead, which binds root too.
set -uo pipefail
dir=$1
shift
if [ "$(id -u)" = 0 ]; then
  chattr +i "$dir" || exit 2
  trap 'chattr -i "$dir"' EXIT
else
  chmod a-w "$dir" || exit 2
  trap 'chmod u+w "$dir"' EXIT
fi
"$@"
