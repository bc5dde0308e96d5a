"""What a study costs the researcher's workspace, as Prolific charges it (in cents).

Publishing a study takes its whole cost from the balance: every place at the reward plus the
service fee (settings.PROLIFIC_SERVICE_FEE_RATE of the reward, rounded half up to the cent,
no VAT). An approved submission pays its participant from that reserve; a rejected, returned
or timed-out one frees its place for another participant, so its money stays reserved. A
partially approved submission pays a share of the reward at Prolific; here it is charged in
full, the most it can cost. When
the study completes, what no approved submission used is given back. Bonuses are charged
separately (bonuses.py).
"""

from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings

from .models import Study, Submission


def fee_cents(reward_cents: int) -> int:
    return int((Decimal(reward_cents) * settings.PROLIFIC_SERVICE_FEE_RATE).quantize(Decimal(1), ROUND_HALF_UP))


def study_charges(study: Study) -> dict:
    per_place = study.reward + fee_cents(study.reward)
    published = study.status not in (Study.Status.UNPUBLISHED, Study.Status.PUBLISHING, Study.Status.SCHEDULED)
    funded = study.total_available_places * per_place if published else 0
    approved = study.submissions.filter(status__in=Submission.PAID).count()
    charged = approved * per_place
    refunded = funded - charged if study.status == Study.Status.COMPLETED else 0
    return {
        "study_id": study.study_id,
        "status": study.status,
        "reward": study.reward,
        "fee": fee_cents(study.reward),
        "places": study.total_available_places,
        "approved": approved,
        "funded": funded,  # taken from the balance when published (and when places were added)
        "charged": charged,  # paid to participants of approved submissions, fees included
        "refunded": refunded,  # given back when the study completed
        "reserved": funded - charged - refunded,  # still held for the study
    }
