"""Money per campaign, in each channel's own unit: what published work may cost, and what
was paid (fees included). The only writer of crowd.LedgerEntry rows.

A channel's policy (crowd.marketplaces.registry.channel_policy) says what it charges for and
what that costs, fees included. Entries, each written once per `(kind, reference)`:

Per assignment (MTurk: reward + MTurk's fee, charged when an assignment is approved)

    committed  task:<uuid>                  publishing a task: every assignment at reward + fee
    spent      assignment:<id>:<worker>     an approved assignment (by us or auto-approval)
    released   assignment:<id>:<worker>     a rejected assignment: nothing paid
    released   hit:<id>:unfilled            slots of an expired HIT nobody filled
    released   task:<uuid>:unpublished      a task of an expired batch that never got its HIT

Per submission (Prolific: one participant's session at the study's reward + the service
fee; Prolific takes the cost of a study's places when they are published or added, pays a
submission when it is approved, and gives back what no approved submission used when the
study completes. A study is a topic's round and grows with each batch: each batch's
commitment is the places it adds, booked to it, crowd.marketplaces.prolific.study_opening)

    committed  batch:<id>:places:<n>        the batch's n places, added to its round's study
                                            (its quote); a raise the researcher approved: the
                                            study raised to n places, booked to its newest
                                            open batch
    spent      submission:<id>              an approved submission (by us, by hand or by Prolific)
    released   study:<id>:places:unused     the study completed after its round ended: places
                                            never approved (not taken, returned, timed out or
                                            rejected — Prolific reopens a rejected submission's
                                            place, so its money stays committed until then)
    released   batch:<id>:places:unopened   an expired batch whose places never opened

Nothing (participant links): no entries. Bonuses, on every paying channel:

    bonus      bonus:<token>                a bonus plus the channel's fee on it

A publish that fails before its work reaches the marketplace withdraws what it committed for
that work (`batch_commit_withdraw`: the entries are deleted, as if never committed).

Committed − released − spent is what the channel still holds (MTurk: nothing once every
HIT is complete; Prolific: the reserve of the studies not yet completed).

Committed (net) = committed − released + bonus: the most the campaign can end up paying
for what it published, and what the budget cap bounds: publishing (crowd.work.publishing) and
granting a bonus (crowd.work.review) are refused with BudgetExceeded when they would take it,
together with bonuses granted but not yet paid, over the cap. Spent = spent + bonus. Writers
hold a row lock on what the entry is about (the campaign, HIT, assignment or bonus), so
the existence check before the insert cannot race.
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet, Sum

from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.marketplaces.base import CENT, PaymentUnit
from crowd.marketplaces.registry import channel_policy
from crowd.models import HIT, Bonus, LedgerEntry, Study, StudyBatch

Kind = LedgerEntry.Kind
ZERO = Decimal("0.00")


class BudgetExceeded(ApplicationError):
    code = "budget_exceeded"


@dataclass(frozen=True)
class Money:
    committed: Decimal
    spent: Decimal
    cap: Decimal


def campaign_money(*, campaign: Campaign) -> Money:
    entries = LedgerEntry.objects.filter(campaign=campaign).values("kind").annotate(total=Sum("amount"))
    return _money(dict(entries.values_list("kind", "total")), cap=campaign.budget_cap)


def campaigns_money(*, campaigns: Iterable[Campaign]) -> dict[int, Money]:
    """`campaign_money` of each campaign, in one query (for list pages)."""
    campaigns = list(campaigns)
    totals: dict[int, dict[str, Decimal]] = {campaign.pk: {} for campaign in campaigns}
    entries = LedgerEntry.objects.filter(campaign__in=campaigns).values("campaign_id", "kind")
    for campaign_id, kind, total in entries.annotate(total=Sum("amount")).values_list("campaign_id", "kind", "total"):
        totals[campaign_id][kind] = total
    return {campaign.pk: _money(totals[campaign.pk], cap=campaign.budget_cap) for campaign in campaigns}


def _money(totals: dict[str, Decimal], *, cap: Decimal) -> Money:
    # SQLite sums decimals through floats: back to cents.
    committed, released, spent, bonus = (
        (totals.get(kind) or ZERO).quantize(CENT) for kind in (Kind.COMMITTED, Kind.RELEASED, Kind.SPENT, Kind.BONUS)
    )
    return Money(committed=committed - released + bonus, spent=spent + bonus, cap=cap)


def entry_record(*, campaign_id: int, kind: str, reference: str, amount: Decimal, note: str = "") -> bool:
    """Write the entry unless one with this kind and reference exists; True when written.

    The writers' row locks make the check exact; the unique constraint
    (ledger_unique_reference) stands behind it, so a writer that forgot its lock records
    nothing twice either."""
    if amount <= 0 or LedgerEntry.objects.filter(campaign_id=campaign_id, kind=kind, reference=reference).exists():
        return False
    try:
        with transaction.atomic():
            LedgerEntry.objects.create(
                campaign_id=campaign_id, kind=kind, reference=reference, amount=amount, note=note
            )
    except IntegrityError:
        return False
    return True


def task_reference(task_uuid: UUID | str) -> str:
    return f"task:{task_uuid}"


def assignment_reference(*, assignment_id: str, worker_id: str) -> str:
    return f"assignment:{assignment_id}:{worker_id}"


def places_reference(*, batch_id: int, places: int | str) -> str:
    return f"batch:{batch_id}:places:{places}"


def submission_reference(submission_id: str) -> str:
    return f"submission:{submission_id}"


# ---- Publishing: what a batch commits, and the budget check ----------------------------------


@dataclass(frozen=True)
class Commitment:
    reference: str
    amount: Decimal
    note: str


def batch_commitments(*, batch: Batch) -> list[Commitment]:
    """What publishing `batch` commits beyond what is committed already, in its channel's
    unit: every assignment of each task without a HIT (per assignment), the places of the
    batch's study (per submission), nothing (links). Reads only."""
    campaign = batch.topic.campaign
    policy = channel_policy(campaign.channel)
    committed = campaign.ledger.filter(kind=Kind.COMMITTED)
    if policy.unit == PaymentUnit.ASSIGNMENT:
        reward = campaign.reward_for(batch.kind)
        tasks = {task_reference(task.uuid): task for task in batch.tasks.filter(hit__isnull=True).order_by("position")}
        known = set(committed.filter(reference__in=list(tasks)).values_list("reference", flat=True))
        wanted = [
            Commitment(
                reference=reference,
                amount=task.assignments_needed
                * policy.assignment_cost(reward=reward, max_assignments=task.assignments_needed),
                note=f"{task.assignments_needed} assignments at ${reward}, {batch}",
            )
            for reference, task in tasks.items()
            if reference not in known
        ]
    elif policy.unit == PaymentUnit.SUBMISSION:
        opened = committed.filter(reference__startswith=places_reference(batch_id=batch.pk, places="")).exists()
        opening = None if opened else policy.opening(batch=batch)
        wanted = (
            []
            if opening is None
            else [
                Commitment(
                    reference=places_reference(batch_id=batch.pk, places=opening.places),
                    amount=opening.places * policy.submission_cost(reward=opening.reward),
                    note=f"{opening.places} {policy.short_name} places at {policy.money_wording(opening.reward)} "
                    f"a submission, {batch}",
                )
            ]
        )
    else:
        wanted = []
    return [commitment for commitment in wanted if commitment.amount > 0]


