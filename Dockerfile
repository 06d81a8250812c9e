# Engram: slim, non-root image that migrates and serves on start.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
RUN python -m venv /opt/engram && /opt/engram/bin/pip install .

FROM python:3.11-slim
RUN groupadd --system engram \
    && useradd --system --gid engram --home-dir /var/lib/engram --create-home engram
COPY --from=build /opt/engram /opt/engram
COPY docker/entrypoint.sh /usr/local/bin/engram-entrypoint
ENV PATH=/opt/engram/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    ENGRAM_DATABASE_URL=sqlite+aiosqlite:////var/lib/engram/engram.db \
    ENGRAM_BLOB_DIR=/var/lib/engram/blobs
USER engram
WORKDIR /var/lib/engram
VOLUME ["/var/lib/engram"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('ENGRAM_PORT', '8080'), timeout=2)"
ENTRYPOINT ["engram-entrypoint"]
CMD ["serve"]
