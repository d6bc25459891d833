# Recall against DATABASE_URL (without it: the embedded PostgreSQL, data under /srv/recall/.recall).
# Multi-stage: every dependency of recall[otel] from the hashed lock file into a virtualenv
# (their own layer, cached until requirements.lock changes), then Recall itself without
# dependencies, and `pip check` proving the lock and pyproject.toml agree; the slim runtime
# image gets the virtualenv and runs as an unprivileged user. .ci/run runs the same install
# steps outside a container (docs/operations.md, Container).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/recall
WORKDIR /src
COPY requirements.lock ./
RUN /opt/recall/bin/pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY app ./app
# Shipped inside the wheel as the package app.migrations (pyproject.toml).
COPY migrations ./migrations
RUN /opt/recall/bin/pip install --no-deps '.[otel]' && /opt/recall/bin/pip check

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/recall/bin:$PATH \
    RECALL_HOST=0.0.0.0 RECALL_PORT=8000
RUN useradd --create-home --uid 10001 recall && mkdir -p /srv/recall && chown 10001 /srv/recall
COPY --from=build /opt/recall /opt/recall
WORKDIR /srv/recall
USER 10001
EXPOSE 8000
# Ready, not just alive: the database answers and no migration is pending.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2).status == 200 else 1)"]
CMD ["recall", "serve"]
