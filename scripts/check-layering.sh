#!/usr/bin/env bash
# Fails when a file includes a layer above its own (docs/architecture.md):
# support -> ir -> passes -> (runtime/plan) -> codegen -> compiler -> runtime -> tools,
# with the importers (frontend/) above ir and passes, below tools and free of
# codegen and the runtime,
# and inside the runtime: the training loop (runtime/train) and the process
# layer (runtime/dist) know neither MPI (runtime/mpi) nor CUDA (runtime/cuda);
# the driver chooses those. One file crosses the floors on purpose:
# ir/OpList.def, the op list, is a macro table with no code, from which both
# backends take each op's name and family.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
check() { # folder, forbidden include prefixes...
  local dir=$1; shift
  for prefix in "$@"; do
    hits=$(grep -rnE "#include \"$prefix/" "$dir" --include='*.h' --include='*.cpp' \
             --include='*.cu' --include='*.cuh' 2>/dev/null | grep -v '#include "ir/OpList.def"')
    if [ -n "$hits" ]; then
      echo "layering violation: $dir/ must not include \"$prefix/...\":"
      echo "$hits"
      status=1
    fi
  done
}
check support ir passes frontend codegen compiler runtime tools
check ir passes frontend codegen compiler runtime tools
check passes frontend codegen compiler runtime tools
check frontend codegen compiler runtime tools
check codegen passes frontend compiler tools
check compiler frontend runtime/cpu runtime/cuda runtime/dist runtime/io runtime/mpi runtime/train tools
check runtime ir passes frontend codegen compiler tools
check runtime/dist runtime/train runtime/mpi runtime/cuda
check runtime/train runtime/mpi runtime/cuda
if [ $status = 0 ]; then echo "layering: ok"; fi
exit $status
