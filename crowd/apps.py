from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"

    def ready(self) -> None:
        # config reaches the HIT page through a hook, not an import (config/hit_hooks.py): who
        # may frame it (every channel's worker sites) and how its submit tokens are named.
        from config.hit_hooks import hit_page_register
        from crowd.hit_page.tokens import submit_token_digest
        from crowd.marketplaces.registry import frame_origins

        hit_page_register(worker_sites=frame_origins(), token_digest=submit_token_digest)
