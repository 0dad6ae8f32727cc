"""Docker does not run on the development machines, so the stack's shape is checked here."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def load():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_and_their_commands():
    services = load()["services"]
    default = {name for name, service in services.items() if not service.get("profiles")}
    assert default == {"postgres", "redis", "seaweedfs", "migrate", "web", "worker"}
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert services["migrate"]["restart"] == "no"
    assert services["web"]["command"] == [
        "gunicorn",
        "-c",
        "deidweb/gunicorn.conf.py",
        "deidweb.wsgi:application",
    ]
    assert services["worker"]["command"][:4] == ["celery", "-A", "deidweb", "worker"]
    # one worker service consumes both queues of jobs
    command = services["worker"]["command"]
    assert command[command.index("-Q") + 1] == "interactive,heavy"


def test_files_live_in_the_seaweedfs_object_store():
    services = load()["services"]
    store = services["seaweedfs"]
    assert store["image"].startswith("chrislusf/seaweedfs")
    assert store["command"][0] == "server" and "-s3" in store["command"]
    assert "-s3.port=8333" in store["command"]
    for name in ("web", "worker", "migrate"):
        env = services[name]["environment"]
        assert env["DEIDWEB_S3_ENDPOINT_URL"].endswith("http://seaweedfs:8333}")
        assert env["DEIDWEB_S3_BUCKET"]
        assert env["DEIDWEB_S3_SECRET_KEY"].startswith("${DEIDWEB_S3_SECRET_KEY:?")
        assert "volumes" not in services[name]  # no shared disk between web and workers
    assert "media" not in load()["volumes"]


def test_one_service_definition_is_reused_for_web_worker_and_migrate():
    services = load()["services"]
    for name in ("web", "worker", "migrate"):
        assert services[name]["build"] == "."
        assert services[name]["image"] == "deidweb:latest"
        env = services[name]["environment"]
        for key in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"):
            assert key in env, (name, key)
        assert env["DJANGO_SETTINGS_MODULE"] == "deidweb.settings.production"
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        # no default master key: compose stops with a message when it is not set
        assert env["DEIDWEB_MASTER_KEY"].startswith("${DEIDWEB_MASTER_KEY:?")


def test_healthchecks_and_start_order():
    services = load()["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert "/health/" in " ".join(services["web"]["healthcheck"]["test"])
    for name in ("web", "worker"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_dockerfile_installs_what_make_install_installs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "FROM python:3.11" in dockerfile
    assert "pip install ." in dockerfile  # the same pyproject.toml dependencies
    assert 'pip install --quiet -e ".[dev]"' in makefile


def test_the_optional_spark_profile_runs_sail_built_in_the_image():
    """The cluster path can be tried locally: Sail from the image's `sail` stage, installed
    at build time (the running stack downloads nothing), only under the `spark` profile."""
    spark = load()["services"]["spark"]
    assert spark["profiles"] == ["spark"]
    assert spark["build"] == {"context": ".", "target": "sail"}
    assert spark["command"][:3] == ["sail", "spark", "server"]
    assert "pip" not in " ".join(spark["command"])
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "FROM app AS sail" in dockerfile and "pip install pysail==" in dockerfile


def test_the_image_build_uses_no_weak_throwaway_secret():
    """Production settings refuse weak secrets; the build's collectstatic draws random ones."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "AAAAAAAAAAAAAAAA" not in dockerfile
    assert "secrets.token_urlsafe" in dockerfile and "os.urandom(32)" in dockerfile
