"""Labels in the database for the quality-control tests: a topic's propositions, tasks,
assignments, Likert labels and comparison votes, built in bulk from plain tuples."""

from itertools import combinations

from django.utils import timezone

from annotation.models import Batch, Proposition, Task
from crowd.models import Assignment, Comparison, LikertLabel
from tests.factories import BatchFactory, CampaignFactory, PropositionFactory, TopicFactory, WorkerFactory


class LabelBuilder:
    """Stores `(worker, item, score)` labels for one topic. Items become propositions named
    by `external_id`; new items go into Likert tasks of five in first-seen order; each call
    gives every worker one assignment per task it rated."""

    def __init__(self, topic):
        self.topic = topic
        self.batch = BatchFactory(topic=topic, kind=Batch.Kind.LIKERT)
        self.propositions: dict[str, Proposition] = {}
        self.task_of: dict[str, Task] = {}
        self.workers = {}
        self.assignments = 0

    def worker(self, name: str):
        if name not in self.workers:
            self.workers[name] = WorkerFactory(external_id=name)
        return self.workers[name]

    def proposition(self, item: str, trap_kind: str = Proposition.TrapKind.NONE) -> Proposition:
        if item not in self.propositions:
            self.propositions[item] = PropositionFactory(topic=self.topic, trap_kind=trap_kind, **self._text(item))
        return self.propositions[item]

    @staticmethod
    def _text(item: str) -> dict[str, str]:
        # The text depends on the item alone, so two runs of a topic share it.
        return {"external_id": item, "subject": f"Statement {item}", "relation": "matters", "object": ""}

    def _propositions_create(self, items: list[str], traps) -> None:
        """`proposition` for many new items in one INSERT (a simulated round has a thousand)."""
        built = [
            PropositionFactory.build(
                topic=self.topic, trap_kind=traps.get(item, Proposition.TrapKind.NONE), **self._text(item)
            )
            for item in items
        ]
        self.propositions.update(zip(items, Proposition.objects.bulk_create(built), strict=True))

    def likert(
        self, labels, traps=None, verification=Assignment.Verification.VERIFIED, status=Assignment.Status.SUBMITTED
    ) -> list[Assignment]:
        traps = traps or {}
        new = [item for item in dict.fromkeys(item for _, item, _ in labels) if item not in self.task_of]
        tasks = Task.objects.bulk_create(
            Task(batch=self.batch, kind=Batch.Kind.LIKERT, position=len(self.task_of) + start)
            for start in range(0, len(new), 5)
        )
        self._propositions_create([item for item in new if item not in self.propositions], traps)
        for start, task in zip(range(0, len(new), 5), tasks, strict=True):
            for item in new[start : start + 5]:
                self.task_of[item] = task
        keys = list(dict.fromkeys((worker, self.task_of[item].pk) for worker, item, _ in labels))
        assignments = dict(zip(keys, self._assignments(keys, verification, status, Batch.Kind.LIKERT)))
        LikertLabel.objects.bulk_create(
            LikertLabel(
                assignment=assignments[worker, self.task_of[item].pk],
                worker=self.worker(worker),
                proposition=self.propositions[item],
                score=score,
            )
            for worker, item, score in labels
        )
        return list(assignments.values())

    def ordering(
        self, worker: str, items: list[str], untouched: bool = False, verification=Assignment.Verification.VERIFIED
    ) -> Assignment:
        """One comparison assignment placing `items` best first: C(n, 2) votes."""
        batch = BatchFactory(topic=self.topic, kind=Batch.Kind.COMPARISON)
        task = Task.objects.create(batch=batch, kind=Batch.Kind.COMPARISON)
        [assignment] = self._assignments(
            [(worker, task.pk)], verification, Assignment.Status.SUBMITTED, Batch.Kind.COMPARISON, untouched=untouched
        )
        Comparison.objects.bulk_create(
            Comparison(
                assignment=assignment,
                worker=assignment.worker,
                winner=self.proposition(winner),
                loser=self.proposition(loser),
            )
            for winner, loser in combinations(items, 2)
        )
        return assignment

    def _assignments(self, keys, verification, status, kind, untouched=False) -> list[Assignment]:
        now = timezone.now()
        rows = []
        for worker, task_id in keys:
            self.assignments += 1
            rows.append(
                Assignment(
                    task_id=task_id,
                    worker=self.worker(worker),
                    assignment_id=f"{self.topic.key}-{kind}-{self.assignments}",
                    verification=verification,
                    status=status,
                    untouched=untouched,
                    submitted_at=now,
                )
            )
        return Assignment.objects.bulk_create(rows)


# Ten items whose importance is 1 + i % 5, and two traps.
TRUTH = {f"i{k}": 1 + k % 5 for k in range(10)}
TRAPS = {"trap-obvious": Proposition.TrapKind.OBVIOUS, "trap-subtle": Proposition.TrapKind.SUBTLE}


def small_crowd_labels() -> list[tuple[str, str, int]]:
    """Five good workers (g1-g5) rate every item at its importance and the traps 1;
    "rev" rates 6 − importance (r = −1) and the traps 1; "careless" rates like the good
    workers but fails both traps (5 and 4). 7 workers × 12 labels = 84 labels."""
    labels = []
    for worker in ["g1", "g2", "g3", "g4", "g5", "rev", "careless"]:
        labels += [(worker, item, 6 - t if worker == "rev" else t) for item, t in TRUTH.items()]
        labels += list(zip([worker] * 2, TRAPS, (5, 4) if worker == "careless" else (1, 1)))
    return labels


def three_topic_campaign():
    """Topic "loans": the small crowd (rev and careless excluded under a 30 % cap); topic
    "bees": three other workers who agree on every item; topic "empty": no labels. Each
    labelled topic's LabelBuilder is in `campaign.builders`."""
    campaign = CampaignFactory(qc_max_label_share=0.3)
    loans = LabelBuilder(TopicFactory(campaign=campaign, key="loans"))
    loans.likert(small_crowd_labels(), TRAPS)
    bees = LabelBuilder(TopicFactory(campaign=campaign, key="bees"))
    bees.likert([(f"b{k}", f"bee-{item}", t) for k in range(3) for item, t in TRUTH.items()])
    TopicFactory(campaign=campaign, key="empty")
    campaign.builders = {"loans": loans, "bees": bees}
    return campaign
