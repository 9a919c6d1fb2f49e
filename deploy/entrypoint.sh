#!/bin/sh
# The image's entrypoint (Dockerfile): the first argument picks the role, so api nodes, runners,
# a standalone process and the operator CLI all run from one image, each from its compiled bundle
# (`npm run build`, scripts/build.ts), with source maps for stack traces.
#   api | runner | standalone   a service (README "Topologies")
#   admin <command> [options]   the operator CLI (README "Run it")
set -e
app="$(dirname "$0")/.."
role="${1:-standalone}"
[ "$#" -gt 0 ] && shift
case "$role" in
  api | runner | standalone)
    # the health check (deploy/healthcheck.mjs) asks what this container is
    echo "$role" > "${TMPDIR:-/tmp}/switchboard-role"
    exec node --enable-source-maps "$app/dist/$role.mjs" "$@"
    ;;
  admin)
    exec node --enable-source-maps "$app/dist/admin.mjs" "$@"
    ;;
  *)
    echo "usage: <api|runner|standalone|admin> [arguments]" >&2
    exit 64
    ;;
esac
