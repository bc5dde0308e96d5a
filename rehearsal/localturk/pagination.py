"""NextToken pagination for the List* operations.

A token is signed and opaque: the last row's primary key plus a hash of the query it
belongs to. Pages follow the primary key, so rows created between two calls never shift a
page, every token of a listing is different (botocore's paginator refuses a repeated one),
and the last page carries no NextToken. NumResults is the page's length.
"""

import hashlib
import json

from django.core import signing
from django.db.models import QuerySet

from .errors import RequestError

DEFAULT_PAGE_SIZE = 10
_SALT = "rehearsal.localturk.pagination"


def page(queryset: QuerySet, params: dict, *, query: dict) -> tuple[list, dict]:
    """One page of `queryset` and the response members NumResults / NextToken.

    `query` identifies the listing (operation, requester, filters); a token from another
    listing is refused.
    """
    fingerprint = hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()[:16]
    size = params.get("MaxResults", DEFAULT_PAGE_SIZE)
    rows = queryset.order_by("pk")
    if "NextToken" in params:
        rows = rows.filter(pk__gt=_token_read(params["NextToken"], fingerprint))
    items = list(rows[: size + 1])
    members = {"NumResults": min(len(items), size)}
    if len(items) > size:
        items = items[:size]
        members["NextToken"] = signing.dumps({"after": items[-1].pk, "query": fingerprint}, salt=_SALT)
    return items, members


def _token_read(token: str, fingerprint: str) -> int:
    try:
        payload = signing.loads(token, salt=_SALT)
    except signing.BadSignature as exc:
        raise RequestError("The NextToken is not valid.") from exc
    if payload.get("query") != fingerprint:
        raise RequestError("The NextToken belongs to a different request.")
    return payload["after"]