def batch_cost(*, batch: Batch) -> Decimal:
    """What publishing `batch` would commit now, fees included."""
    return sum((commitment.amount for commitment in batch_commitments(batch=batch)), ZERO)


@dataclass(frozen=True)
class BudgetPreview:
    """What the one budget check says of `cost` now, with its figures: the command's dry run,
    the dashboard's publish page and every refusal read the same value."""

    cost: Decimal
    committed: Decimal  # the campaign's net commitment before
    pending_bonuses: Decimal  # granted, not paid yet: promised, so counted
    cap: Decimal
    refusal: BudgetExceeded | None  # what publishing (or the grant, or the places) would raise

    @property
    def after(self) -> Decimal:
        """Everything the campaign would then owe at most, bonuses granted included."""
        return self.committed + self.pending_bonuses + self.cost

    @property
    def fits(self) -> bool:
        return self.refusal is None

    @property
    def shortfall(self) -> Decimal:
        return max(ZERO, self.after - self.cap)


def budget_preview(*, campaign: Campaign, cost: Decimal, what: str, remedy: str) -> BudgetPreview:
    """The one budget rule: `cost` fits when, beside the campaign's net commitment and the
    bonuses granted but not paid yet, it stays within the cap. Reads only; `budget_check`
    raises its refusal, and the previews (the `publish` command's dry run, the dashboard's
    publish page) show it, so a preview says "fits" exactly when the check lets it pass."""
    money = campaign_money(campaign=campaign)
    pending = bonuses_pending(campaign=campaign)
    after = money.committed + pending + cost
    refusal = None
    if after > money.cap:
        shortfall = after - money.cap
        policy = channel_policy(campaign.channel)
        amount = policy.money_wording  # in the channel's currency, two decimals
        refusal = BudgetExceeded(
            f"{what} costs {amount(cost)} with {policy.short_name} fees; {amount(money.committed)} is "
            "already committed"
            + (f" and {amount(pending)} of bonuses is granted but not paid yet" if pending else "")
            + f", and the budget cap of campaign {campaign.slug} is {amount(money.cap)}: {amount(shortfall)} short. {remedy}",
            details={
                "cost": str(cost),
                "committed": str(money.committed),
                "pending_bonuses": str(pending),
                "cap": str(money.cap),
                "shortfall": str(shortfall),
            },
        )
    return BudgetPreview(cost=cost, committed=money.committed, pending_bonuses=pending, cap=money.cap, refusal=refusal)


