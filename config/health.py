"""Liveness for load balancers and compose healthchecks: the app answers and the DB too."""

from django.db import connection
from django.http import JsonResponse


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
