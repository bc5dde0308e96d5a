"""F8 (issue 15): a staff researcher with every model permission of the apps sees and acts on
their own campaigns only, in every admin that shows campaign-owned rows; a superuser still sees
everything. And the API's schema and docs need a login unless `API_DOCS_PUBLIC` opens them.

Over HTTP with Django's test client. Two researchers, A and B, each own a campaign holding one
row of every model the admin shows (a new admin without a row here fails
`test_every_admin_of_the_apps_is_scoped_and_has_a_row_here`); B attacks A's rows through every
registered admin: the change list, the change, delete and history pages, each action, the
foreign-key choices, the campaign import page and the block form's campaign choice.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import ERROR, SUCCESS, get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models, transaction
from django.forms import ModelChoiceField
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.admin_scope import CampaignOwnedAdmin
from annotation.models import Batch, Campaign, CampaignMember, ImportRecord, Proposition, Task, Topic
from crowd.models import (
    HIT,
    Assignment,
    Bonus,
    Comparison,
    HITType,
    LedgerEntry,
    LikertLabel,
    Worker,
    WorkerDecision,
    WorkerQuality,
)
from ranking.models import PropositionScore, RankingSnapshot
from tests.annotation.test_admin import page_data
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
)

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]

APPS = ("annotation", "crowd", "ranking")
# Read at collection: the admin registers its models when Django starts.
ADMINS = {model: model_admin for model, model_admin in admin.site._registry.items() if model._meta.app_label in APPS}
ACTIONS = [
    (model, name)
    for model, model_admin in ADMINS.items()
    for name in [name for name, _ in admin.site.actions] + [action.__name__ for action in model_admin.actions or ()]
]
MISSING_PK = 10**9


def _ids(model: type[models.Model]) -> str:
    return model._meta.label


def researcher(username: str):
    user = get_user_model().objects.create_user(username, password="pw-for-tests-only", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=APPS))
    return user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def campaign_rows(owner, name: str, shared_worker: Worker) -> dict[type[models.Model], models.Model]:
    """One row of every model the admin shows, all in one campaign of `owner`."""
    campaign = CampaignFactory(owner=owner, name=name)
    topic = TopicFactory(campaign=campaign)
    first, second = PropositionFactory.create_batch(2, topic=topic)
    task = TaskFactory(batch=BatchFactory(topic=topic), propositions=[first, second])
    hit = HITFactory(task=task)
    worker = WorkerFactory()
    assignment = AssignmentFactory(task=task, hit=hit, worker=worker)
    AssignmentFactory(task=task, hit=hit, worker=shared_worker)
    return {
        Campaign: campaign,
        Topic: topic,
        Proposition: first,
        Batch: task.batch,
        Task: task,
        ImportRecord: ImportRecord.objects.create(campaign=campaign, filename=f"{name}.tsv", format="tsv"),
        CampaignMember: CampaignMember.objects.create(
            campaign=campaign,
            user=get_user_model().objects.create_user(f"colleague-of-{owner.get_username()}-{name}"),
            role=CampaignMember.Role.VIEW,
            added_by=owner,
        ),
        HITType: HITType.objects.create(
            campaign=campaign, kind="likert", environment="local", fingerprint=name, hit_type_id=f"TYPE-{name}"
        ),
        HIT: hit,
        Assignment: assignment,
        Worker: worker,
        WorkerQuality: WorkerQuality.objects.create(campaign=campaign, worker=worker),
        WorkerDecision: WorkerDecision.objects.create(campaign=campaign, worker=worker, action="exclude"),
        LikertLabel: LikertLabel.objects.create(assignment=assignment, worker=worker, proposition=first, score=4),
        Comparison: Comparison.objects.create(assignment=assignment, worker=worker, winner=first, loser=second),
        LedgerEntry: LedgerEntry.objects.create(campaign=campaign, kind="committed", amount=1, reference=name),
        Bonus: Bonus.objects.create(assignment=assignment, amount=Decimal("0.10"), reason="thanks", token=name),
        PropositionScore: PropositionScore.objects.create(proposition=first, likert_mean=4.0, likert_n=1, rank=1),
        RankingSnapshot: RankingSnapshot.objects.create(topic=topic, number=1, comparisons_used=0),
    }


class World:
    def __init__(self):
        self.shared_worker = WorkerFactory(external_id="SHAREDWORKER")
        self.a = researcher("ada")
        self.b = researcher("bob")
        self.root = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
        self.rows_a = campaign_rows(self.a, "Ada's secret campaign", self.shared_worker)
        self.rows_b = campaign_rows(self.b, "Bob's campaign", self.shared_worker)

    def fresh(self) -> "World":
        """The world as the database holds it at the start of a test (what an earlier test changed
        was rolled back, and its objects are read again), with clients signed in anew (no session
        or message of an earlier test carries over)."""
        for instance in [self.shared_worker, self.a, self.b, self.root, *self.rows_a.values(), *self.rows_b.values()]:
            instance.refresh_from_db()
        self.as_a, self.as_b, self.as_root = signed_in(self.a), signed_in(self.b), signed_in(self.root)
        return self

    def snapshot_a(self) -> dict:
        """Every column of A's rows and the count of everything, to show nothing was written."""
        return {
            "rows": {model: list(model.objects.filter(pk=row.pk).values()) for model, row in self.rows_a.items()},
            "counts": {model: model.objects.count() for model in ADMINS},
            "blocked": Worker.objects.filter(blocked=True).count(),
        }


