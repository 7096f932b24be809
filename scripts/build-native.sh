#!/bin/sh
# Builds the engine's native row loop (src/engine/native/rowloop.c) into
# build/native/librowloop.so; `npm ci` and `npm install` run it (postinstall).
# Without a C compiler the engine reads every file with its JavaScript row
# loop, as with FPS_ENGINE_NATIVE=0 (docs/decisions/native-row-loop.md).
set -e
cd "$(dirname "$0")/.."
CC="${CC:-cc}"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "build-native: no C compiler ($CC): the engine will use its JavaScript row loop" >&2
  exit 0
fi
mkdir -p build/native
"$CC" -O2 -std=c11 -Wall -Wextra -Werror -fPIC -shared -o build/native/librowloop.so.tmp src/engine/native/rowloop.c
mv build/native/librowloop.so.tmp build/native/librowloop.so
