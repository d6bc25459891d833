# Recall against an external PostgreSQL (DATABASE_URL). Multi-stage: build a wheel, install it
# into a slim runtime image that runs as an unprivileged user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
# Shipped inside the wheel as the package app.migrations (pyproject.toml).
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 RECALL_HOST=0.0.0.0 RECALL_PORT=8000
RUN useradd --create-home --uid 10001 recall
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
WORKDIR /srv/recall
USER recall
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"
CMD ["recall", "serve"]
