"""MTurk's JSON 1.1 protocol (reference §1): one POST per call, dispatched on X-Amz-Target.

    call(target="MTurkRequesterServiceV20170117.GetHIT", body=b'{"HITId": "..."}',
         authorization="AWS4-HMAC-SHA256 Credential=AKID/...")  ->  (200, {"HIT": {...}})

Order of work: the operation name; whether any fault switch is set and who the requester
is (one statement); injected faults (faults.py); the JSON body; validation against
botocore's model (validation.py); the clock catches up (state.tick); then the handler runs
in one transaction, so a failed call writes nothing. Signatures are not
checked: the access key in the Authorization credential names the requester, and an
unsigned call is the requester "anonymous".
"""

import json
import logging
import re

from django.db import connection, transaction
from django.utils import timezone

from . import faults, state
from .errors import UNSUPPORTED, MTurkError, ProtocolError, RequestError, ServiceFault, Throttled
from .models import Fault, Requester
from .operations import HANDLERS
from .validation import params_validate, service_model

TARGET_PREFIX = "MTurkRequesterServiceV20170117"
CONTENT_TYPE = "application/x-amz-json-1.1"
ANONYMOUS = "anonymous"
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")

logger = logging.getLogger(__name__)


def call(*, target: str, body: bytes, authorization: str) -> tuple[int, dict]:
    """Run one API call and return the HTTP status and the JSON body to send."""
    try:
        operation = _operation(target)
        access_key = _access_key(authorization)
        switch_set, requester_id = _call_context(access_key)
        _faults_apply(operation, switch_set)
        params = _params(body)
        params_validate(operation, params)
        if operation not in HANDLERS:
            raise RequestError(f"{operation} is not supported by the local endpoint.", code=UNSUPPORTED)
        state.tick()
        requester = _requester(access_key, requester_id)
        with transaction.atomic():
            return 200, HANDLERS[operation](requester=requester, params=params, now=timezone.now())
    except MTurkError as exc:
        return exc.http_status, exc.body()
    except Exception:
        logger.exception("localturk: %s failed", target)
        return ServiceFault.http_status, ServiceFault().body()


def _access_key(authorization: str) -> str:
    match = _CREDENTIAL.search(authorization)
    return match.group(1) if match else ANONYMOUS


def _call_context(access_key: str) -> tuple[bool, int | None]:
    """What every call reads first, in one plain statement: whether any fault switch is set,
    and the id of the requester with `access_key` (None when unknown). Each was a statement
    of its own (the ORM's compilation of the lookup cost more than the query); one round
    trip instead of two, on every call (issue 26)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {faults.SWITCH_SET_SQL}, (SELECT id FROM {Requester._meta.db_table} WHERE access_key = %s)",
            [access_key],
        )
        switch_set, requester_id = cursor.fetchone()
    return bool(switch_set), requester_id


def _requester(access_key: str, requester_id: int | None) -> Requester:
    if requester_id is None:
        return Requester.objects.get_or_create(access_key=access_key)[0]
    return Requester.from_db(connection.alias, ["id", "access_key"], (requester_id, access_key))


def _operation(target: str) -> str:
    prefix, _, operation = target.partition(".")
    if prefix != TARGET_PREFIX or operation not in service_model().operation_names:
        raise ProtocolError(f"Unknown operation {target!r}.", error_type="UnknownOperationException")
    return operation


def _faults_apply(operation: str, switch_set: bool) -> None:
    outcome = faults.take(operation, switch_set=switch_set)
    if outcome.latency_ms:
        faults.sleep(outcome.latency_ms)
    if outcome.error == Fault.Kind.THROTTLE:
        raise Throttled()
    if outcome.error == Fault.Kind.SERVICE_FAULT:
        raise ServiceFault()


def _params(body: bytes) -> dict:
    if not body.strip():
        return {}
    try:
        params = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"The request body is not JSON: {exc}.", error_type="SerializationException") from exc
    if not isinstance(params, dict):
        raise ProtocolError("The request body must be a JSON object.", error_type="SerializationException")
    return params
