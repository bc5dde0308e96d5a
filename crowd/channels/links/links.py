"""Participant links: the researcher's own crowd (students, lab volunteers, experts).

A *personal* link is for one invited person: it is their identity, so whoever holds it
works as them. An *open* link is shared with a group and asks each participant for the
code the researcher gave them. Neither involves a marketplace or payment. Revoking a link
stops new sessions at once and frees the task a participant holds; answers already given
stay counted.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.links.codes import CodeRule, code_normalise, link_codes_set
from crowd.models import ParticipantLink, TaskHold, Worker, WorkerQuality, WorkSession
from crowd.sessions import holds
from crowd.sessions.consent import consent_version

Kind = ParticipantLink.Kind


def link_url(link: ParticipantLink) -> str:
    return f"{settings.SITE_URL}/s/l/{link.token}/"


@transaction.atomic
def link_create(*, campaign: Campaign, kind: str = Kind.PERSONAL, label: str = "", created_by=None) -> ParticipantLink:
    if kind not in Kind.values:
        raise ApplicationError(f"A link is personal or open, not {kind!r}.", code="invalid_link_kind")
    if campaign.channel != Campaign.Channel.LINKS:
        raise ApplicationError(
            f"Campaign {campaign.slug} recruits on {campaign.get_channel_display()}: switch its channel to "
            "participant links before creating links.",
            code="channel_mismatch",
        )
    link = ParticipantLink.objects.create(
        campaign=campaign, kind=kind, token=secrets.token_urlsafe(18), label=label.strip()[:200], created_by=created_by
    )
    if kind == Kind.PERSONAL:
        link.worker = Worker.objects.create(channel=Campaign.Channel.LINKS, external_id=f"link{link.pk}")
        link.save(update_fields=["worker"])
    return link


def links_create(*, campaign: Campaign, labels: list[str], created_by=None) -> list[ParticipantLink]:
    """One personal link per invited person (one label each, e.g. a name or an e-mail). A label
    that another personal link of the campaign has, or that the list repeats (case and spaces
    aside), is refused: two links with one label cannot be told apart on the Channel page."""
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).exists()  # one issue at a time
        _labels_check(campaign, labels)
        return [link_create(campaign=campaign, label=label, created_by=created_by) for label in labels]


def _label_key(label: str) -> str:
    return " ".join(label.split()).casefold()


def _labels_check(campaign: Campaign, labels: list[str]) -> None:
    taken = {
        _label_key(label)
        for label in ParticipantLink.objects.filter(campaign=campaign, kind=Kind.PERSONAL).values_list(
            "label", flat=True
        )
    }
    seen: set[str] = set()
    repeated: list[str] = []
    for label in labels:
        key = _label_key(label[:200])
        if key and (key in taken or key in seen):
            repeated.append(label.strip())
        seen.add(key)
    if repeated:
        raise ApplicationError(
            f"A personal link is one person: {', '.join(repr(label) for label in dict.fromkeys(repeated))} "
            f"{'is' if len(repeated) == 1 else 'are'} already the label of another link of this campaign, or "
            "repeated in the list. Give each person a label of their own (e.g. add a number or an initial); no "
            "link was made.",
            code="duplicate_link_label",
        )


def open_link_worker(*, link: ParticipantLink, code: str) -> Worker:
    """The participant an open link's code names, case and surrounding spaces aside (`P-017` and
    ` p-017 ` are one): stored as `link<id>-<code in lower case>`. A participant whose code was
    stored before codes were read this way (`link5-P-017`) is found as they were, never made
    twice; where old codes already made two workers of one participant (`P-017` and `p-017`,
    before this rule), the first made answers from now on."""
    external_id = f"link{link.pk}-{code_normalise(code)}"
    workers = Worker.objects.filter(channel=Campaign.Channel.LINKS)
    found = workers.filter(external_id=external_id).first()
    if found is None:
        found = workers.filter(external_id__iexact=external_id).order_by("pk").first()
    return found or holds.session_worker(channel=Campaign.Channel.LINKS, external_id=external_id)


def links_issue(
    *, campaign: Campaign, kind: str, labels: list[str], created_by=None, code_rule: CodeRule | None = None
) -> list[ParticipantLink]:
    """What a researcher asks for: one personal link per label, or one open link (the labels,
    joined, name it) letting in the codes of `code_rule` (None: any)."""
    if kind == Kind.OPEN:
        with transaction.atomic():
            link = link_create(campaign=campaign, kind=Kind.OPEN, label=" ".join(labels), created_by=created_by)
            if code_rule is not None:
                link_codes_set(link=link, rule=code_rule)
        return [link]
    return links_create(campaign=campaign, labels=labels, created_by=created_by)


def link_revoke(*, link: ParticipantLink, now: datetime | None = None) -> int:
    """Close the link; the number of sessions stopped."""
    now = now or timezone.now()
    with transaction.atomic():
        ParticipantLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=now)
        active = list(link.sessions.filter(status=WorkSession.Status.ACTIVE))
        for session in active:
            holds.session_abandon(session, now=now)
    link.refresh_from_db(fields=["revoked_at"])
    return len(active)


@dataclass(frozen=True)
class ParticipantRow:
    link: ParticipantLink
    participant: str  # the personal link's label, or the code typed on an open link
    sessions: int
    finished: int
    tasks: int
    last_active: datetime | None
    excluded: bool
    consented_at: datetime | None = None  # when they last agreed to a consent page (WorkSession.consented_at)
    consent_version: str = ""  # the first 12 hex digits of that text's consent_digest
    consent_current: bool = False  # that text is the campaign's text now


def _latest_consents(campaign: Campaign) -> dict[tuple[int, int], tuple[datetime | None, str]]:
    """Each (link id, worker id)'s latest agreement to a consent page: when, and the text's digest."""
    return {
        (link_id, worker_id): (at, digest)
        for link_id, worker_id, at, digest in WorkSession.objects.filter(
            campaign=campaign, link__isnull=False, consented_at__isnull=False
        )
        .order_by("consented_at", "id")
        .values_list("link_id", "worker_id", "consented_at", "consent_digest")
    }


def link_consent_versions(*, campaign: Campaign) -> dict[int, str]:
    """Per link id, the version of the consent text its participants last agreed to (the
    participants table's): a personal link's one participant; for an open link, each version
    any of its participants last agreed to, separated by spaces. A link nobody agreed through
    (no consent step, or not yet) is not in it."""
    versions: dict[int, set[str]] = {}
    for (link_id, _), (_, digest) in _latest_consents(campaign).items():
        if digest:
            versions.setdefault(link_id, set()).add(consent_version(digest))
    return {link_id: " ".join(sorted(found)) for link_id, found in versions.items()}


_participant_name = holds.participant_name


@dataclass(frozen=True)
class HeldPlace:
    """A task's place a link participant holds now, and until when unless their page is open."""

    hold_id: int  # what the Channel page's release button names
    participant: str
    link: ParticipantLink
    task: str
    opened_from: str
    held_since: datetime
    until: datetime


def held_places(*, campaign: Campaign, now: datetime | None = None) -> list[HeldPlace]:
    """Every place held through the campaign's links now (issue 24, N3): by whom, from which
    address, since and until when."""
    now = now or timezone.now()
    held = (
        TaskHold.objects.filter(
            session__campaign=campaign,
            session__link__isnull=False,
            submitted_at__isnull=True,
            released_at__isnull=True,
            expires_at__gt=now,
        )
        .select_related("session__worker", "session__link", "task__batch__topic")
        .order_by("expires_at", "pk")
    )
    return [
        HeldPlace(
            hold_id=hold.pk,
            participant=_participant_name(hold.session.link, hold.session.worker.external_id),
            link=hold.session.link,
            task=f"{hold.task.batch.topic.key} · task {hold.task.position}",
            opened_from=hold.session.opened_from or "",
            held_since=hold.held_at,
            until=hold.expires_at,
        )
        for hold in held
        if hold.session.link is not None
    ]


def participants(*, campaign: Campaign) -> list[ParticipantRow]:
    """Per participant of the campaign's links: sessions, tasks done, last activity, and their
    latest consent (when, and to which version of the text)."""
    per_worker = (
        WorkSession.objects.filter(campaign=campaign, link__isnull=False)
        .values("link_id", "worker_id", "worker__external_id")
        .annotate(
            sessions=Count("id", distinct=True),
            finished=Count("id", filter=Q(status=WorkSession.Status.FINISHED), distinct=True),
            tasks=Count("holds", filter=Q(holds__submitted_at__isnull=False), distinct=True),
            last_active=Max("holds__submitted_at"),
        )
    )
    latest_consent = _latest_consents(campaign)
    current = holds.consent_digest(campaign.consent_text)
    excluded = {q.worker_id for q in WorkerQuality.objects.filter(campaign=campaign) if q.excluded}
    links_by_id = {link.pk: link for link in campaign.participant_links.all()}
    rows = []
    seen_links = set()
    for row in per_worker:
        link = links_by_id[row["link_id"]]
        seen_links.add(link.pk)
        consented_at, digest = latest_consent.get((link.pk, row["worker_id"]), (None, ""))
        name = _participant_name(link, row["worker__external_id"])
        rows.append(
            ParticipantRow(
                link=link,
                participant=name or row["worker__external_id"],
                sessions=row["sessions"],
                finished=row["finished"],
                tasks=row["tasks"],
                last_active=row["last_active"],
                excluded=row["worker_id"] in excluded,
                consented_at=consented_at,
                consent_version=consent_version(digest),
                consent_current=bool(digest) and digest == current,
            )
        )
    for link in links_by_id.values():
        if link.kind == Kind.PERSONAL and link.pk not in seen_links:
            rows.append(ParticipantRow(link, link.label or f"link {link.pk}", 0, 0, 0, None, False))
    return sorted(rows, key=lambda r: (r.link.pk, r.participant))
