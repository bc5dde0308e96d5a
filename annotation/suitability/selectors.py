"""What the filter's decisions mean for the rest of the app: one definition of "removed"
and of "a topic whose Likert round is built" (after which filtering no longer changes it)."""

from django.db.models import Q, QuerySet

from annotation.models import Batch, Proposition, Topic

REMOVED = Q(suitability_decision__removed=True)


def propositions_for_likert(propositions: QuerySet[Proposition]) -> QuerySet[Proposition]:
    """`propositions` without those the suitability filter removed: the Likert round asks
    only these (annotation.batching) and the saving counts the rest (crowd.work.savings)."""
    return propositions.exclude(REMOVED)


def topics_built(topics: QuerySet[Topic]) -> QuerySet[Topic]:
    """The topics whose Likert round is built: the filter can no longer change what it asks."""
    return topics.filter(batches__kind=Batch.Kind.LIKERT).distinct()


def topics_filterable(topics: QuerySet[Topic]) -> QuerySet[Topic]:
    return topics.exclude(batches__kind=Batch.Kind.LIKERT)
