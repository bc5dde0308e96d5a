"""The Marketplace interface for Prolific: a session channel (crowd/marketplaces/sessions.py)
whose rounds open a study each (each batch adds its places to it) and whose bonuses are paid
through Prolific's API."""

from decimal import Decimal

from annotation.models import Batch
from crowd.marketplaces.base import DuplicateRequest, NotFoundAtMarketplace
from crowd.marketplaces.prolific.client import prolific_client
from crowd.marketplaces.prolific.study_opening import study_open
from crowd.marketplaces.sessions import SessionMarketplace
from crowd.models import Assignment, TaskHold


class ProlificMarketplace(SessionMarketplace):
    channel = "prolific"
    label = "Prolific"
    hit_prefix = "P"

    def batch_open(self, *, batch: Batch) -> None:
        study_open(batch=batch, environment=self.environment)

    def reachable_check(self) -> None:
        with prolific_client(environment=self.environment, attempts=1) as client:
            client.reachable_check()

    def bonus_send(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str) -> None:
        hold = TaskHold.objects.select_related("session__study").filter(assignment_id=assignment_id).first()
        if hold is None or hold.session.study is None or not hold.session.study.study_id:
            raise NotFoundAtMarketplace(f"Assignment {assignment_id} belongs to no Prolific study.")
        if Assignment.objects.filter(assignment_id=assignment_id, bonuses__token=token, bonuses__sent_at__isnull=False):
            raise DuplicateRequest(f"The bonus {token} was paid already.")
        client = prolific_client(environment=self.environment)
        client.bonus_pay(study_id=hold.session.study.study_id, bonuses=[(worker_id, amount)])