def budget_check(*, campaign: Campaign, cost: Decimal, what: str, remedy: str) -> None:
    """Refuse `cost` (BudgetExceeded, with the figures) when `budget_preview` says it does not
    fit. Publishing, raising a study's places and granting a bonus all ask it; the caller
    holds a lock on the campaign."""
    preview = budget_preview(campaign=campaign, cost=cost, what=what, remedy=remedy)
    if preview.refusal is not None:
        raise preview.refusal


def publishing_what(*, hits: int, what: object) -> str:
    """How a refusal names a publish, for publishing and its previews alike."""
    return f"Publishing {hits} HITs of {what}"


PUBLISH_REMEDY = "Raise the budget cap or publish fewer tasks."


@transaction.atomic
def batch_commit(*, batch_id: int) -> Decimal:
    """Commit what publishing the batch costs, or refuse with the figures (nothing written)."""
    batch = Batch.objects.select_related("topic__campaign").get(pk=batch_id)
    campaign = Campaign.objects.select_for_update().get(pk=batch.topic.campaign_id)
    commitments = batch_commitments(batch=batch)
    cost = sum((commitment.amount for commitment in commitments), ZERO)
    hits = batch.tasks.filter(hit__isnull=True).count()
    budget_check(
        campaign=campaign,
        cost=cost,
        what=publishing_what(hits=hits, what=batch),
        remedy=PUBLISH_REMEDY,
    )
    LedgerEntry.objects.bulk_create(
        LedgerEntry(campaign=campaign, kind=Kind.COMMITTED, reference=c.reference, amount=c.amount, note=c.note)
        for c in commitments
    )
    return cost


@dataclass(frozen=True)
class Withdrawal:
    withdrawn: Decimal  # committed for work that never reached the marketplace, now taken back
    kept: Decimal  # committed for work that may have reached it, left as it is


@transaction.atomic
def batch_commit_withdraw(
    *, batch_id: int, uncertain_tasks: Collection[UUID] = (), opening_uncertain: bool = False
) -> Withdrawal:
    """A publish that failed: take back what `batch_commit` committed for work that never
    reached the marketplace, so a failed publish leaves no commitment for work not on offer.

    Kept: every task with a HIT; `uncertain_tasks`, those whose request may have reached the
    marketplace before the failure (a re-run finds its HIT by its token, or the batch's expiry
    releases it); on a submission channel the places of a study that may be open (published,
    or `opening_uncertain`). The entries are deleted, not released: they never took effect,
    and a re-run commits them again under the same references.
    (A concurrent publish of the same batch that succeeds where this one failed would find
    its tasks uncommitted; both runs reach the same marketplace, so this is not expected.)"""
    batch = Batch.objects.select_related("topic__campaign").get(pk=batch_id)
    campaign = Campaign.objects.select_for_update().get(pk=batch.topic.campaign_id)
    committed = campaign.ledger.filter(kind=Kind.COMMITTED)
    unit = channel_policy(campaign.channel).unit
    kept = committed.none()
    if unit == PaymentUnit.ASSIGNMENT:
        unpublished = [task_reference(u) for u in batch.tasks.filter(hit__isnull=True).values_list("uuid", flat=True)]
        entries = committed.filter(reference__in=unpublished)
        if uncertain_tasks:
            references = [task_reference(uuid) for uuid in uncertain_tasks]
            kept = entries.filter(reference__in=references)
            entries = entries.exclude(reference__in=references)
    elif unit == PaymentUnit.SUBMISSION:
        entries = committed.filter(reference__startswith=places_reference(batch_id=batch.pk, places=""))
        if StudyBatch.objects.filter(batch=batch, opened_at__isnull=False).exists():
            entries = committed.none()  # its places are on offer in its round's study
        elif opening_uncertain:
            entries, kept = committed.none(), entries
    else:
        return Withdrawal(withdrawn=ZERO, kept=ZERO)
    withdrawal = Withdrawal(
        withdrawn=sum(entries.values_list("amount", flat=True), ZERO),
        kept=sum(kept.values_list("amount", flat=True), ZERO),
    )
    entries.delete()
    return withdrawal


