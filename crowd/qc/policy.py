"""A campaign's quality-control policy: its own settings (the least evidence, the cap on what
is excluded) beside the fixed thresholds, as the one `crowd.quality.QCPolicy` value that the
Likert part, the comparison part and the quality page read."""

from annotation.models import Campaign
from crowd.quality import QCPolicy

TRAP_FAIL_AT = 3  # a trap rated "moderately important" (3) or higher is failed
LOO_FLOOR = 0.5  # leave-one-out r at or above this never excludes a worker
AGREEMENT_FLOOR = 0.6  # nor does a comparison agreement at or above this
MAX_UNTOUCHED_SHARE = 0.5  # more than this share of a worker's orderings untouched excludes them


def campaign_qc_policy(campaign: Campaign) -> QCPolicy:
    return QCPolicy(
        max_label_share=campaign.qc_max_label_share,
        min_items=campaign.qc_min_items,
        fail_at=TRAP_FAIL_AT,
        max_r=LOO_FLOOR,
        max_agreement=AGREEMENT_FLOOR,
        min_traps=campaign.qc_min_traps,
        min_orderings=campaign.qc_min_orderings,
        max_untouched_share=MAX_UNTOUCHED_SHARE,
    )
