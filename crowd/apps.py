from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"

    def ready(self) -> None:
        # HIT pages may be framed by every channel's worker sites (annotation.hit_page.headers).
        from annotation.hit_page.headers import worker_sites_register
        from crowd.marketplaces.registry import frame_origins

        worker_sites_register(frame_origins())
