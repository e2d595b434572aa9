#!/usr/bin/env bash
# Make a Docker engine available, and what the offline image builds need: install Debian's
# docker.io if only the client (or nothing) is here, debootstrap, postgresql (for the
# registry's PostgreSQL tests) and docker-compose if they are missing, start
# dockerd in the background if no daemon answers, and wait for its socket.
# Idempotent; prints what it did. Needs root for the install/start steps.
set -euo pipefail

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# The registry's PostgreSQL store is tested against a real server (tests/support/postgres_server.py).
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
# docker-compose.yml is checked (and its shared profile run) by tests/service_image.
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-docker: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! docker info >/dev/null 2>&1; then
  echo "ensure-docker: starting dockerd" >&2
  mkdir -p /var/log
  # setsid: the daemon must outlive this script (and make's process group).
  setsid nohup dockerd >/var/log/referee-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
fi
docker info >/dev/null 2>&1 || { echo "ensure-docker: dockerd did not come up; see /var/log/referee-dockerd.log" >&2; exit 1; }
