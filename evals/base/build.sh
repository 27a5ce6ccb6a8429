#!/usr/bin/env bash
# Build a Debian base image without any image registry: debootstrap + docker import.
# It carries what the local suite's Dockerfiles and the docker environment need
# (bash, git, python3 with pytest). Usage: evals/base/build.sh [NAME] (default live-swe-base).
# A tarball cached under ${LIVE_SWE_BASE_CACHE:-~/.cache/live-swe} is reused when present.
set -euo pipefail
name="${1:-live-swe-base}"
cache_dir="${LIVE_SWE_BASE_CACHE:-$HOME/.cache/live-swe}"
tarball="$cache_dir/base-bookworm-v1.tar"
packages="bash,ca-certificates,git,patch,python3,python3-pip,python3-venv,python3-pytest,procps,less"

if ! command -v docker >/dev/null; then
  echo "build.sh: the docker client is not installed (apt-get install docker.io)" >&2; exit 2
fi
if ! docker info >/dev/null 2>&1; then
  echo "build.sh: no Docker engine answers; start one (dockerd &) and retry" >&2; exit 2
fi
if [ ! -s "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "build.sh: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
  mkdir -p "$cache_dir"
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase --include="$packages" bookworm "$root" >&2
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
fi
# Re-importing 300 MB takes a while: skip it when the image already comes from this very tarball.
stamp="live-swe-base $(basename "$tarball") $(stat -c '%s-%Y' "$tarball")"
if [ "$(docker image inspect -f '{{.Comment}}' "$name" 2>/dev/null || true)" = "$stamp" ]; then
  echo "$name"; exit 0
fi
docker import \
  --message "$stamp" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["bash"]' \
  "$tarball" "$name" >/dev/null
echo "$name"
