#!/usr/bin/env bash
# Makes the SCIP indexes the real-indexer tests read, with real indexers over real packages'
# sources, and caches them under target/scip/ (run it again: it does nothing when they exist).
#
#   target/scip/rxjs.scip       scip-typescript over rxjs 7.8.2's shipped src/ (251 files)
#   target/scip/packaging.scip  scip-python over packaging 24.2's sources (from its wheel)
#   target/scip/django.scip     scip-python over django 5.1.4's sources (from its wheel)
#   target/scip/effect.scip     scip-typescript over effect 4.1.0's shipped src/
#   target/scip/semver.scip     rust-analyzer scip over the semver 1.0.28 crate (skipped, loudly,
#                               when `rustup component add rust-analyzer` cannot give one)
#
# Needs node/npm, python3/pip, git and cargo; reaches only the npm registry, PyPI and crates.io.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/target/scip"
tools="$root/target/scip-tools"
mkdir -p "$out" "$tools"

TS_INDEXER=@sourcegraph/scip-typescript@0.4.0
PY_INDEXER=@sourcegraph/scip-python@0.6.6
RXJS=rxjs@7.8.2
PACKAGING=packaging==24.2
DJANGO=django==5.1.4
EFFECT=effect@4.1.0
SEMVER=1.0.28

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

# packaging's sources stay in target/scip-tools/packaging/packaging, the checkout whose lines
# the context tests show (fetched again when the index is kept but they are not).
packaging_sources() {
  work="$tools/packaging"
  rm -rf "$work" && mkdir -p "$work/wheel" "$work/packaging"
  python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$work/wheel" "$PACKAGING" >&2
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$(ls "$work"/wheel/*.whl)" "$work/unpacked"
  cp -r "$work/unpacked/packaging" "$work/packaging/packaging"
}

if [ ! -s "$out/packaging.scip" ]; then
  packaging_sources
  work="$tools/packaging"
  (cd "$work/packaging" && git init -q && git add -A \
    && git -c user.name=strata -c user.email=strata@invalid commit -qm sources)
  (cd "$work/packaging" && "$tools/node_modules/.bin/scip-python" index . \
    --project-name packaging --project-version 24.2 --output "$out/packaging.scip.tmp" >&2)
  mv "$out/packaging.scip.tmp" "$out/packaging.scip"
fi
if [ ! -s "$tools/packaging/packaging/packaging/__init__.py" ]; then
  packaging_sources
fi
# A Python package's sources from its wheel, indexed by scip-python: python_index NAME SPEC VERSION
python_index() {
  local name="$1" pinned="$2" version="$3" work="$tools/$1"
  [ -s "$out/$name.scip" ] && return 0
  rm -rf "$work" && mkdir -p "$work/wheel" "$work/$name"
  python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$work/wheel" "$pinned" >&2
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$(ls "$work"/wheel/*.whl)" "$work/unpacked"
  cp -r "$work/unpacked/$name" "$work/$name/$name"
  (cd "$work/$name" && git init -q && git add -A \
    && git -c user.name=strata -c user.email=strata@invalid commit -qm sources)
  (cd "$work/$name" && NODE_OPTIONS=--max-old-space-size=4096 \
    "$tools/node_modules/.bin/scip-python" index . \
    --project-name "$name" --project-version "$version" --output "$out/$name.scip.tmp" >&2)
  mv "$out/$name.scip.tmp" "$out/$name.scip"
}
python_index django "$DJANGO" 5.1.4

if [ ! -s "$out/effect.scip" ]; then
  work="$tools/effect"
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && npm pack "$EFFECT" >/dev/null && tar xzf effect-*.tgz && rm effect-*.tgz \
    && mv package effect)
  src="$work/effect"
  [ -d "$src/src" ] || { echo "$EFFECT ships no src/" >&2; exit 1; }
  find "$src" -maxdepth 2 -name 'tsconfig*.json' -delete
  cat > "$src/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "es2022",
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "lib": ["es2022", "dom"],
    "strict": true,
    "skipLibCheck": true,
    "noEmit": true
  },
  "include": ["src/**/*.ts"]
}
JSON
  (cd "$src" && NODE_OPTIONS=--max-old-space-size=4096 \
    "$tools/node_modules/.bin/scip-typescript" index --output "$out/effect.scip.tmp" >&2)
  mv "$out/effect.scip.tmp" "$out/effect.scip"
fi

# semver from crates.io: a throwaway project depending on it puts its sources under
# ~/.cargo/registry/src, whence a copy (its own workspace) is indexed by rust-analyzer.
if [ ! -s "$out/semver.scip" ]; then
  ra=""
  if rustup component add rust-analyzer >&2; then
    ra="$(rustup which rust-analyzer 2>/dev/null || true)"
  fi
  [ -n "$ra" ] || ra="$(command -v rust-analyzer || true)"
  if [ -z "$ra" ] || ! "$ra" --version >&2; then
    echo "*** SKIPPED semver.scip: no working rust-analyzer (rustup component add rust-analyzer failed) ***" >&2
  else
    work="$tools/semver"
    rm -rf "$work" && mkdir -p "$work/fetch/src"
    printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nsemver = "=%s"\n[workspace]\n' \
      "$SEMVER" > "$work/fetch/Cargo.toml"
    : > "$work/fetch/src/lib.rs"
    (cd "$work/fetch" && cargo fetch >&2)
    crate="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/semver-"$SEMVER" | head -1)"
    cp -r "$crate" "$work/semver"
    # Its own workspace, so no enclosing one (this repository's) claims it.
    grep -q '^\[workspace\]' "$work/semver/Cargo.toml" || printf '\n[workspace]\n' >> "$work/semver/Cargo.toml"
    if (cd "$work/semver" && "$ra" scip . --output "$out/semver.scip.tmp" >&2); then
      mv "$out/semver.scip.tmp" "$out/semver.scip"
    else
      echo "*** SKIPPED semver.scip: rust-analyzer scip failed ***" >&2
    fi
  fi
fi
ls -l "$out"/*.scip >&2
