# The same installation as `make install`: Python 3.11 and `pip install .` of pyproject.toml.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# WeasyPrint renders the Step 9 report with Pango; fonts are local (no downloads at runtime).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz0b fonts-dejavu-core curl \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY apps ./apps
COPY deidweb ./deidweb
RUN pip install .
COPY . .
# Under the production settings, so the hashed-name manifest their static storage reads exists;
# the key and the throwaway master key only let the settings load here (nothing is sealed, and
# no var/master.key is generated into the image).
RUN DJANGO_SETTINGS_MODULE=deidweb.settings.production \
    SECRET_KEY=build-time-only-collectstatic-key-never-used-at-run-time-0123456789 \
    DEIDWEB_MASTER_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= \
    python manage.py collectstatic --noinput
# Compile the engine's numba kernels into /app/var/numba (NUMBA_CACHE_DIR, set by the
# settings), owned below by the user the app runs as: the first search is then as fast as
# the next. (A host whose CPU differs from the build machine's recompiles them once.)
RUN DJANGO_SETTINGS_MODULE=deidweb.settings.local \
    DEIDWEB_MASTER_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= \
    python manage.py deid warmup

RUN useradd --system --uid 1000 deidweb && mkdir -p /app/var && chown -R deidweb /app/var
USER deidweb
EXPOSE 8000
# Threads, keep-alive, timeouts and the warm start: deidweb/gunicorn.conf.py.
CMD ["gunicorn", "-c", "deidweb/gunicorn.conf.py", "deidweb.wsgi:application"]