@contextmanager
def world_for_the_module(django_db_blocker) -> Iterator[World]:
    """A world built once for a module, in a transaction rolled back at its end: pytest-django runs
    each test in a savepoint inside it, rolled back after the test (as tests/attacks/test_collaborators.py
    does), so building it for each test was most of the module's time."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield World()
        transaction.set_rollback(True)


@pytest.fixture(scope="module")
def _world(django_db_setup, django_db_blocker):
    with world_for_the_module(django_db_blocker) as world:
        yield world


@pytest.fixture
def world(_world) -> World:
    return _world.fresh()


def url(model: type[models.Model], view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def listed(client: Client, model: type[models.Model]) -> set[int]:
    response = client.get(url(model, "changelist"))
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def test_every_admin_of_the_apps_is_scoped_and_has_a_row_here(world):
    for model, model_admin in ADMINS.items():
        assert isinstance(model_admin, CampaignOwnedAdmin), f"{_ids(model)}'s admin is not scoped by campaign"
        assert model in world.rows_a, f"add a row of {_ids(model)} to campaign_rows()"


@pytest.mark.parametrize("model", ADMINS, ids=_ids)
def test_b_lists_only_b_s_rows_and_a_superuser_lists_all(world, model):
    mine, theirs = world.rows_b[model].pk, world.rows_a[model].pk

    assert mine in listed(world.as_b, model) and theirs not in listed(world.as_b, model)
    assert theirs in listed(world.as_a, model) and mine not in listed(world.as_a, model)
    assert {mine, theirs} <= listed(world.as_root, model)
    page = world.as_b.get(url(model, "changelist")).content.decode()
    assert "Ada&#x27;s secret campaign" not in page  # not in a list filter either


def test_a_worker_is_listed_for_each_campaign_they_worked_in(world):
    assert world.shared_worker.pk in listed(world.as_a, Worker)
    assert world.shared_worker.pk in listed(world.as_b, Worker)


@pytest.mark.parametrize("model", ADMINS, ids=_ids)
def test_b_cannot_open_change_history_or_delete_a_s_row(world, model):
    before = world.snapshot_a()
    theirs = world.rows_a[model].pk
    for view in ("change", "history", "delete"):
        for send in (world.as_b.get, world.as_b.post):
            # The answer for a row that does not exist: a redirect to the admin's index (or 403
            # where B may not change or delete a worker at all); nothing of the row is shown.
            response, missing = send(url(model, view, theirs)), send(url(model, view, MISSING_PK))
            assert (response.status_code, response.get("Location")) == (missing.status_code, missing.get("Location"))
            assert response.status_code in (302, 403)
    assert world.snapshot_a() == before


def test_b_cannot_switch_a_s_campaign_to_production_or_raise_its_cap(world):
    campaign = world.rows_a[Campaign]
    change = url(Campaign, "change", campaign.pk)
    data = {**page_data(world.as_a.get(change)), "production_enabled": "on", "budget_cap": "99999.00"}

    response = world.as_b.post(change, data)

    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
    campaign.refresh_from_db()
    assert (campaign.production_enabled, campaign.budget_cap) == (False, Decimal("100.00"))
    # The same post by the owner is a valid change: B was refused for whose campaign it is.
    assert world.as_a.post(change, data).status_code == 302
    campaign.refresh_from_db()
    assert (campaign.production_enabled, campaign.budget_cap) == (True, Decimal("99999.00"))


def test_b_cannot_import_into_a_s_campaign(world):
    campaign = world.rows_a[Campaign]
    before = world.snapshot_a()
    tsv = b"topic\tsubject\trelation\tobject\nloans\tB\twrites into\tA's campaign\n"
    import_url = reverse("admin:annotation_campaign_import", args=[campaign.pk])

    assert world.as_b.get(import_url).status_code == 404
    response = world.as_b.post(import_url, {"file": SimpleUploadedFile("x.tsv", tsv), "format": "auto"})

    assert response.status_code == 404
    assert world.snapshot_a() == before
    assert (
        world.as_b.get(reverse("admin:annotation_campaign_import", args=[world.rows_b[Campaign].pk])).status_code == 200
    )


def action_does_nothing(world: World, model: type[models.Model], action: str, *, reason: str, campaign: Campaign):
    """B runs `action` on A's row of `model` from its change list: nothing is tried on the row —
    no "done", and no refusal (a marketplace call that failed) — and none of A's rows changes."""
    before = world.snapshot_a()
    data = {
        "action": action,
        "_selected_action": [world.rows_a[model].pk],
        "index": 0,
        "post": "yes",  # delete_selected's confirmation
        "apply": "1",  # the reason forms' confirmation
        "reason": reason,
        "amount": "0.50",
        "campaign": campaign.pk,
    }

    response = world.as_b.post(url(model, "changelist"), data)

    assert response.status_code in (200, 302)
    if response.status_code == 200 and response.context and "queryset" in response.context:
        assert list(response.context["queryset"]) == []
    assert [str(message) for message in get_messages(response.wsgi_request) if message.level in (SUCCESS, ERROR)] == []
    assert world.snapshot_a() == before


