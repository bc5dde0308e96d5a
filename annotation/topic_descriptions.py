"""A topic's description: what its workers read above every statement of its HITs.

It changes freely until the topic's Likert round is built; from then on it is fixed, by the
same rule an import's topics file follows (annotation.importing.topics): workers who
already rated the topic read the old text, so a new one would mix two questions in one
ranking. To ask about it differently, import the propositions under a new topic key.
"""

from django.db import transaction

# The import's rule of when a topic closes, used as it is (one definition).
from annotation.importing.topics import _closed_reason as closed_reason
from annotation.importing.topics import _locked_topics as locked_topics
from annotation.models import Topic
from config.errors import ApplicationError, Conflict

DESCRIPTION_MAX_CHARS = 1000  # a sentence or two: it sits above every statement of a HIT


def topic_description_refusal(topic: Topic) -> str:
    """Why a new description of `topic` would be refused ("" when saving it would be accepted):
    the rule topic_description_set applies, read without a lock, for the pages that offer the
    form only where saving would go ahead. `topic` comes with `likert_built`
    (annotation.importing.topics.topics_with_likert_built, as the campaign page's topics do)."""
    closed = closed_reason(topic)
    return _fixed_message(topic, closed) if closed else ""


def _fixed_message(topic: Topic, closed: str) -> str:
    return (
        f"The description of topic {topic.key!r} can no longer change ({closed}): it is what its workers read. "
        "Import its propositions under a new topic key to ask about it differently."
    )


@transaction.atomic
def topic_description_set(*, topic_id: int, description: str) -> Topic:
    """Set the description of a topic that has not started its Likert round, under the topic's
    row lock (an import or the pipeline building the round waits). Refused with a Conflict
    (409, `description_fixed`) once the round is built, and with `description_invalid` when
    the text is empty or longer than DESCRIPTION_MAX_CHARS; nothing is written then."""
    text = " ".join(description.split())
    if not text:
        raise ApplicationError(
            "A topic needs a description: it is all its workers are told about the topic.",
            code="description_invalid",
        )
    if len(text) > DESCRIPTION_MAX_CHARS:
        raise ApplicationError(
            f"The description has {len(text)} characters; keep it under {DESCRIPTION_MAX_CHARS}: "
            "workers read it above every statement.",
            code="description_invalid",
        )
    topic = Topic.objects.select_related("campaign").get(pk=topic_id)
    (locked,) = locked_topics(topic.campaign, [topic.key])
    closed = closed_reason(locked)
    if closed and text != locked.description:
        raise Conflict(_fixed_message(locked, closed), code="description_fixed")
    if text != locked.description:
        locked.description = text
        locked.save(update_fields=["description"])
    return locked
