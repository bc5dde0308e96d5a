"""Campaigns: creating them with the paper's defaults, who sees them, settings and status."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Field, Q, QuerySet
from django.utils.text import slugify
from rest_framework import status

from annotation.models import Campaign, CampaignMember, Task
from config.errors import ApplicationError, Conflict


class CampaignExists(ApplicationError):
    code = "campaign_exists"


@transaction.atomic
def campaign_create(*, slug: str, name: str, description: str = "", owner=None, **options) -> Campaign:
    """A campaign with the defaults of Falke & Gurevych (2017): 5 propositions and 5
    assignments per HIT, $0.06 Likert and $0.05 comparison HITs, top 100 with ties, 10 % of
    all pairs in batches of 100 pairs. `options` override any other field."""
    if slug != slugify(slug):
        raise ApplicationError(
            f"{slug!r} is not a valid slug: use lower-case letters, digits and hyphens, e.g. {slugify(slug)!r}.",
            code="invalid_slug",
        )
    if Campaign.objects.filter(slug=slug).exists():
        raise CampaignExists(f"A campaign with the slug {slug!r} already exists.")
    return Campaign.objects.create(slug=slug, name=name, description=description, owner=owner, **options)


# ---- Who may do what ------------------------------------------------------------------------------
#
# The one rule, for the dashboard, the API and the admin alike. A campaign's owner does
# everything; a collaborator (CampaignMember) with the `view` role sees every page and download
# of it and changes nothing; one with the `edit` role also changes it (imports, publishing,
# pausing, settings, worker decisions, bonuses, expiry, links), except what stays with the owner:
# its collaborators, and its money and ownership (`campaign_owner_changes_check`). A superuser
# counts as the owner of every campaign. Anyone else does not see the campaign at all (a 404).
# Each rule is one subquery, so a list of campaigns costs the same queries however many
# memberships the user has.


def campaigns_visible_to(user) -> QuerySet[Campaign]:
    """The campaigns `user` owns or collaborates on (either role); a superuser sees all."""
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(Q(owner=user) | Q(pk__in=_memberships(user).values("campaign")))


def campaigns_editable_by(user) -> QuerySet[Campaign]:
    """The campaigns `user` may change: their own and those they have the `edit` role on."""
    if user.is_superuser:
        return Campaign.objects.all()
    editing = _memberships(user).filter(role=CampaignMember.Role.EDIT)
    return Campaign.objects.filter(Q(owner=user) | Q(pk__in=editing.values("campaign")))


def campaigns_owned_by(user) -> QuerySet[Campaign]:
    """The campaigns whose collaborators and money `user` manages: their own (a superuser: all)."""
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(owner=user)


def _memberships(user) -> QuerySet[CampaignMember]:
    return CampaignMember.objects.filter(user=user) if user.is_authenticated else CampaignMember.objects.none()


class OwnerOnly(ApplicationError):
    """A change only the campaign's owner may make."""

    code = "owner_only"
    http_status = status.HTTP_403_FORBIDDEN


def campaign_owner_changes_check(*, campaign: Campaign, changes: dict, by) -> None:
    """Money and ownership stay with the owner: a collaborator with edit access may lower the
    budget cap and switch production off (stopping the spending must always be possible), but
    not raise the cap, switch production on or hand the campaign to someone else. Refused with
    OwnerOnly naming each such change; the owner and a superuser may make them all."""
    if campaigns_owned_by(by).filter(pk=campaign.pk).exists():
        return
    refused = []
    if "budget_cap" in changes and not _at_most(campaign, "budget_cap", changes["budget_cap"]):
        refused.append("raise the budget cap")
    if changes.get("production_enabled") and not campaign.production_enabled:
        refused.append("switch production on")
    if "owner" in changes and getattr(changes["owner"], "pk", changes["owner"]) != campaign.owner_id:
        refused.append("change the owner")
    if refused:
        raise OwnerOnly(
            f"Only the owner of campaign {campaign.slug!r} may {' or '.join(refused)}: "
            "its money stays with them. Ask them, or lower the cap instead.",
            details={"refused": refused},
        )


