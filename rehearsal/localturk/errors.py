"""Errors the local endpoint answers with, shaped as MTurk sends them (reference §1.4-1.5).

`MTurkError` and its subclasses become `{"__type": ..., "Message": ..., "TurkErrorCode": ...}`
with their HTTP status; botocore turns `RequestError` and `ServiceFault` into
`client.exceptions.RequestError` / `ServiceFault`, and retries `ThrottlingException` and 500s.
Worker-side errors (the simulator's accept, return, submit) are `WorkerActionError`.
"""

import time

from rest_framework import status

from config.errors import ApplicationError

# TurkErrorCodes. The parameter-value codes are MTurk's legacy names (unverified for 2017).
HIT_DOES_NOT_EXIST = "AWS.MechanicalTurk.HITDoesNotExist"
ASSIGNMENT_DOES_NOT_EXIST = "AWS.MechanicalTurk.AssignmentDoesNotExist"
INVALID_ASSIGNMENT_STATE = "AWS.MechanicalTurk.InvalidAssignmentState"
INVALID_HIT_STATE = "AWS.MechanicalTurk.InvalidHITState"
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
DUPLICATE_REQUEST = "AWS.MechanicalTurk.DuplicateRequest"
INVALID_MAXIMUM_ASSIGNMENTS_INCREASE = "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease"
HIT_TYPE_DOES_NOT_EXIST = "AWS.MechanicalTurk.HITTypeDoesNotExist"
INSUFFICIENT_FUNDS = "AWS.MechanicalTurk.InsufficientFunds"
UNSUPPORTED = "AWS.MechanicalTurk.UnsupportedOperation"
INVALID_PARAMETER = "AWS.InvalidParameterValue"
PARAMETER_OUT_OF_RANGE = "AWS.ParameterOutOfRange"


def stamped(message: str) -> str:
    """MTurk ends every message with the time in epoch milliseconds."""
    return f"{message} ({int(time.time() * 1000)})"


class MTurkError(ApplicationError):
    """An error in MTurk's wire shape; `code` is the TurkErrorCode."""

    error_type = "RequestError"
    http_status: int = status.HTTP_400_BAD_REQUEST

    def __init__(self, message: str, *, code: str = INVALID_PARAMETER):
        super().__init__(stamped(message), code=code)

    def body(self) -> dict:
        return {"__type": self.error_type, "Message": self.message, "TurkErrorCode": self.code}


class RequestError(MTurkError):
    """A client fault (HTTP 400); botocore never retries it."""


class ServiceFault(MTurkError):
    error_type = "ServiceFault"
    http_status = status.HTTP_500_INTERNAL_SERVER_ERROR

    def __init__(self, message: str = "The service encountered an error. Please retry."):
        super().__init__(message, code="AWS.MechanicalTurk.ServiceFault")


class Throttled(MTurkError):
    """What MTurk answers to bursts; botocore retries it in both retry modes."""

    error_type = "ThrottlingException"

    def __init__(self):
        super().__init__("Rate exceeded", code="ThrottlingException")

    def body(self) -> dict:
        return {"__type": self.error_type, "Message": "Rate exceeded"}


class ProtocolError(MTurkError):
    """A request boto3 would never send (unknown target, body that is not JSON); not modeled."""

    def __init__(self, message: str, *, error_type: str):
        super().__init__(message, code=error_type)
        self.error_type = error_type

    def body(self) -> dict:
        return {"__type": self.error_type, "Message": self.message}


class WorkerActionError(ApplicationError):
    """A refused worker action in the simulator (accept, return, abandon, submit)."""

    def __init__(self, message: str, *, code: str, http_status: int = status.HTTP_409_CONFLICT):
        super().__init__(message, code=code)
        self.http_status = http_status
