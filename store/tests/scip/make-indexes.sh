#!/usr/bin/env bash
# Makes the SCIP indexes the real-indexer tests read, with real indexers over real packages'
# sources, and caches them under target/scip/ (run it again: it does nothing when they exist).
#
#   target/scip/rxjs.scip       scip-typescript over rxjs 7.8.2's shipped src/ (251 files)
#   target/scip/packaging.scip  scip-python over packaging 24.2's sources (from its wheel)
#
# Needs node/npm, python3/pip and git; reaches only the npm registry and PyPI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/target/scip"
tools="$root/target/scip-tools"
mkdir -p "$out" "$tools"

TS_INDEXER=@sourcegraph/scip-typescript@0.4.0
PY_INDEXER=@sourcegraph/scip-python@0.6.6
RXJS=rxjs@7.8.2
PACKAGING=packaging==24.2

if [ ! -x "$tools/node_modules/.bin/scip-typescript" ] || [ ! -x "$tools/node_modules/.bin/scip-python" ]; then
  (cd "$tools" && npm init -y >/dev/null && npm install --no-audit --no-fund "$TS_INDEXER" "$PY_INDEXER" >&2)
fi

if [ ! -s "$out/rxjs.scip" ]; then
  work="$tools/rxjs"
  rm -rf "$work" && mkdir -p "$work"
  # The index's project root is the folder it runs in, whose name names the repository.
  (cd "$work" && npm pack "$RXJS" >/dev/null && tar xzf rxjs-*.tgz && rm rxjs-*.tgz \
    && mv package rxjs)
  src="$work/rxjs"
  rm -f "$src"/src/tsconfig*.json
  cat > "$src/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "es2017",
    "module": "commonjs",
    "lib": ["es2017", "dom"],
    "strict": true,
    "skipLibCheck": true,
    "noEmit": true
  },
  "include": ["src/**/*.ts"]
}
JSON
  (cd "$src" && "$tools/node_modules/.bin/scip-typescript" index --output "$out/rxjs.scip.tmp" >&2)
  mv "$out/rxjs.scip.tmp" "$out/rxjs.scip"
fi

if [ ! -s "$out/packaging.scip" ]; then
  work="$tools/packaging"
  rm -rf "$work" && mkdir -p "$work/wheel" "$work/packaging"
  python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$work/wheel" "$PACKAGING" >&2
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$(ls "$work"/wheel/*.whl)" "$work/unpacked"
  cp -r "$work/unpacked/packaging" "$work/packaging/packaging"
  (cd "$work/packaging" && git init -q && git add -A \
    && git -c user.name=strata -c user.email=strata@invalid commit -qm sources)
  (cd "$work/packaging" && "$tools/node_modules/.bin/scip-python" index . \
    --project-name packaging --project-version 24.2 --output "$out/packaging.scip.tmp" >&2)
  mv "$out/packaging.scip.tmp" "$out/packaging.scip"
fi
ls -l "$out"/*.scip >&2
