"""docker-compose.yml, the Dockerfile and the one-host units (deploy/onehost/) describe the
deployment the suite replays (tests/attacks/deployment.py: gunicorn with SALIENCE_ENV=production
behind deploy/nginx.conf; a Celery worker and beat as in tests/conftest.py). No Docker engine
runs here, so this holds the files to the replay: the same services, commands, options,
variables and ports. tests/attacks/test_onehost.py starts the units' commands themselves."""

import configparser
import re
import shlex
from pathlib import Path

import yaml

from tests.attacks.deployment import DEPLOYMENT_VARIABLES, GUNICORN_OPTIONS, NGINX_CONF

ROOT = Path(__file__).resolve().parents[2]
ONEHOST = ROOT / "deploy" / "onehost"
DEFAULTED = re.compile(r"^\$\{(\w+):[-?](.*)\}$")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def compose_value(value: str) -> str:
    """`${NAME:-default}` as compose resolves it with NAME unset (`${NAME:?…}`: required)."""
    found = DEFAULTED.match(str(value))
    if found is None:
        return str(value)
    return "" if value.startswith(f"${{{found[1]}:?") else found[2]


def gunicorn_command(words: list[str]) -> list[str]:
    start = words.index("gunicorn")
    return words[start:]


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # keys keep their case (ExecStart)
    parser.read_string((ONEHOST / name).read_text())
    return parser


def test_compose_runs_the_services_the_replay_runs():
    services = compose()["services"]

    assert set(services) == {"postgres", "redis", "web", "nginx", "worker", "beat"}
    assert services["postgres"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")
    assert all(service["restart"] == "unless-stopped" for service in services.values())
    assert all("healthcheck" in services[name] for name in ("postgres", "redis", "web", "worker", "beat"))


def test_web_is_gunicorn_with_the_replays_options_after_migrating():
    web = compose()["services"]["web"]
    steps = [shlex.split(step) for step in shlex.split(web["command"])[2].split("&&")]
    dockerfile_cmd = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.M)

    assert steps[0] == ["python", "manage.py", "migrate", "--noinput"]
    gunicorn = gunicorn_command(steps[1])
    assert gunicorn[:4] == ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000"]
    assert gunicorn[4:-2] == GUNICORN_OPTIONS and gunicorn[-2:] == ["--access-logfile", "-"]
    assert dockerfile_cmd is not None and yaml.safe_load(dockerfile_cmd[1]) == gunicorn
    assert "ports" not in web  # gunicorn is reached through nginx only


def test_the_apps_environment_is_the_replays():
    services = compose()["services"]
    environments = [services[name]["environment"] for name in ("web", "worker", "beat")]

    assert environments[0] == environments[1] == environments[2]
    app = {name: compose_value(value) for name, value in environments[0].items()}
    assert set(DEPLOYMENT_VARIABLES) <= set(app)
    assert app["SALIENCE_ENV"] == "production" and "DEBUG" not in app
    assert app["TRUSTED_PROXY_HOPS"] == "1"  # the replay's: nginx is the one hop
    assert app["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in app["DATABASE_URL"]
    assert app["CELERY_BROKER_URL"] == "redis://redis:6379/0" and app["CACHE_URL"] == "redis://redis:6379/1"
    assert app["SECRET_KEY"] == ""  # required: compose refuses to start without it


def test_nginx_serves_the_repositorys_config_in_front_of_web():
    services = compose()["services"]
    nginx = services["nginx"]
    text = NGINX_CONF.read_text()

    assert nginx["volumes"] == ["./deploy/nginx.conf:/etc/nginx/nginx.conf:ro"]
    assert nginx["ports"] == ["8000:80"] and "listen 80;" in text
    assert "server web:8000;" in text  # web's gunicorn --bind port
    assert nginx["depends_on"]["web"]["condition"] == "service_healthy"


def test_worker_and_beat_are_celery_on_the_projects_app():
    services = compose()["services"]

    assert shlex.split(services["worker"]["command"])[:4] == ["celery", "-A", "config", "worker"]
    assert shlex.split(services["beat"]["command"])[:4] == ["celery", "-A", "config", "beat"]


def test_the_one_host_units_run_composes_commands():
    services = compose()["services"]
    web, worker, beat = (unit(f"salience-{name}.service")["Service"] for name in ("web", "worker", "beat"))
    web_command = shlex.split(web["ExecStart"])
    compose_web = gunicorn_command(shlex.split(shlex.split(services["web"]["command"])[2].split("&&")[1]))

    assert web_command[0].endswith("/.venv/bin/gunicorn") and web_command[3] == "127.0.0.1:8001"
    assert ["gunicorn", *web_command[1:3], "0.0.0.0:8000", *web_command[4:]] == compose_web
    assert shlex.split(web["ExecStartPre"])[1:] == ["manage.py", "migrate", "--noinput"]
    assert shlex.split(worker["ExecStart"])[1:] == shlex.split(services["worker"]["command"])[1:]
    beat_command = shlex.split(beat["ExecStart"])
    assert beat_command[1:-1] == shlex.split(services["beat"]["command"])[1:-1]
    for service in (web, worker, beat):
        assert service["EnvironmentFile"] == "/etc/salience/salience.env" and service["Restart"] == "always"


def test_the_one_host_environment_names_composes_variables():
    template = dict(
        line.split("=", 1)
        for line in (ONEHOST / "salience.env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    app = compose()["services"]["web"]["environment"]

    assert set(DEPLOYMENT_VARIABLES) <= set(template) and set(app) - {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= (
        set(template) | {"SECURE_SSL_REDIRECT"}
    )
    assert template["SALIENCE_ENV"] == "production" and template["TRUSTED_PROXY_HOPS"] == "1"
    assert template["SECRET_KEY"] == ""  # the install script writes a fresh one


def test_the_one_host_nginx_site_forwards_as_deploy_nginx_conf_does():
    def location(text: str) -> list[str]:
        block = text[text.index("location / {") : text.index("}", text.index("location / {"))]
        return [line.strip() for line in block.splitlines() if line.strip()]

    site = (ONEHOST / "nginx-salience.conf").read_text()

    assert location(site) == location(NGINX_CONF.read_text())
    assert "server 127.0.0.1:8001;" in site  # the web unit's --bind
