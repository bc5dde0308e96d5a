"""A topic's pair budget beyond its campaign's share: a researcher extends it by whole batches
before the topic is done (the pipeline reads the sum, ranking/pipeline.py `_stop_reason`)."""

from django.db import transaction
from django.db.models import Sum

from annotation.models import Topic
from config.errors import ApplicationError
from ranking.models import PairBudgetExtension

MAX_BATCHES = 20  # per extension: a typo should not commit a campaign's budget


class BudgetExtensionRefused(ApplicationError):
    code = "budget_extension_refused"


def pair_budget_extra(topic: Topic) -> int:
    """The pairs added to `topic`'s budget by extensions."""
    return topic.budget_extensions.aggregate(total=Sum("pairs"))["total"] or 0


def topic_pair_budget_extend(*, topic: Topic, batches: int, user) -> PairBudgetExtension:
    """Add `batches` comparison batches (the campaign's `batch_pairs` each) to the topic's pair
    budget. Refused once the topic is done: its ranking is final and its work expired."""
    if not 1 <= batches <= MAX_BATCHES:
        raise BudgetExtensionRefused(f"Extend by 1 to {MAX_BATCHES} batches at a time (asked: {batches}).")
    with transaction.atomic():
        locked = Topic.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=topic.pk)
        if locked.state == Topic.State.DONE:
            raise BudgetExtensionRefused(
                f"Topic {locked.key!r} is done: its ranking is final, so its pair budget can no longer be extended.",
                code="topic_final",
            )
        return PairBudgetExtension.objects.create(
            topic=locked, pairs=batches * locked.campaign.batch_pairs, added_by=user
        )