@transaction.atomic
def batch_unpublished_released(*, batch_id: int) -> None:
    """An expired batch: release what was committed for work that never went on offer (tasks
    without a HIT; the places of a study that never opened)."""
    batch = Batch.objects.select_for_update().select_related("topic__campaign").get(pk=batch_id)
    campaign = batch.topic.campaign
    committed = campaign.ledger.filter(kind=Kind.COMMITTED)
    unit = channel_policy(campaign.channel).unit
    if unit == PaymentUnit.ASSIGNMENT:
        references = {task_reference(task.uuid) for task in batch.tasks.filter(hit__isnull=True)}
        for reference, amount in committed.filter(reference__in=references).values_list("reference", "amount"):
            entry_record(
                campaign_id=campaign.pk,
                kind=Kind.RELEASED,
                reference=f"{reference}:unpublished",
                amount=amount,
                note=f"never published, {batch}",
            )
    elif (
        unit == PaymentUnit.SUBMISSION and not StudyBatch.objects.filter(batch=batch, opened_at__isnull=False).exists()
    ):
        places = committed.filter(reference__startswith=places_reference(batch_id=batch.pk, places=""))
        entry_record(
            campaign_id=campaign.pk,
            kind=Kind.RELEASED,
            reference=places_reference(batch_id=batch.pk, places="unopened"),
            amount=places.aggregate(total=Sum("amount"))["total"] or ZERO,
            note=f"the study never opened, {batch}",
        )


# ---- Per assignment ----------------------------------------------------------------------------


def _per_assignment(hit: HIT) -> bool:
    return channel_policy(hit.channel).unit == PaymentUnit.ASSIGNMENT


def _assignment_cost(hit: HIT) -> Decimal:
    return channel_policy(hit.channel).assignment_cost(reward=hit.reward, max_assignments=hit.max_assignments)


def assignment_paid(*, campaign_id: int, hit: HIT, assignment_id: str, worker_id: str) -> bool:
    """An approved assignment: reward + fee spent (channels paid per assignment)."""
    review = AssignmentReview(campaign_id, hit, assignment_id, worker_id, approved=True)
    return _per_assignment(hit) and _entry_write(_review_entry(review))


def assignment_unpaid(*, campaign_id: int, hit: HIT, assignment_id: str, worker_id: str) -> bool:
    """A rejected assignment: its commitment is released (channels paid per assignment)."""
    review = AssignmentReview(campaign_id, hit, assignment_id, worker_id, approved=False)
    return _per_assignment(hit) and _entry_write(_review_entry(review))


def unfilled_released(*, campaign_id: int, hit: HIT, unfilled: int) -> bool:
    """Slots of a HIT that closed before every assignment was taken."""
    return _per_assignment(hit) and _entry_write(_unfilled_entry(campaign_id=campaign_id, hit=hit, unfilled=unfilled))


@dataclass(frozen=True)
class AssignmentReview:
    """An assignment its marketplace approved (paid) or rejected (its commitment released)."""

    campaign_id: int
    hit: HIT
    assignment_id: str
    worker_id: str
    approved: bool


def assignments_reviewed(*, reviews: Iterable[AssignmentReview]) -> None:
    """`assignment_paid` / `assignment_unpaid` of many assignments in one INSERT (sync's bulk
    path); the caller holds their HITs' row locks. An entry written before is skipped by the
    database (ledger_unique_reference), so each is still money once."""
    _entries_write([_review_entry(review) for review in reviews if _per_assignment(review.hit)])


