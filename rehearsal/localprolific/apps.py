from django.apps import AppConfig


class LocalprolificConfig(AppConfig):
    """A Prolific-compatible endpoint for tests, the demo and offline rehearsal."""

    name = "rehearsal.localprolific"
    label = "localprolific"
