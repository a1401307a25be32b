# syntax=docker/dockerfile:1
# TEMS web server image; the outbox relay and the one-off commands run from the same image (compose.yaml,
# docs/DEPLOY.md). Build: docker build -t tems .

# --- build: dependencies into a virtualenv, static files collected -------------------------------------------
FROM python:3.13.5-slim-bookworm AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /app
COPY pyproject.toml requirements.lock ./
# The runtime dependencies (and PostgreSQL's driver) named in pyproject.toml, at the versions requirements.lock
# pins; the app itself is not installed as a package: it runs from /app, where its templates and static files are.
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['postgres']))" > requirements.in \
 && python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -c requirements.lock -r requirements.in

COPY manage.py ./
COPY tems ./tems
COPY registrations ./registrations
COPY inventory ./inventory
COPY lab ./lab
COPY templates ./templates
COPY static ./static
# WhiteNoise serves the collected files; the key exists only for this command (settings refuse to start without).
RUN DJANGO_SECRET_KEY=collectstatic-only /opt/venv/bin/python manage.py collectstatic --noinput

# --- runtime: the virtualenv and the app, run by an unprivileged user -----------------------------------------
FROM python:3.13.5-slim-bookworm AS runtime

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    WEB_CONCURRENCY=4

RUN groupadd --system --gid 10001 tems \
 && useradd --system --uid 10001 --gid tems --home-dir /app --no-create-home tems \
 && mkdir /data && chown tems:tems /data

# Code and dependencies stay owned by root: the process can read them, not change them. Only /data is its own
# (a local SQLite database in compose.yaml). The user by number, so a runtime can verify it is not root
# (Kubernetes' runAsNonRoot cannot check a name).
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
USER 10001:10001

EXPOSE 8000
# /livez does no I/O: a DynamoDB or database outage must take the container out of a balancer (/readyz), not
# get it restarted. The slim image has no curl, so Python asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/livez', timeout=3)"]

# gthread workers with a keep-alive longer than the balancer's idle timeout (docs/DEPLOY.md, section 6);
# WEB_CONCURRENCY sets the number of workers. No access log: the app writes one structured line per request.
CMD ["gunicorn", "tems.wsgi", "--bind", "0.0.0.0:8000", "--threads", "4", "--keep-alive", "75", \
     "--timeout", "30"]