def hits_unfilled_released(*, unfilled: Iterable[tuple[int, HIT, int]]) -> None:
    """`unfilled_released` of many (campaign id, HIT, slots nobody took) in one INSERT."""
    entries = (_unfilled_entry(campaign_id=c, hit=hit, unfilled=n) for c, hit, n in unfilled if _per_assignment(hit))
    _entries_write(list(entries))


def _review_entry(review: AssignmentReview) -> LedgerEntry:
    return LedgerEntry(
        campaign_id=review.campaign_id,
        kind=Kind.SPENT if review.approved else Kind.RELEASED,
        reference=assignment_reference(assignment_id=review.assignment_id, worker_id=review.worker_id),
        amount=_assignment_cost(review.hit),
        note=f"{'approved' if review.approved else 'rejected'}, HIT {review.hit.hit_id}",
    )


def _unfilled_entry(*, campaign_id: int, hit: HIT, unfilled: int) -> LedgerEntry:
    return LedgerEntry(
        campaign_id=campaign_id,
        kind=Kind.RELEASED,
        reference=f"hit:{hit.hit_id}:unfilled",
        amount=unfilled * _assignment_cost(hit),
        note=f"{unfilled} assignment(s) never taken",
    )


def _entry_write(entry: LedgerEntry) -> bool:
    return entry_record(
        campaign_id=entry.campaign_id, kind=entry.kind, reference=entry.reference, amount=entry.amount, note=entry.note
    )


def _entries_write(entries: list[LedgerEntry]) -> None:
    entries = [entry for entry in entries if entry.amount > 0]
    if entries:
        LedgerEntry.objects.bulk_create(entries, ignore_conflicts=True)


# ---- Per submission ----------------------------------------------------------------------------


def _submission_cost(study: Study) -> Decimal:
    policy = channel_policy(study.topic.campaign.channel)
    return policy.submission_cost(reward=Decimal(study.reward_cents) * CENT)


def _batch_places(campaign: Campaign, batch_ids: Iterable[int]) -> "QuerySet[LedgerEntry]":
    """The commitments of the batches' places (their quotes and the raises booked to them)."""
    committed = campaign.ledger.filter(kind=Kind.COMMITTED)
    query = Q()
    for batch_id in batch_ids:
        query |= Q(reference__startswith=places_reference(batch_id=batch_id, places=""))
    return committed.filter(query) if query else committed.none()


def _places_committed(study: Study) -> Decimal:
    """What the study's places committed: every batch whose places it opened, raises included
    (a batch whose places never opened is withdrawn or released on its own)."""
    batch_ids = study.batch_links.filter(opened_at__isnull=False).values_list("batch_id", flat=True)
    return _batch_places(study.topic.campaign, batch_ids).aggregate(total=Sum("amount"))["total"] or ZERO


@transaction.atomic
def study_places_commit(*, study: Study, places: int) -> Decimal:
    """Before a study is raised to `places`: commit the places added, or refuse with the
    figures. Idempotent per total; what is committed already is not committed again."""
    campaign = Campaign.objects.select_for_update().get(pk=study.topic.campaign_id)
    cost = _submission_cost(study)
    newest = study.batch_links.filter(batch__status=Batch.Status.PUBLISHED).order_by("-places_to", "-pk").first()
    booked_to = newest or study.batch_links.order_by("-places_to", "-pk").first()
    assert booked_to is not None, "a study has the batch that opened it"
    added = (places * cost - _places_committed(study)).quantize(CENT)
    if added <= 0:
        return ZERO
    budget_check(
        campaign=campaign,
        cost=added,
        what=f"Raising study {study} to {places} places",
        remedy="Raise the budget cap; the study keeps its places until then.",
    )
    entry_record(
        campaign_id=campaign.pk,
        kind=Kind.COMMITTED,
        reference=places_reference(batch_id=booked_to.batch_id, places=places),
        amount=added,
        note=f"study {study} raised to {places} places",
    )
    return added


def submissions_paid(*, study: Study, submission_ids: Collection[str]) -> int:
    """Approved submissions (by us, by hand at the channel, or by their auto-approval): the
    session reward + fee spent for each not booked before; how many were booked now. Under the
    study's lock, one read of the entries booked and one insert, however many a sync lists
    (it lists every paid submission of the study at every pass)."""
    references = {submission_reference(submission_id) for submission_id in submission_ids}
    amount = _submission_cost(study) if references else Decimal(0)
    if amount <= 0:
        return 0
    campaign_id = study.topic.campaign_id
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        booked = LedgerEntry.objects.filter(campaign_id=campaign_id, kind=Kind.SPENT, reference__in=references)
        new = sorted(references - set(booked.values_list("reference", flat=True)))
        LedgerEntry.objects.bulk_create(
            LedgerEntry(
                campaign_id=campaign_id,
                kind=Kind.SPENT,
                reference=reference,
                amount=amount,
                note=f"approved submission, study {study}",
            )
            for reference in new
        )
    return len(new)


