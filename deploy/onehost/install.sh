#!/bin/sh
# The one-host deployment on a Debian or Ubuntu lab server, without Docker: PostgreSQL, Redis and
# nginx from the distribution; gunicorn, the Celery worker and Celery beat as systemd services
# (the same processes, commands and environment as docker-compose.yml).
#
#   sudo sh deploy/onehost/install.sh https://tasks.example.org
#
# Run it from a checkout of Salience. It copies the checkout to /opt/salience, creates the
# `salience` user, database and environment file (/etc/salience/salience.env, kept if present),
# installs the units and nginx's site, and starts them. Running it again updates the code and
# restarts the services. TLS: run `certbot --nginx -d <host>` afterwards (or put a terminating
# proxy in front and set TRUSTED_PROXY_HOPS=2).
#
# Variables for installing elsewhere than this machine's root, as tests/attacks/test_onehost.py
# runs it (for real, into a temporary directory); unset, each is the real install's:
#   SALIENCE_ROOT=/some/dir    stage every file below this directory (its opt/, etc/, var/), as
#                              DESTDIR does: the units and the environment still name
#                              /opt/salience and /etc/salience, the paths they will run at
#   SALIENCE_USER=name         the account the services run as (salience, created if absent)
#   SALIENCE_PACKAGES=no       PostgreSQL, Redis, nginx and python3-venv are installed already
#   SALIENCE_DATABASE_URL=url  a database of your own (a managed PostgreSQL, say): written to the
#                              environment file, and no role or database is created
#   SALIENCE_SYSTEMCTL=command what runs `systemctl` (systemctl)
#   SALIENCE_NGINX=command     what runs `nginx -t`, the check of nginx's configuration (nginx)
set -eu

SITE_URL=${1:?usage: install.sh https://your.host}
HOST=$(printf '%s' "$SITE_URL" | sed -e 's|^[a-z]*://||' -e 's|[:/].*$||')
SOURCE=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${SALIENCE_ROOT:-}
SERVICE_USER=${SALIENCE_USER:-salience}
SYSTEMCTL=${SALIENCE_SYSTEMCTL:-systemctl}
NGINX=${SALIENCE_NGINX:-nginx}
APP=$ROOT/opt/salience
ENV_FILE=$ROOT/etc/salience/salience.env

if [ "${SALIENCE_PACKAGES:-yes}" != no ]; then
    apt-get update
    apt-get install -y --no-install-recommends postgresql redis-server nginx python3-venv
fi

id "$SERVICE_USER" >/dev/null 2>&1 || useradd --system --home-dir /opt/salience --shell /usr/sbin/nologin "$SERVICE_USER"
GROUP=$(id -gn "$SERVICE_USER")
mkdir -p "$APP" "$ROOT/etc/salience" "$ROOT/etc/systemd/system" "$ROOT/etc/nginx/conf.d"
# The checkout replaces the code (the virtualenv and the collected static files stay).
find "$APP" -mindepth 1 -maxdepth 1 ! -name .venv ! -name staticfiles -exec rm -rf {} +
tar -C "$SOURCE" --exclude=./.venv --exclude=./.git --exclude=./var --exclude=./staticfiles -cf - . | tar -C "$APP" -xf -
test -x "$APP/.venv/bin/python" || python3 -m venv "$APP/.venv"
"$APP/.venv/bin/pip" install -q -r "$APP/requirements.txt"

if [ ! -f "$ENV_FILE" ]; then
    SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
    if [ -n "${SALIENCE_DATABASE_URL:-}" ]; then
        DATABASE_URL=$SALIENCE_DATABASE_URL
    else
        PASSWORD=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
        su postgres -c "psql -qc \"CREATE ROLE salience LOGIN PASSWORD '$PASSWORD'\""
        su postgres -c "createdb -O salience salience"
        DATABASE_URL=postgres://salience:$PASSWORD@127.0.0.1:5432/salience
    fi
    sed -e "s|^SECRET_KEY=.*|SECRET_KEY=$SECRET|" \
        -e "s|^DATABASE_URL=.*|DATABASE_URL=$DATABASE_URL|" \
        -e "s|^SITE_URL=.*|SITE_URL=$SITE_URL|" \
        -e "s|^ALLOWED_HOSTS=.*|ALLOWED_HOSTS=$HOST|" \
        -e "s|^CSRF_TRUSTED_ORIGINS=.*|CSRF_TRUSTED_ORIGINS=$SITE_URL|" \
        "$APP/deploy/onehost/salience.env.example" > "$ENV_FILE"
fi
chown "root:$GROUP" "$ENV_FILE"
chmod 640 "$ENV_FILE"

# Static files are served by the app (WhiteNoise) from what collectstatic gathers.
(cd "$APP" && set -a && . "$ENV_FILE" && set +a && .venv/bin/python manage.py collectstatic --noinput -v 0)
chown -R "$SERVICE_USER:$GROUP" "$APP"

for unit in salience-web salience-worker salience-beat; do
    sed -e "s|^User=salience\$|User=$SERVICE_USER|" -e "s|^Group=salience\$|Group=$GROUP|" \
        "$APP/deploy/onehost/$unit.service" > "$ROOT/etc/systemd/system/$unit.service"
done
cp "$APP/deploy/onehost/nginx-salience.conf" "$ROOT/etc/nginx/conf.d/salience.conf"
rm -f "$ROOT/etc/nginx/sites-enabled/default"
$NGINX -t
$SYSTEMCTL daemon-reload
$SYSTEMCTL enable --now redis-server postgresql salience-web salience-worker salience-beat
$SYSTEMCTL restart salience-web salience-worker salience-beat
$SYSTEMCTL reload nginx

echo "Salience runs at http://$HOST/ (add TLS: certbot --nginx -d $HOST)."
echo "First login: sudo -u $SERVICE_USER sh -c 'cd /opt/salience && set -a && . /etc/salience/salience.env && .venv/bin/python manage.py createsuperuser'"
