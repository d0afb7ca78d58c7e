#!/bin/sh
# Every tsc invocation of the workspace's build and test scripts, in dependency order, with the
# compiler given (default: the workspace's, TypeScript 7): the build and type-check time of the
# whole repository, without nx, vitest or a cache.
#   tools/runtime/tsc-all.sh [path/to/tsc]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tsc=${1:-$root/node_modules/.bin/tsc}
cd "$root"
for d in packages/core packages/sql packages/conformance packages/kubernetes packages/sqlite packages/etcd packages/mysql \
  packages/postgres packages/zookeeper packages/migrate packages/pod-runner packages/metrics tools packages/cli e2e release; do
  for args in $(node -e 'const p = require("./'"$d"'/package.json"); for (const s of [p.scripts.build, p.scripts.test]) for (const m of (s || "").matchAll(/tsc (-p \S+(?: --noEmit)?)/g)) console.log(m[1].replace(/ /g, "@"))'); do
    (cd "$d" && "$tsc" $(echo "$args" | tr @ ' '))
  done
done
