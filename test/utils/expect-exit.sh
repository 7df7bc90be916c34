#!/usr/bin/env bash
# expect-exit.sh CODE COMMAND...: runs COMMAND and succeeds only when it
# exits with exactly CODE (lit's `not` accepts any non-zero status; the exit
# status is part of mpc's interface: 1 user error, 2 internal error).
code=$1
shift
"$@"
rc=$?
if [ "$rc" -ne "$code" ]; then
  echo "expect-exit: expected exit status $code, got $rc: $*" >&2
  exit 1
fi
exit 0
