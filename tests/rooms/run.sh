#!/usr/bin/env bash
# tests/rooms/run.sh SUITE_DIR [GOPC]: the rooms' dependencies run one way.
#
# Each folder of the library is a room (docs/architecture.md); a room may
# include the headers of the rooms below it and no others. This reads every
# `#include "room/..."` of every source file and fails, naming the file and
# the line, on one that reaches a room it may not: a circle between rooms,
# or the GPU runtime reaching up into the tuner, starts with such a line.
# `gop.h` (include/) is the public API: the tools and the models use it,
# nothing below the API may.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

# room: the rooms it may include (besides itself)
declare -A may=(
  [ir]=""
  [lang]="ir"
  [grad]="ir"
  [passes]="ir lang"
  [codegen]="ir passes"
  [graph]="ir"
  [interp]="ir graph"
  [runtime]="ir graph codegen"
  [tune]="ir lang passes codegen graph interp runtime"
  [api]="ir lang grad passes codegen graph interp runtime tune include"
  [models]="runtime include"
  [tools]="include"
)

bad=0
for room in "${!may[@]}"; do
  [ -d "$room" ] || { echo "rooms: no folder $room/ (update tests/rooms/run.sh)"; bad=1; continue; }
  while IFS= read -r hit; do
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
    inc=$(sed -E 's/^[[:space:]]*#include "([^"]*)".*/\1/' <<<"$text")
    case "$inc" in
      */*) target=${inc%%/*} ;;
      gop.h) target=include ;;
      *) continue ;; # a file of the same folder (cuda.def, parser.h, ...)
    esac
    [ "$target" = "$room" ] && continue
    [ "$target" = "tests" ] && continue
    if [[ " ${may[$room]} " != *" $target "* ]]; then
      echo "$file:$line: error: room $room/ includes $inc, but may use only: ${may[$room]:-nothing}"
      bad=1
    fi
  done < <(grep -rnE '^[[:space:]]*#include "' "$room" --include='*.c' --include='*.h' \
                --include='*.def' --include='*.y' --include='*.l' || true)
done
# The API's private header belongs to the API (and the models built on it).
if grep -rlE '#include "api/api.h"' --include='*.c' --include='*.h' . \
     | grep -vE '^\./(api|models)/' | grep -v '^\./build' ; then
  echo "error: the files above include api/api.h, which is private to api/"
  bad=1
fi
[ $bad -eq 0 ] && echo "rooms: every include runs one way"
exit $bad
