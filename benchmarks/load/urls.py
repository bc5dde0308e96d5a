"""The site's URLs plus a truly trivial view: no database, no template, no session.

/healthz is not trivial enough for a baseline: it runs SELECT 1 on the database
(config/health.py), and its first query of a request is preceded by the connection health
check (CONN_HEALTH_CHECKS), so it costs two round trips to PostgreSQL.
"""

from django.http import HttpResponse
from django.urls import include, path


def trivial(request):
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [path("trivial/", trivial), path("", include("config.urls"))]
