from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The researcher's console: pages, forms, the API, the admin and the commands that call
    every layer below (dashboard → ranking → crowd → annotation). It has no models."""

    name = "dashboard"
