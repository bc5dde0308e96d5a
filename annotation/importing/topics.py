"""The topics an import writes into: looked up (and locked) on first sight, created with their
first proposition, closed to new ones once their Likert round is built. An import holds its
campaign's row lock, so two imports into one campaign run one after the other (each sees the
other's topics and texts), and each topic it met keeps its row lock, so the pipeline cannot
build the topic's Likert round until the import has committed or rolled back.

A topic comes into being only with a proposition: a key whose rows all fall below the
confidence threshold, or one that only the topics file names, creates nothing, since an empty
topic would only block publishing. A topic whose Likert round is built (published, in its
comparison rounds, or done) takes no new proposition: it would never be rated, and a finished
ranking would silently gain rows with empty scores. Importing them under a new topic key ranks
them; reopening a topic for a second round is the pipeline's to decide (it is the one writer of
`Topic.state`), not an import's. The description of such a topic is what its workers read, so
a topics file cannot change it either.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, QuerySet

from annotation.importing.problems import ProblemLog
from annotation.models import Batch, Campaign, Proposition, Topic

_CLOSED_STATES: dict[str, str] = {
    Topic.State.LIKERT: "it is in its Likert round",
    Topic.State.COMPARISONS: "it is in its comparison rounds",
    Topic.State.DONE: "it is done: its ranking is final",
}


@dataclass
class OpenTopic:
    pk: int
    closed: str  # why the topic takes no new propositions; "" when it takes them
    # Normalized texts in the topic or kept by this import, in UTF-8: half the memory of str
    # for texts with a non-Latin-1 character, which each proposition has (its " – ").
    seen: set[bytes] = field(default_factory=set)
    # The propositions the topic had before this import: normalized text → (pk, external_id),
    # and the ids among them, so a file that brings ids fills in the missing ones (importers.py).
    existing: dict[bytes, tuple[int, str]] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)
    met: set[bytes] = field(default_factory=set)  # existing texts this import's rows have repeated


def topics_with_likert_built(topics: QuerySet[Topic]) -> QuerySet[Topic]:
    """`topics`, each with `likert_built` (whether its Likert batch exists), as `_closed_reason`
    reads it: in the same query, so a page of topics costs nothing more."""
    likert = Batch.objects.filter(topic=OuterRef("pk"), kind=Batch.Kind.LIKERT)
    return topics.annotate(likert_built=Exists(likert))


def _locked_topics(campaign: Campaign, keys) -> list[Topic]:
    """The campaign's topics of `keys`, row-locked, each with `likert_built`."""
    topics = Topic.objects.select_for_update().filter(campaign=campaign, key__in=keys)
    return list(topics_with_likert_built(topics).order_by("pk"))


def _closed_reason(topic: Topic) -> str:
    """Why `topic` (with `likert_built`: topics_with_likert_built) takes no new propositions; ""
    when it takes them."""
    if topic.state in _CLOSED_STATES:
        return _CLOSED_STATES[topic.state]
    return "its Likert round is built" if topic.likert_built else ""  # type: ignore[attr-defined]  # annotated


class TopicRegistry:
    """The campaign's topics met by one import (its proposition and trap files), with the
    descriptions of its topics file: {key: (line, description)}."""

    def __init__(
        self,
        *,
        campaign: Campaign,
        descriptions: dict[str, tuple[int, str]],
        descriptions_file: str,
        problems: ProblemLog,
        created: list[str],
    ):
        self.campaign = campaign
        self.descriptions = descriptions
        self.descriptions_file = descriptions_file
        self.problems = problems
        self.created = created
        self.topics: dict[str, OpenTopic] = {}  # by key: those opened so far
        Campaign.objects.select_for_update().filter(pk=campaign.pk).exists()
        self.existing = set(Topic.objects.filter(campaign=campaign).values_list("key", flat=True))

    def knows(self, key: str) -> bool:
        return key in self.topics

    def open(self, keys: Iterable[str]) -> None:
        """Open the topics of `keys` (in their order) that are not open yet, with a few queries
        for all of them: the campaign's are locked, the others created (the caller opens a topic
        only for a proposition it may keep)."""
        keys = [key for key in dict.fromkeys(keys) if key not in self.topics]
        locked = {topic.key: topic for topic in _locked_topics(self.campaign, [k for k in keys if k in self.existing])}
        opened = {topic.pk: OpenTopic(topic.pk, closed=_closed_reason(topic)) for topic in locked.values()}
        texts = Proposition.objects.filter(topic__in=list(opened)).values_list(
            "topic_id", "normalized", "pk", "external_id"
        )
        for topic_id, text, pk, external_id in texts.iterator(chunk_size=10_000) if opened else ():
            into, encoded = opened[topic_id], text.encode()
            into.seen.add(encoded)
            into.existing[encoded] = (pk, external_id)
            if external_id:
                into.ids.add(external_id)
        for topic in locked.values():
            self.topics[topic.key] = opened[topic.pk]
            self._describe(topic, opened[topic.pk].closed)
        new = [key for key in keys if key not in locked]
        if new:
            Topic.objects.bulk_create(
                Topic(campaign=self.campaign, key=key, description=self.descriptions.get(key, (0, ""))[1])
                for key in new
            )
            created = Topic.objects.filter(campaign=self.campaign, key__in=new).values_list("key", "pk")
            self.topics.update((key, OpenTopic(pk, closed="")) for key, pk in created)
            self.created.extend(new)

    def describe_the_rest(self, *, imported: str) -> list[str]:
        """Apply the topics file's descriptions of the campaign's topics this import did not
        open; a key the campaign does not have is reported (warnings), and creates nothing."""
        rest = [key for key in self.descriptions if key not in self.topics]
        existing = {
            topic.key: topic for topic in _locked_topics(self.campaign, [k for k in rest if k in self.existing])
        }
        warnings = []
        for key in rest:
            if key in existing:
                self._describe(existing[key], _closed_reason(existing[key]))
                continue
            line = self.descriptions[key][0]
            warnings.append(
                f"{self.descriptions_file}:{line} [key]: the campaign has no topic {key!r} and {imported} has no "
                "proposition for it, so its description was not used and no topic was created"
            )
        return warnings

    def _describe(self, topic: Topic, closed: str) -> None:
        line, description = self.descriptions.get(topic.key, (0, ""))
        if not description or description == topic.description:
            return
        if closed:
            self.problems.add(
                f"{self.descriptions_file}:{line} [description]: the description of topic {topic.key!r} cannot "
                f"change ({closed}): it is what its workers read"
            )
            return
        topic.description = description
        topic.save(update_fields=["description"])
