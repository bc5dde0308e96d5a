"""UniqueRequestToken: a token counts for 24 hours per requester and operation.

The unique constraint on (requester, operation, token) decides races: of two concurrent
calls with one token, exactly one inserts; the other finds the row and fails the way
MTurk does.
"""

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from .errors import DUPLICATE_REQUEST, RequestError
from .models import HIT, Requester, RequestToken

TOKEN_LIFETIME = timedelta(hours=24)


def token_claim(
    *, requester: Requester, operation: str, token: str, now: datetime, hit: HIT | None = None
) -> RequestToken | None:
    """Record `token` (with the HIT it created) and return None, or return its live earlier record."""
    RequestToken.objects.filter(
        requester=requester, operation=operation, token=token, created_at__lte=now - TOKEN_LIFETIME
    ).delete()
    try:
        with transaction.atomic():
            RequestToken.objects.create(requester=requester, operation=operation, token=token, created_at=now, hit=hit)
    except IntegrityError:
        return RequestToken.objects.select_related("hit").get(requester=requester, operation=operation, token=token)
    return None


def token_require_new(*, requester: Requester, operation: str, token: str, now: datetime) -> None:
    """Record `token`, or fail as MTurk does when it was already used: a retry never acts twice."""
    if token_claim(requester=requester, operation=operation, token=token, now=now):
        raise RequestError(f'The idempotency token "{token}" has already been processed.', code=DUPLICATE_REQUEST)