def _at_most(campaign: Campaign, name: str, value) -> bool:
    """Whether `value` is no more than what the field holds, read as the database would store it."""
    field = Campaign._meta.get_field(name)
    assert isinstance(field, Field)
    try:
        return field.to_python(value) <= getattr(campaign, name)
    except (ValidationError, TypeError):
        return False  # not a valid amount: refused here, whatever the form says


# ---- Settings fixed after the first publish ----------------------------------------------------
#
# A published HIT, study or link is a promise to workers and a record for the researcher: what
# is asked (question, traps, group sizes), what it pays and on what terms (rewards, assignments,
# durations, auto-approval), who may take it (channel, environment, qualifications, Prolific
# filters, session length), how the answers are judged (quality control: exclusions decide who
# is rejected, blocked or left out of the ranking) and how many more are bought (the ranking
# loop's top k, pair budget, batch size and stopping rule). Changing any of these half-way
# would mix two campaigns in one ranking, pay workers differently for the same work, or judge
# answers already given by rules their workers never saw. The slug is fixed too: the HITs'
# annotations and the Prolific studies at the marketplace carry it.
#
# What stays open is what the work does not depend on: the name and description (for the
# researcher only), the owner, the budget cap (publishing checks it against what is committed
# whenever it publishes; raising it is how a researcher lets a campaign that ran out of money
# finish, lowering it stops further publishing) and the production switch (turning it off must
# always be possible). The campaign's status is not a setting: its writers are below.
FIXED_AFTER_PUBLISH = (
    "slug",
    "question_template",
    "likert_group_size",
    "comparison_group_size",
    "assignments_per_hit",
    "likert_reward",
    "comparison_reward",
    "top_k",
    "pair_budget_fraction",
    "batch_pairs",
    "stop_spearman",
    "stop_stable_refits",
    "trap_rate",
    "obvious_traps",
    "qc_max_label_share",
    "qc_min_items",
    "qc_min_traps",
    "qc_min_orderings",
    "qc_block_excluded",
    "qc_reject_failed_traps",
    "channel",
    "environment",
    "require_us_locale",
    "min_approval_percent",
    "hit_title",
    "comparison_hit_title",
    "hit_keywords",
    "hit_lifetime_seconds",
    "assignment_duration_seconds",
    "auto_approval_delay_seconds",
    "tasks_per_session",
    "channel_settings",
)
# The consent text stays editable (a contact address or a typo may need fixing mid-study); it
# changes no task and no answer. Which version a participant agreed to is not kept yet.
CHANGEABLE_AFTER_PUBLISH = (
    *("name", "description", "owner", "budget_cap", "production_enabled", "consent_text"),
    "link_idle_seconds",  # the idle window on participant links: any time (crowd.sessions.holds.link_idle_set)
)


def campaign_has_published(campaign: Campaign) -> bool:
    """Whether the campaign's settings are fixed: it left the draft status (the first published
    batch makes it active) or a task of it is on offer somewhere (a publish that stopped half-way
    leaves HITs behind before the status changes)."""
    if campaign.status != Campaign.Status.DRAFT:
        return True
    return Task.objects.filter(batch__topic__campaign=campaign, hit__isnull=False).exists()


def campaign_import_refusal(campaign: Campaign) -> str:
    """Why the campaign takes no new propositions ("" when it takes them): a finished campaign's
    rankings are final, and the loop starts only an active campaign's topics, so new ones
    would never be rated. For the importer (annotation.importing.importers), which refuses,
    and the campaign page, which offers its upload form only where an upload would go ahead."""
    if campaign.status == Campaign.Status.FINISHED:
        return (
            f"Campaign {campaign.slug!r} is finished: every topic is done and its ranking is final, so it takes no "
            "new propositions. To rank more, create a new campaign."
        )
    return ""


