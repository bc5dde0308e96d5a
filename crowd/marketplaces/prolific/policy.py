"""What is specific to Prolific, for the generic code that asks (crowd.marketplaces.registry).

Prolific pays per submission: one participant's whole session, at the study's reward (tasks
per session × the task's reward), plus its service fee (settings.PROLIFIC_SERVICE_FEE_RATE,
42.8 % for companies), rounded half-up to the cent with no minimum, as the local endpoint
(rehearsal/localprolific/) charges. Bonuses carry the same fee. It has no sandbox. Amounts are
in the workspace's currency (settings.PROLIFIC_CURRENCY, GBP or USD), and so is its minimum
pay, £6.00 / $8.00 an hour (researcher-help, "Prolific's payment principles").
"""

from decimal import ROUND_UP, Decimal

from django.conf import settings

from annotation.models import Batch, Campaign
from config.errors import ApplicationError
from crowd.marketplaces.base import ChannelPolicy, Opening, PaymentUnit, fee
from crowd.marketplaces.prolific.participants import NOT_LISTED
from crowd.marketplaces.prolific.study_opening import (
    completion_url,
    seconds_per_task,
    session_minutes,
    session_reward_cents,
    study_places,
)
from crowd.marketplaces.prolific.wire import CURRENCY_SYMBOLS, MIN_HOURLY
from crowd.models import Study, StudyBatch, WorkSession

# Where the estimate behind the pay check is changed, as the refusal names it.
SECONDS_FIELD = "Seconds per task (Prolific) on the campaign's Channel page"


def min_hourly() -> Decimal:
    """Prolific's minimum pay per hour in the workspace's currency."""
    return MIN_HOURLY[settings.PROLIFIC_CURRENCY]


class ProlificPolicy(ChannelPolicy):
    channel = "prolific"
    label = "Prolific"
    short_name = "Prolific"
    unit = PaymentUnit.SUBMISSION
    sessions = True
    environments = (("local", "Local Prolific endpoint"), ("production", "Prolific production"))
    fees_wording = "Prolific's service fee included"
    deployment_setting = "PROLIFIC_ENVIRONMENT"
    pays_bonuses = True
    summary = "Prolific pays per session of several tasks in a row: each approved submission, plus its service fee."
    page_sections = ("studies",)
    session_unconfirmed_wording = NOT_LISTED
    # as the session page's own (crowd.sessions.views): the returned place goes to someone else
    turned_away_wording = "Please return the study on Prolific; returning does not affect your record."
    after_publish = "Participants reach the tasks from the study on Prolific; the Channel page lists its studies."
    quote_wording = (
        "This is the most the round commits: sessions are sized so its places give the answers it needs. If "
        "answers are still missing once every place is used (rejected answers, participants who left), more "
        "places are asked of you on the campaign page, with the reason and the cost, and opened only after your yes."
    )

    def environment_choose(self, requested: str | None) -> str:
        # Prolific has no sandbox: rehearse on the local endpoint.
        return "production" if requested == "production" else "local"

    def submission_cost(self, *, reward: Decimal) -> Decimal:
        return reward + fee(reward, settings.PROLIFIC_SERVICE_FEE_RATE)

    def bonus_cost(self, amount: Decimal) -> Decimal:
        return amount + fee(amount, settings.PROLIFIC_SERVICE_FEE_RATE)

    def session_completion_url(self, session: WorkSession) -> str | None:
        return completion_url(session.study) if session.study is not None else None

    def opening(self, *, batch: Batch) -> Opening:
        """The places the batch adds to its round's study, at the study's session reward (the
        link's own figures once it exists, so a publish re-run commits what was opened; the open
        study's reward once the round has one, as Prolific cannot change it after publishing)."""
        link = StudyBatch.objects.select_related("study").filter(batch=batch).first()
        if link is not None:
            return Opening(places=link.places, reward=Decimal(link.study.reward_cents) / 100)
        campaign = batch.topic.campaign
        study = Study.objects.open_for(topic=batch.topic, kind=batch.kind).first()
        reward_cents = study.reward_cents if study is not None else session_reward_cents(campaign, batch.kind)
        return Opening(places=study_places(batch, campaign.tasks_per_session), reward=Decimal(reward_cents) / 100)

    def https_required(self, environment: str) -> bool:
        return environment != "local"

    def unreachable_wording(self, environment: str) -> str:
        url = settings.PROLIFIC_API_URL
        if environment == "local":
            return (
                f"The local Prolific endpoint ({url}) does not answer. This app's web server serves it: start it "
                "with `make serve` (or `python manage.py runserver` on the address of SITE_URL), keep it running "
                "while you publish, and publish again."
            )
        return f"Prolific does not answer at {url}: check the network and PROLIFIC_API_URL, and try again."

    def publish_check(self, *, campaign: Campaign, kind: str) -> None:
        if campaign.environment == "sandbox":
            raise ApplicationError(
                f"Prolific has no sandbox: set the environment of campaign {campaign.slug} to local (the local "
                "Prolific endpoint, for rehearsal) or production.",
                code="no_sandbox",
            )
        self.pay_check(campaign=campaign, kind=kind)

    @property
    def currency_symbol(self) -> str:  # type: ignore[override]
        return CURRENCY_SYMBOLS[settings.PROLIFIC_CURRENCY]

    def rewards_floor(self, *, campaign: Campaign) -> Decimal:
        """The least task reward whose session pays Prolific's hourly minimum at the estimated
        time (rounded up to the cent)."""
        minutes = session_minutes(campaign)
        return (min_hourly() * minutes / 60 / campaign.tasks_per_session).quantize(Decimal("0.01"), rounding=ROUND_UP)

    def pay_check(self, *, campaign: Campaign, kind: str) -> None:
        """Prolific refuses studies that pay less than its hourly minimum: say so before
        anything is committed, with the figures to change and where to change them."""
        minutes = session_minutes(campaign)
        per_session = Decimal(session_reward_cents(campaign, kind)) / 100
        hourly = (per_session * 60 / minutes).quantize(Decimal("0.01"))
        if hourly < min_hourly():
            money = self.money_wording
            raise ApplicationError(
                f"A session of {campaign.tasks_per_session} {kind} tasks at {money(campaign.reward_for(kind))} each "
                f"pays {money(per_session)} for about {minutes} minutes ({seconds_per_task(campaign)} s per task), "
                f"{money(hourly)} an hour; Prolific's minimum is {money(min_hourly())} an hour. Raise the {kind} "
                f"reward to at least {money(self.rewards_floor(campaign=campaign))} on the campaign's Settings page, "
                f"or lower {SECONDS_FIELD} if tasks take less time.",
                code="reward_below_minimum",
            )
