"""factory_boy factories for the data model, shared by every test module.

Defaults follow the paper (5 propositions and 5 assignments per HIT). Factories build only
what they are asked for: a `TaskFactory` has no propositions unless given some, e.g.
`TaskFactory(propositions=PropositionFactory.create_batch(5, topic=topic))`.
"""

import factory
from django.utils import timezone

from annotation.models import Batch, Campaign, Proposition, Task, TaskItem, Topic
from annotation.text import normalize_text, proposition_text
from crowd.models import HIT, Assignment, Worker, WorkerQuality


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Campaign

    name = factory.Sequence(lambda n: f"Campaign {n}")
    slug = factory.Sequence(lambda n: f"campaign-{n}")
    # New campaigns default to participant links; most tests exercise the MTurk path, on the
    # local endpoint, and say so when they want another channel.
    channel = Campaign.Channel.MTURK


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Topic

    campaign = factory.SubFactory(CampaignFactory)
    key = factory.Sequence(lambda n: f"topic-{n}")
    description = factory.Sequence(lambda n: f"student loans without credit history ({n})")
    state = Topic.State.LIKERT


class PropositionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Proposition

    topic = factory.SubFactory(TopicFactory)
    subject = factory.Sequence(lambda n: f"Lender {n}")
    relation = "offers"
    object = factory.Sequence(lambda n: f"loans to students with no credit record, variant {n}")
    # The importer's duplicate key, so factory rows behave like imported ones.
    normalized = factory.LazyAttribute(lambda p: normalize_text(proposition_text(p.subject, p.relation, p.object)))
    trap_kind = Proposition.TrapKind.NONE

    class Params:
        # `obvious_trap=True`: a trap sentence, as the campaign's obvious traps are stored.
        obvious_trap = factory.Trait(
            subject="This sentence is not important", relation="", object="", trap_kind=Proposition.TrapKind.OBVIOUS
        )


class BatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Batch

    topic = factory.SubFactory(TopicFactory)
    kind = Batch.Kind.LIKERT
    number = factory.Sequence(lambda n: n + 1)


class TaskFactory(factory.django.DjangoModelFactory):
    """A task; pass `propositions=[...]` to fill its slots in that order."""

    class Meta:
        model = Task
        skip_postgeneration_save = True

    batch = factory.SubFactory(BatchFactory)
    kind = factory.SelfAttribute("batch.kind")
    position = factory.Sequence(lambda n: n)
    assignments_needed = 5

    @factory.post_generation
    def propositions(task, create, extracted, **kwargs):
        if not create or not extracted:
            return
        TaskItem.objects.bulk_create(
            TaskItem(task=task, proposition=proposition, position=index) for index, proposition in enumerate(extracted)
        )


class WorkerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Worker
        django_get_or_create = ("channel", "external_id")

    channel = Campaign.Channel.MTURK
    external_id = factory.Sequence(lambda n: f"A{n:012d}TESTWORKER")


class WorkerQualityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WorkerQuality

    campaign = factory.SubFactory(CampaignFactory)
    worker = factory.SubFactory(WorkerFactory)


class HITFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HIT

    task = factory.SubFactory(TaskFactory)
    environment = Campaign.Environment.LOCAL
    hit_id = factory.Sequence(lambda n: f"HIT{n:017d}")
    max_assignments = 5
    reward = factory.LazyAttribute(lambda h: h.task.batch.topic.campaign.likert_reward)


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    task = factory.SubFactory(TaskFactory)
    worker = factory.SubFactory(WorkerFactory)
    assignment_id = factory.Sequence(lambda n: f"ASG{n:017d}")
    submitted_at = factory.LazyFunction(timezone.now)


def ordered_propositions(task) -> list:
    """The task's propositions in the order its page shows them."""
    return [item.proposition for item in task.items.select_related("proposition").order_by("position")]
