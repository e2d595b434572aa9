# The Referee service image.
#
# Offline (this project's machines, no registry):  make image
#   builds a base from a debootstrap rootfs (docker import) and a wheelhouse in docker/wheels,
#   then runs this file with --build-arg BASE=<imported base>.
# With internet:  docker build --build-arg PIP_FLAGS= -t referee .
#   uses python:3.11-slim and PyPI.
# EXTRAS: referee's extras installed in the image; `postgres` (psycopg's binary wheel, libpq
# included) lets replicas share one registry (REFEREE_DB_URL=postgresql://..., see
# docker-compose.yml). --build-arg EXTRAS= installs referee alone.
ARG BASE=python:3.11-slim
FROM ${BASE}

ARG PIP_FLAGS=--no-index
ARG EXTRAS=postgres
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    REFEREE_HOST=0.0.0.0 REFEREE_PORT=8000 REFEREE_DB_PATH=/data/referee.db

RUN python3 -m venv /opt/referee && mkdir -p /data && chown 65534:65534 /data
COPY docker/wheels /wheels
COPY pyproject.toml README.md /src/
COPY src /src/src
# The wheelhouse holds referee's own wheel (and its extras' wheels) when built by `make image`;
# otherwise build from /src.
RUN extras="${EXTRAS:+[${EXTRAS}]}"; \
    if ls /wheels/referee-*.whl >/dev/null 2>&1; then \
        /opt/referee/bin/pip install --no-cache-dir ${PIP_FLAGS} --find-links /wheels "referee${extras}"; \
    else \
        /opt/referee/bin/pip install --no-cache-dir ${PIP_FLAGS} --find-links /wheels "/src${extras}"; \
    fi && rm -rf /wheels /src

# The service never runs submitted code itself; it drives sibling sandbox containers through
# the Docker socket when one is mounted (see docker-compose.yml).
USER 65534:65534
EXPOSE 8000
# --start-period: a first start that takes a while (workers, sandbox containers on a busy host)
# is not counted as failures; the first success ends it.
HEALTHCHECK --interval=10s --timeout=3s --retries=3 --start-period=120s \
    CMD ["/opt/referee/bin/python", "-c", "import urllib.request,os; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"REFEREE_PORT\"]}/livez', timeout=2)"]
CMD ["/opt/referee/bin/referee", "serve"]
