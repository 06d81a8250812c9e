#!/bin/sh
# Engram container entrypoint: apply migrations (waiting up to ENGRAM_DB_WAIT_S seconds
# for the database to accept connections), then serve without migrating again. With
# ENGRAM_MIGRATE_ON_START=false another process applies them (compose's `migrate` service,
# before several replicas start), and serve starts at once. Other arguments run
# `engram <args>`, e.g.
#   docker compose run --rm engram keys create --namespace default --role admin
set -eu

if [ "$#" -eq 0 ] || [ "$1" = "serve" ]; then
    [ "$#" -gt 0 ] && shift
    # The values Engram's settings read as false.
    case "$(printf '%s' "${ENGRAM_MIGRATE_ON_START:-true}" | tr '[:upper:]' '[:lower:]')" in
        false | f | no | n | off | 0) ;;
        # Retries only while the database does not answer; a wrong URL fails at once.
        *) engram migrate --wait "${ENGRAM_DB_WAIT_S:-30}" ;;
    esac
    export ENGRAM_MIGRATE_ON_START=false
    exec engram serve "$@"
fi

exec engram "$@"
