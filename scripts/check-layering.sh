#!/usr/bin/env bash
# Fails when a file includes a layer above its own (docs/architecture.md):
# support -> ir -> passes -> (runtime/plan) -> codegen -> runtime -> tools.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
check() { # folder, forbidden include prefixes...
  local dir=$1; shift
  for prefix in "$@"; do
    hits=$(grep -rnE "#include \"$prefix/" "$dir" --include='*.h' --include='*.cpp' \
             --include='*.cu' --include='*.cuh' 2>/dev/null)
    if [ -n "$hits" ]; then
      echo "layering violation: $dir/ must not include \"$prefix/...\":"
      echo "$hits"
      status=1
    fi
  done
}
check support ir passes codegen runtime tools
check ir passes codegen runtime tools
check passes codegen runtime tools
check codegen passes tools
check runtime ir passes codegen tools
if [ $status = 0 ]; then echo "layering: ok"; fi
exit $status
