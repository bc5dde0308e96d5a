"""What is specific to MTurk, for the generic code that asks (crowd.marketplaces.registry)."""

from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.conf import settings

from crowd.marketplaces.base import ChannelPolicy, PaymentUnit, Requirement
from crowd.marketplaces.mturk import answers, fees
from crowd.marketplaces.mturk.client import endpoint_url

if TYPE_CHECKING:
    from annotation.models import Campaign

LOCALE_QUALIFICATION = "00000000000000000071"
PERCENT_APPROVED_QUALIFICATION = "000000000000000000L0"
# Amazon closed MTurk for good on that day; its path stays for rehearsal and old accounts.
CLOSED_NOTE = "closed since 2026-09-30 — local rehearsal and existing access only"


class MTurkPolicy(ChannelPolicy):
    channel = "mturk"
    label = "Amazon Mechanical Turk"
    short_name = "MTurk"
    unit = PaymentUnit.ASSIGNMENT
    environments = (
        ("local", "Local MTurk endpoint"),
        ("sandbox", "MTurk sandbox"),
        ("production", "MTurk production"),
    )
    fees_wording = "MTurk fees included"
    answer_noun = "assignments"
    deployment_setting = "MTURK_ENVIRONMENT"
    frame_origins = ("https://workersandbox.mturk.com", "https://worker.mturk.com")
    # externalSubmit answers with a redirect within MTurk's worker sites.
    form_targets = ("https://*.mturk.com",)
    # turkSubmitTo is occasionally missing; then the environment's worker site takes the answer.
    submit_hosts = {"sandbox": "https://workersandbox.mturk.com", "production": "https://www.mturk.com"}
    pays_bonuses = True
    summary = f"Amazon Mechanical Turk ({CLOSED_NOTE}) pays per HIT: each approved assignment, plus MTurk's fee."
    status_note = CLOSED_NOTE
    task_noun = ("HIT", "HITs")
    # MTurk shows a preview to workers who have not accepted the HIT yet.
    preview_wording = "Accept the HIT to start: you can read the task now, and answer once you have accepted it."
    turned_away_wording = "Please return this HIT; returning it does not affect your record."
    preview_action = "Accept the HIT to start"
    after_publish = "Workers find the HITs on MTurk's worker site (on the local endpoint: /localturk/worker/)."

    def assignment_cost(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return fees.assignment_cost(reward=reward, max_assignments=max_assignments)

    def bonus_cost(self, amount: Decimal) -> Decimal:
        return fees.bonus_cost(amount)

    def https_required(self, environment: str) -> bool:
        return environment != "local"

    def unreachable_wording(self, environment: str) -> str:
        url = endpoint_url(environment)
        if environment == "local":
            parts = urlsplit(url)
            return (
                f"The local MTurk endpoint ({url}) does not answer. This app's web server serves it: start it with "
                f"`make serve` (or `python manage.py runserver {parts.hostname}:{parts.port or 80}`), keep it running "
                "while you publish, and publish again."
            )
        return (
            f"{self.environment_label(environment)} does not answer at {url}: check the network and try again. "
            f"MTurk is {CLOSED_NOTE}."
        )

    def requirements(self, *, campaign: "Campaign") -> tuple[Requirement, ...]:
        """Locale US and a minimum approval rate, as the campaign says; none on the local endpoint."""
        if campaign.environment == "local":
            return ()
        requirements = []
        if campaign.require_us_locale:
            requirements.append(Requirement(LOCALE_QUALIFICATION, "EqualTo", countries=("US",)))
        if campaign.min_approval_percent:
            minimum = (campaign.min_approval_percent,)
            requirements.append(Requirement(PERCENT_APPROVED_QUALIFICATION, "GreaterThanOrEqualTo", integers=minimum))
        return tuple(requirements)

    def approval_margin(self) -> timedelta:
        """MTurk auto-approves on its own clock: approve this long before it would."""
        return timedelta(seconds=settings.MTURK_APPROVAL_MARGIN_SECONDS)

    def concurrent_calls(self) -> int:
        """MTURK_CONCURRENT_CALLS: CreateHIT and ApproveAssignment in flight at once, deployment-wide."""
        calls: int = settings.MTURK_CONCURRENT_CALLS
        return calls

    def answer_fields(self, answer: str) -> dict[str, list[str]]:
        """MTurk keeps a copy of every answer posted to externalSubmit, as QuestionFormAnswers XML."""
        return answers.answer_fields(answer)

    def submit_host(self, environment: str) -> str | None:
        return self.submit_hosts.get(environment)