def campaign_changes_check(*, campaign: Campaign, changes: dict) -> None:
    """The one guard on changing a campaign's settings, for every interface: a draft may
    change anything; once it has published, a change to a field of FIXED_AFTER_PUBLISH is
    refused with a Conflict naming every such field. A value equal to the stored one is no
    change, so a form that sends every field back is fine."""
    changed = [name for name in FIXED_AFTER_PUBLISH if name in changes and not _same(campaign, name, changes[name])]
    if changed and campaign_has_published(campaign):
        raise Conflict(
            f"Campaign {campaign.slug!r} has published work: {', '.join(changed)} can no longer be changed. "
            "They decide what its HITs ask, pay and accept, and how their answers are judged; "
            "create a new campaign to change them.",
            code="settings_fixed",
            details={"fields": changed},
        )


def _same(campaign: Campaign, name: str, value) -> bool:
    """Whether `value` is what the field holds already, read as the database would store it
    ("0.06" and Decimal("0.06") are the same reward)."""
    field = Campaign._meta.get_field(name)
    assert isinstance(field, Field)  # every fixed setting is a concrete column
    try:
        return field.to_python(value) == getattr(campaign, name)
    except ValidationError:
        return False  # not even a valid value: certainly a change


@transaction.atomic
def campaign_update(*, campaign_id: int, changes: dict, by=None) -> Campaign:
    """Apply setting changes under the campaign's row lock, after `campaign_changes_check`
    and, when `by` (the user of an interface: dashboard, API, admin) is given,
    `campaign_owner_changes_check` (None: the command line and the services, which act for the
    owner); a refused change writes nothing (409, 403)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    campaign_changes_check(campaign=campaign, changes=changes)
    if by is not None:
        campaign_owner_changes_check(campaign=campaign, changes=changes, by=by)
    for field, value in changes.items():
        setattr(campaign, field, value)
    campaign.save(update_fields=list(changes))
    return campaign


@transaction.atomic
def campaign_pause(*, campaign_id: int) -> Campaign:
    """Stop the pipeline from publishing further batches. HITs already published stay on
    offer (MTurk cannot pause a HIT): expire a batch to stop its HITs. Pausing twice is fine."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if campaign.status == Campaign.Status.FINISHED:
        raise Conflict(f"Campaign {campaign.slug!r} is finished: there is nothing to pause.", code="campaign_finished")
    if campaign.status != Campaign.Status.PAUSED:
        campaign.status = Campaign.Status.PAUSED
        campaign.save(update_fields=["status"])
    return campaign


@transaction.atomic
def campaign_resume(*, campaign_id: int) -> Campaign:
    """Active again: the loop's next pass (ranking.workflow) takes up every waiting topic,
    including one whose batch was completed while the campaign was paused."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if campaign.status == Campaign.Status.ACTIVE:
        return campaign
    if campaign.status != Campaign.Status.PAUSED:
        raise Conflict(
            f"Campaign {campaign.slug!r} is {campaign.get_status_display().lower()}, not paused.",
            code="campaign_not_paused",
        )
    campaign.status = Campaign.Status.ACTIVE
    campaign.save(update_fields=["status"])
    return campaign


# Campaign.status has its writers here only: pause and resume above, and these two, which the
# publishing service and the loop's owner call.


def campaign_activate(*, campaign_id: int) -> bool:
    """A draft becomes active with its first published batch (its settings are then fixed);
    True when it changed."""
    return bool(
        Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.DRAFT).update(status=Campaign.Status.ACTIVE)
    )


def campaign_finish(*, campaign_id: int) -> bool:
    """An active campaign whose topics are all done is finished; True when it changed. A
    paused one stays paused until resumed."""
    return bool(
        Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.ACTIVE).update(status=Campaign.Status.FINISHED)
    )
