#!/bin/sh
# Builds packages/client (the typed REST client and the `fps` command) into
# packages/client/dist with the package's own TypeScript; `npm install` runs
# it (postinstall), so `npx fps` works right after.
set -e
cd "$(dirname "$0")/../packages/client"
node_modules/.bin/tsc -p tsconfig.json
cp src/schema.d.ts dist/schema.d.ts
chmod +x dist/cli.js bin/fps.js
