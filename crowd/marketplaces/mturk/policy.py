"""What is specific to MTurk, for the generic code that asks (crowd.marketplaces.registry)."""

from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings

from crowd.marketplaces.base import ChannelPolicy, PaymentUnit, Requirement
from crowd.marketplaces.mturk import answers, fees

if TYPE_CHECKING:
    from annotation.models import Campaign

LOCALE_QUALIFICATION = "00000000000000000071"
PERCENT_APPROVED_QUALIFICATION = "000000000000000000L0"


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
    deployment_setting = "MTURK_ENVIRONMENT"
    frame_origins = ("https://workersandbox.mturk.com", "https://worker.mturk.com")
    # externalSubmit answers with a redirect within MTurk's worker sites.
    form_targets = ("https://*.mturk.com",)
    # turkSubmitTo is occasionally missing; then the environment's worker site takes the answer.
    submit_hosts = {"sandbox": "https://workersandbox.mturk.com", "production": "https://www.mturk.com"}
    pays_bonuses = True
    summary = "Amazon Mechanical Turk pays per HIT: each approved assignment, plus MTurk's fee."

    def assignment_cost(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return fees.assignment_cost(reward=reward, max_assignments=max_assignments)

    def bonus_cost(self, amount: Decimal) -> Decimal:
        return fees.bonus_cost(amount)

    def https_required(self, environment: str) -> bool:
        return environment != "local"

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

    def answer_fields(self, answer: str) -> dict[str, list[str]]:
        """MTurk keeps a copy of every answer posted to externalSubmit, as QuestionFormAnswers XML."""
        return answers.answer_fields(answer)

    def submit_host(self, environment: str) -> str | None:
        return self.submit_hosts.get(environment)
