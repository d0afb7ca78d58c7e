#!/bin/sh
# Every tsc invocation of the workspace's build and test scripts, in dependency order, with the
# compiler given (default: the workspace's, TypeScript 7): the build and type-check time of the
# whole repository, without nx, vitest or a cache.
#   tools/runtime/tsc-all.sh [path/to/tsc]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tsc=${1:-$root/node_modules/.bin/tsc}
cd "$root"
# Every build first (each needs only the builds before it), then every type-check of tests,
# which may import a package built later in the list (a backend's tests import @rollcall/tools).
dirs="packages/core packages/child-harness packages/kube-client packages/pod-runner-activity packages/sql packages/conformance packages/kubernetes packages/sqlite packages/etcd packages/mysql \
  packages/postgres packages/zookeeper packages/migrate packages/pod-runner packages/metrics tools packages/cli e2e release"
for script in build test; do for d in $dirs; do
  for args in $(node -e 'const p = require("./'"$d"'/package.json"); for (const s of [p.scripts.'"$script"']) for (const m of (s || "").matchAll(/tsc (-p \S+(?: --noEmit)?)/g)) console.log(m[1].replace(/ /g, "@"))'); do
    (cd "$d" && "$tsc" $(echo "$args" | tr @ ' '))
  done
done; done
