#!/bin/sh
# The image's entrypoint (Dockerfile): the first argument picks the role, so api nodes, runners,
# a standalone process and the operator CLI all run from one image.
#   api | runner | standalone   a service (README "Topologies")
#   admin <command> [options]   the operator CLI (README "Run it")
set -e
role="${1:-standalone}"
[ "$#" -gt 0 ] && shift
case "$role" in
  api | runner | standalone)
    # the health check (deploy/healthcheck.mjs) asks what this container is
    echo "$role" > "${TMPDIR:-/tmp}/switchboard-role"
    exec node --import tsx "services/$role/src/main.ts" "$@"
    ;;
  admin)
    exec node --import tsx services/admin/src/main.ts "$@"
    ;;
  *)
    echo "usage: <api|runner|standalone|admin> [arguments]" >&2
    exit 64
    ;;
esac
