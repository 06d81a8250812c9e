#!/bin/sh
# Engram container entrypoint: apply migrations (waiting up to ENGRAM_DB_WAIT_S seconds
# for the database to accept connections), then serve without migrating again. Other
# arguments run `engram <args>`, e.g.
#   docker compose run --rm engram keys create --namespace default --role admin
set -eu

if [ "$#" -eq 0 ] || [ "$1" = "serve" ]; then
    [ "$#" -gt 0 ] && shift
    # Retries only while the database does not answer; a wrong URL fails at once.
    engram migrate --wait "${ENGRAM_DB_WAIT_S:-30}"
    export ENGRAM_MIGRATE_ON_START=false
    exec engram serve "$@"
fi

exec engram "$@"
