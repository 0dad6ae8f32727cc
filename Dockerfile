# The same installation as `make install`: Python 3.11 and `pip install .` of pyproject.toml.
FROM python:3.11-slim-bookworm AS app

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
# the throwaway key and master key only let the settings load here (nothing is sealed, and
# no var/master.key is generated into the image).
# Production refuses weak secrets, so random throwaway ones are drawn for this one command.
RUN DJANGO_SETTINGS_MODULE=deidweb.settings.production \
    SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(64))')" \
    DEIDWEB_MASTER_KEY="$(python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')" \
    python manage.py collectstatic --noinput
# Compile the engine's numba kernels into /app/var/numba (NUMBA_CACHE_DIR, set by the
# settings), owned below by the user the app runs as: the first search is then as fast as
# the next. (A host whose CPU differs from the build machine's recompiles them once.)
RUN DJANGO_SETTINGS_MODULE=deidweb.settings.local \
    DEIDWEB_MASTER_KEY="$(python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')" \
    python manage.py deid warmup

RUN useradd --system --uid 1000 deidweb && mkdir -p /app/var && chown -R deidweb /app/var
USER deidweb
EXPOSE 8000
# Threads, keep-alive, timeouts and the warm start: deidweb/gunicorn.conf.py.
CMD ["gunicorn", "-c", "deidweb/gunicorn.conf.py", "deidweb.wsgi:application"]

# Optional image of compose's `spark` profile: the same code with Sail, a Spark Connect server
# (Rust, no JVM), so its executors run the engine's batch code. Installed at build time: the
# running stack makes no downloads.
FROM app AS sail
USER root
RUN pip install pysail==0.7.2
USER deidweb
CMD ["sail", "spark", "server", "--ip", "0.0.0.0", "--port", "15002", "-C", "/lake"]
