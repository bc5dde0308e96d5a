from django.apps import AppConfig


class LocalturkConfig(AppConfig):
    """An MTurk-compatible endpoint for tests, the demo and offline rehearsal."""

    name = "rehearsal.localturk"
    label = "localturk"
