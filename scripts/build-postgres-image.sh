#!/usr/bin/env bash
# Build the PostgreSQL image of docker-compose.yml's `shared` profile without a container
# registry (the same recipe as the service and sandbox images):
#   1. a base from a debootstrap'd Debian bookworm with Debian's `postgresql`, imported with
#      `docker import` and tagged by the hash of its recipe (built once, then reused);
#   2. `docker build` of docker/postgres/Dockerfile on that base (entrypoint, user, volume).
# The image is tagged $1 (default referee-postgres:15, compose's default REFEREE_PG_IMAGE) and
# labelled with the hash of the whole recipe: a no-op while the tag carries the current hash.
# Prints the image's name.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:-referee-postgres:15}
LABEL=org.referee.postgres.recipe

recipe="debootstrap --variant=minbase --include=postgresql bookworm"
base="referee-postgres-base:$(echo "$recipe" | sha256sum | cut -c1-12)"
hash=$({ echo "$recipe"; cat scripts/build-postgres-image.sh docker/postgres/Dockerfile docker/postgres/docker-entrypoint.sh; } | sha256sum | cut -c1-16)

if [ "$(docker image inspect --format "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null)" = "$hash" ]; then
  echo "$IMAGE"
  exit 0
fi

if ! docker image inspect "$base" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
  root=$(mktemp -d /tmp/referee-postgres-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "building $base (debootstrap, about a minute)" >&2
  $recipe "$root" http://deb.debian.org/debian >/dev/null
  # Package caches, docs, and the cluster Debian's install made (the entrypoint makes its own).
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/etc/postgresql/*/main "$root"/var/lib/postgresql/*/main
  tar --numeric-owner -C "$root" -c . | docker import - "$base" >/dev/null
fi

docker build -q --build-arg BASE="$base" --label "$LABEL=$hash" -t "$IMAGE" docker/postgres >/dev/null
echo "$IMAGE"
