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
    """Record `token` (with the HIT it created) and return None, or return its live earlier record.

    The insert comes first: a new token (every call but a retry) costs that one statement. An
    earlier record past TOKEN_LIFETIME is deleted and the token recorded anew; of two calls
    racing over one expired token, the one whose insert loses gets the other's live record."""
    for _ in range(2):
        try:
            with transaction.atomic():
                RequestToken.objects.create(
                    requester=requester, operation=operation, token=token, created_at=now, hit=hit
                )
            return None
        except IntegrityError:
            earlier = RequestToken.objects.select_related("hit").get(
                requester=requester, operation=operation, token=token
            )
        if earlier.created_at > now - TOKEN_LIFETIME:
            return earlier
        RequestToken.objects.filter(pk=earlier.pk).delete()
    return earlier


def token_require_new(*, requester: Requester, operation: str, token: str, now: datetime) -> None:
    """Record `token`, or fail as MTurk does when it was already used: a retry never acts twice."""
    if token_claim(requester=requester, operation=operation, token=token, now=now):
        raise RequestError(f'The idempotency token "{token}" has already been processed.', code=DUPLICATE_REQUEST)
