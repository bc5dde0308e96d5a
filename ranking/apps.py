from django.apps import AppConfig


class RankingConfig(AppConfig):
    name = "ranking"

    def ready(self) -> None:
        # The loop's owner hears when a batch may hold every answer it needs (crowd.work.events):
        # crowd reports it, ranking decides what comes next (ranking.workflow's event path).
        from crowd.work.events import batch_full_listen
        from ranking.tasks import batch_full_heard

        batch_full_listen(batch_full_heard)