@pytest.mark.parametrize(("model", "action"), ACTIONS, ids=lambda value: getattr(value, "_meta", None) and _ids(value))
def test_b_cannot_run_an_action_on_a_s_rows(world, model, action):
    action_does_nothing(world, model, action, reason="taken over by bob", campaign=world.rows_b[Campaign])


def test_b_s_actions_still_reach_b_s_own_rows(world):
    """The control for the test above: the same posts act when the rows are B's."""
    entry = world.rows_b[LedgerEntry]
    world.as_b.post(
        url(LedgerEntry, "changelist"), {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"}
    )
    assert not LedgerEntry.objects.filter(pk=entry.pk).exists()

    assignment = world.rows_b[Assignment]
    page = world.as_b.post(
        url(Assignment, "changelist"), {"action": "bonus_assignments", "_selected_action": [assignment.pk]}
    )
    assert list(page.context["queryset"]) == [assignment]


def block_refused(world: World, *, reason: str) -> str:
    """B blocks the worker both campaigns share, at A's campaign: the form refuses the campaign
    and none of A's rows changes. The page returned."""
    before = world.snapshot_a()
    data = {
        "action": "block_workers",
        "_selected_action": [world.shared_worker.pk],
        "apply": "1",
        "reason": reason,
        "campaign": world.rows_a[Campaign].pk,
    }

    page = world.as_b.post(url(Worker, "changelist"), data)

    assert page.status_code == 200 and "campaign" in page.context["form"].errors
    assert world.snapshot_a() == before
    return page.content.decode()


def test_b_cannot_block_a_worker_at_a_s_campaign(world):
    page = block_refused(world, reason="blocked at someone else's account")

    assert "Ada&#x27;s secret campaign" not in page


def _choice_fields(response) -> list[ModelChoiceField]:
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms += [*inline.formset.forms, inline.formset.empty_form]
    # Not an inline row's own hidden id: the formset binds it only within the parent's rows.
    return [
        field
        for form in forms
        for name, field in form.fields.items()
        if isinstance(field, ModelChoiceField) and name != form._meta.model._meta.pk.name
    ]


@pytest.mark.parametrize("model", ADMINS, ids=_ids)
def test_b_can_pick_none_of_a_s_rows_in_a_form(world, model):
    pages = [world.as_b.get(url(model, "change", world.rows_b[model].pk)), world.as_b.get(url(model, "add"))]
    for page in pages:
        if page.status_code == 403:  # a worker's row is the superuser's to add or change
            continue
        assert page.status_code == 200
        for field in _choice_fields(page):
            offered = set(field.queryset)
            related = field.queryset.model
            if related in world.rows_a:
                assert world.rows_a[related] not in offered and world.rows_b[related] in offered
            elif related is get_user_model():
                assert offered == {world.b}


def test_b_cannot_move_a_row_of_b_s_into_a_s_campaign(world):
    topic = world.rows_b[Topic]
    change = url(Topic, "change", topic.pk)
    data = {**page_data(world.as_b.get(change)), "campaign": world.rows_a[Campaign].pk}

    page = world.as_b.post(change, data)

    assert page.status_code == 200 and "campaign" in page.context["adminform"].form.errors
    topic.refresh_from_db()
    assert topic.campaign == world.rows_b[Campaign]


# --- the API's schema and docs ------------------------------------------------------------


def test_the_schema_and_the_docs_need_a_login(client):
    assert APIClient().get(reverse("api-schema")).status_code == 401
    docs = client.get(reverse("api-docs"))
    assert docs.status_code == 302 and docs["Location"].startswith(reverse("login"))


def test_the_schema_and_the_docs_answer_a_signed_in_user(client, django_user_model):
    user = django_user_model.objects.create_user("reader", password="pw-for-tests-only")
    client.force_login(user)
    assert client.get(reverse("api-schema")).status_code == 200
    assert client.get(reverse("api-docs")).status_code == 200
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert api.get(reverse("api-schema")).status_code == 200


def test_the_setting_opens_the_schema_and_the_docs(client, settings):
    settings.API_DOCS_PUBLIC = True
    assert client.get(reverse("api-schema")).status_code == 200
    assert client.get(reverse("api-docs")).status_code == 200
