#!/usr/bin/env bash
# Build the service image without a container registry:
#   1. a base image from a debootstrap'd Debian bookworm (python3 3.11), imported with
#      `docker import` and tagged by the hash of its recipe (built once, then reused);
#   2. a wheelhouse of referee, its extras REFEREE_EXTRAS (default `postgres`: the shared
#      PostgreSQL registry, REFEREE_DB_URL) and their dependencies in docker/wheels (pip, from
#      PyPI or its cache);
#   3. `docker build` of the Dockerfile on that base with --no-index installs.
# REFEREE_BASE_IMAGE=python:3.11-slim skips step 1 where a registry is reachable;
# REFEREE_EXTRAS= builds the image without extras. Prints the image's name.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${REFEREE_IMAGE:-referee:latest}
PY=${PYTHON:-.venv/bin/python}
EXTRAS=${REFEREE_EXTRAS-postgres}

base=${REFEREE_BASE_IMAGE:-}
if [ -z "$base" ]; then
  recipe="debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm"
  base="referee-base:$(echo "$recipe" | sha256sum | cut -c1-12)"
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
    root=$(mktemp -d /tmp/referee-base.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    echo "building $base (debootstrap, about a minute)" >&2
    $recipe "$root" http://deb.debian.org/debian >/dev/null
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import - "$base" >/dev/null
  fi
fi

rm -f docker/wheels/*.whl
"$PY" -m pip wheel -q --wheel-dir docker/wheels ".${EXTRAS:+[$EXTRAS]}" 2> >(grep -v "^WARNING: Location" >&2)
docker build -q --build-arg BASE="$base" --build-arg EXTRAS="$EXTRAS" -t "$IMAGE" . >/dev/null
echo "$IMAGE"