def study_closed(*, study: Study, approved: int) -> bool:
    """The study completed after its round ended: the channel gives back every place no approved
    submission used."""
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        return entry_record(
            campaign_id=study.topic.campaign_id,
            kind=Kind.RELEASED,
            reference=f"study:{study.pk}:places:unused",
            amount=_places_committed(study) - approved * _submission_cost(study),
            note=f"study {study} completed with {approved} approved submission(s)",
        )


@dataclass(frozen=True)
class BatchPlaces:
    batch: Batch
    places: int  # the places it added to its round's study (its quote)
    committed: Decimal  # booked to it: its quote, and raises approved while it was the newest
    opened: bool  # on offer at Prolific


@dataclass(frozen=True)
class StudyMoney:
    """A study of the campaign with its round's batches and what each committed, and what its
    approved submissions were charged: the Channel page's table, in the channel's currency."""

    study: Study
    batches: list[BatchPlaces]
    committed: Decimal
    charged: Decimal


def campaign_studies(*, campaign: Campaign) -> list[StudyMoney]:
    """The campaign's studies, oldest first, each with its batches and money (a few queries)."""
    studies = list(Study.objects.of_campaign(campaign).select_related("topic").order_by("pk"))
    links = StudyBatch.objects.filter(study__in=studies).select_related("batch__topic").order_by("places_to", "pk")
    committed: dict[int, Decimal] = {}
    for reference, amount in campaign.ledger.filter(kind=Kind.COMMITTED, reference__startswith="batch:").values_list(
        "reference", "amount"
    ):
        batch_id = int(reference.split(":")[1])
        committed[batch_id] = committed.get(batch_id, ZERO) + amount
    spent = dict(campaign.ledger.filter(kind=Kind.SPENT).values_list("reference", "amount"))
    submissions: dict[int, list[str]] = {}
    sessions = campaign.work_sessions.filter(study__in=studies).exclude(submission_id="")
    for study_id, submission_id in sessions.values_list("study_id", "submission_id"):
        submissions.setdefault(study_id, []).append(submission_reference(submission_id))
    by_study: dict[int, list[BatchPlaces]] = {}
    for link in links:
        row = BatchPlaces(
            batch=link.batch,
            places=link.places,
            committed=committed.get(link.batch_id, ZERO),
            opened=link.opened_at is not None,
        )
        by_study.setdefault(link.study_id, []).append(row)
    return [
        StudyMoney(
            study=study,
            batches=by_study.get(study.pk, []),
            committed=sum((row.committed for row in by_study.get(study.pk, [])), ZERO),
            charged=sum((spent.get(reference, ZERO) for reference in submissions.get(study.pk, [])), ZERO),
        )
        for study in studies
    ]


# ---- Bonuses -----------------------------------------------------------------------------------


def bonus_cost(*, amount: Decimal, channel: str) -> Decimal:
    """A bonus plus the channel's fee on it."""
    return channel_policy(channel).bonus_cost(amount)


def bonus_paid(*, campaign_id: int, bonus: Bonus) -> bool:
    return entry_record(
        campaign_id=campaign_id,
        kind=Kind.BONUS,
        reference=f"bonus:{bonus.token}",
        amount=bonus_cost(amount=bonus.amount, channel=bonus.assignment.worker.channel),
        note=f"bonus {bonus.amount} to {bonus.assignment.worker}",
    )


def bonuses_pending(*, campaign: Campaign) -> Decimal:
    """Bonuses granted in the campaign but not paid yet, with their fees: not in the ledger
    until paid, but already promised. A bonus the marketplace refused is promised no longer."""
    pending = Bonus.objects.filter(
        assignment__task__batch__topic__campaign=campaign, sent_at__isnull=True, refused_at__isnull=True
    )
    return sum(
        (
            bonus_cost(amount=amount, channel=channel)
            for amount, channel in pending.values_list("amount", "assignment__worker__channel")
        ),
        ZERO,
    )
