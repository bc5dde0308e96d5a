"""How the comparison votes the campaign page counts relate to those a TrueSkill refit used,
so the ranking page can say why "Refit #6 used 2440 comparisons" stands beside "2550 / 2550
votes".

The campaign page counts every vote of an answer that counts (`crowd.models.counted`:
confirmed by its channel, not rejected). A refit (`ranking.pipeline._votes`) uses the same
votes minus those of the workers quality control excluded at the time, and runs when a
comparison batch is complete, so votes counted later wait for the next refit — or for none,
once the topic is done. Pending answers are in neither figure. No vote pairs a proposition
with itself: an ordering lists each of its propositions once.
"""

from dataclasses import dataclass

from django.db.models import Count, Q

from annotation.models import Topic
from crowd.models import Comparison, counted
from crowd.qc.worker_quality import excluded_worker_ids
from ranking.models import RankingSnapshot


@dataclass(frozen=True)
class RefitVotes:
    counted: int  # the topic's counted votes: the campaign page's "Comparison votes"
    excluded: int  # of those, the votes of workers quality control excludes now
    excluded_workers: int
    used: int  # by the refit

    @property
    def included(self) -> int:
        return self.counted - self.excluded

    @property
    def since(self) -> int:
        """Votes of included workers counted after the refit (negative: the refit used votes
        of workers excluded since)."""
        return self.included - self.used

    @property
    def excluded_since(self) -> int:
        return -self.since


def refit_votes(*, topic: Topic, snapshot: RankingSnapshot | None) -> RefitVotes | None:
    """The votes behind `snapshot` (None without one), in two queries."""
    if snapshot is None:
        return None
    excluded = excluded_worker_ids(topic.campaign_id)
    from_excluded = Q(worker_id__in=excluded)
    # Reached through the topic's tasks, as the refit reads them (`ranking.pipeline._votes`):
    # asked by the winner's topic, the planner joins every vote of the campaign.
    figures = Comparison.objects.filter(counted("assignment__"), assignment__task__batch__topic=topic).aggregate(
        counted=Count("id"),
        excluded=Count("id", filter=from_excluded),
        excluded_workers=Count("worker_id", filter=from_excluded, distinct=True),
    )
    return RefitVotes(used=snapshot.comparisons_used, **figures)
