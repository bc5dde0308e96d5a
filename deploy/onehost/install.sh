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
set -eu

SITE_URL=${1:?usage: install.sh https://your.host}
HOST=$(printf '%s' "$SITE_URL" | sed -e 's|^[a-z]*://||' -e 's|[:/].*$||')
SOURCE=$(cd "$(dirname "$0")/../.." && pwd)
APP=/opt/salience
ENV_FILE=/etc/salience/salience.env

apt-get update
apt-get install -y --no-install-recommends postgresql redis-server nginx python3-venv rsync

id salience >/dev/null 2>&1 || useradd --system --home-dir "$APP" --shell /usr/sbin/nologin salience
mkdir -p "$APP" /etc/salience
rsync -a --delete --exclude .venv --exclude .git --exclude var --exclude staticfiles "$SOURCE"/ "$APP"/
test -x "$APP/.venv/bin/python" || python3 -m venv "$APP/.venv"
"$APP/.venv/bin/pip" install -q -r "$APP/requirements.txt"

if [ ! -f "$ENV_FILE" ]; then
    PASSWORD=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
    SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
    su postgres -c "psql -qc \"CREATE ROLE salience LOGIN PASSWORD '$PASSWORD'\""
    su postgres -c "createdb -O salience salience"
    sed -e "s|^SECRET_KEY=.*|SECRET_KEY=$SECRET|" \
        -e "s|CHANGE-ME|$PASSWORD|" \
        -e "s|^SITE_URL=.*|SITE_URL=$SITE_URL|" \
        -e "s|^ALLOWED_HOSTS=.*|ALLOWED_HOSTS=$HOST|" \
        -e "s|^CSRF_TRUSTED_ORIGINS=.*|CSRF_TRUSTED_ORIGINS=$SITE_URL|" \
        "$APP/deploy/onehost/salience.env.example" > "$ENV_FILE"
fi
chown root:salience "$ENV_FILE"
chmod 640 "$ENV_FILE"

# Static files are served by the app (WhiteNoise) from what collectstatic gathers.
(cd "$APP" && set -a && . "$ENV_FILE" && set +a && .venv/bin/python manage.py collectstatic --noinput -v 0)
chown -R salience:salience "$APP"

cp "$APP"/deploy/onehost/salience-web.service "$APP"/deploy/onehost/salience-worker.service \
   "$APP"/deploy/onehost/salience-beat.service /etc/systemd/system/
cp "$APP/deploy/onehost/nginx-salience.conf" /etc/nginx/conf.d/salience.conf
rm -f /etc/nginx/sites-enabled/default
nginx -t
systemctl daemon-reload
systemctl enable --now redis-server postgresql salience-web salience-worker salience-beat
systemctl restart salience-web salience-worker salience-beat
systemctl reload nginx

echo "Salience runs at http://$HOST/ (add TLS: certbot --nginx -d $HOST)."
echo "First login: sudo -u salience sh -c 'cd $APP && set -a && . $ENV_FILE && .venv/bin/python manage.py createsuperuser'"
