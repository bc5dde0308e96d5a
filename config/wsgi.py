"""The WSGI application gunicorn serves (Dockerfile, docker-compose.yml)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Every URL's view imported now, while the worker starts and before it accepts a request:
# left to the first request, the imports made it take seconds (23 s on a loaded 2-core
# machine; benchmarks/e2e.py times the first pages after a start, issue 26).
get_resolver().url_patterns  # noqa: B018
