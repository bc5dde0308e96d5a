from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
