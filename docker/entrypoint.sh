#!/bin/sh
# Engram container entrypoint: apply migrations (waiting for the database to
# accept connections), then serve. Other arguments run `engram <args>`, e.g.
#   docker compose run --rm engram keys create --namespace default --role admin
set -eu

if [ "$#" -eq 0 ] || [ "$1" = "serve" ]; then
    [ "$#" -gt 0 ] && shift
    wait_s="${ENGRAM_DB_WAIT_S:-30}"
    start=$(date +%s)
    until engram migrate; do
        if [ $(( $(date +%s) - start )) -ge "$wait_s" ]; then
            echo "entrypoint: database not reachable after ${wait_s}s" >&2
            exit 1
        fi
        echo "entrypoint: database not ready, retrying" >&2
        sleep 2
    done
    exec engram serve "$@"
fi

exec engram "$@"
