"""Input validation: botocore's own model first, then what botocore leaves to the server.

botocore checks required members, types and `min` (reference §1.6). MTurk also rejects
values over `max`, off `pattern` (EntityId, CustomerId, CurrencyAmount) or outside an
`enum`, and it enforces the ranges of reference §2 (lifetimes, durations, text lengths,
qualification requirements). Everything fails as a 400 RequestError.
"""

import re
from decimal import Decimal
from functools import cache

import botocore.session
from botocore.exceptions import ParamValidationError
from botocore.model import OperationModel, Shape
from botocore.validate import validate_parameters

from .errors import INVALID_PARAMETER, PARAMETER_OUT_OF_RANGE, RequestError
from .qualifications import LOCALE

MINIMUM_AMOUNT = Decimal("0.01")

# Inclusive ranges of top-level integer members (legacy CreateHIT documentation).
RANGES = {
    "AssignmentDurationInSeconds": (30, 31_536_000),
    "AutoApprovalDelayInSeconds": (0, 2_592_000),
    "LifetimeInSeconds": (30, 31_536_000),
    "MaxAssignments": (1, 1_000_000_000),
    "NumberOfAdditionalAssignments": (1, 1_000_000_000),
}
# Maximum lengths of top-level text members, in characters.
LENGTHS = {
    "Title": 128,
    "Description": 2000,
    "Keywords": 1000,
    "RequesterAnnotation": 255,
    "RequesterFeedback": 1024,
    "Subject": 200,
    "MessageText": 4096,
}
LIST_LENGTHS = {"QualificationRequirements": 10, "WorkerIds": 100}
AMOUNTS = ("Reward", "BonusAmount")
QUESTION_MAX_BYTES = 65_535
# ASCII 0-8, 11, 12, 14-31 are refused in feedback (reference §2.8).
_CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


@cache
def service_model():
    return botocore.session.get_session().get_service_model("mturk")


def operation_model(name: str) -> OperationModel:
    return service_model().operation_model(name)


def params_validate(operation: str, params: dict) -> None:
    """Raise RequestError unless `params` is an input MTurk would accept for `operation`."""
    shape = operation_model(operation).input_shape
    if shape is None:
        if params:
            raise RequestError(f"{operation} takes no parameters.")
        return
    try:
        validate_parameters(params, shape)
    except ParamValidationError as exc:
        raise RequestError(str(exc).replace("\n", " ")) from exc
    _constraints_check(params, shape, "")
    _ranges_check(params)
    if "QualificationRequirements" in params:
        for index, requirement in enumerate(params["QualificationRequirements"]):
            _requirement_check(requirement, f"QualificationRequirements[{index}]")


def _constraint_error(value, path: str, rule: str) -> RequestError:
    return RequestError(
        f"Value '{value}' at '{path}' failed to satisfy constraint: Member must {rule}", code=INVALID_PARAMETER
    )


def _constraints_check(value, shape: Shape, path: str) -> None:
    """The `max`, `pattern` and `enum` traits, and the JSON types botocore lets through."""
    kind, meta = shape.type_name, shape.metadata
    if kind == "structure":
        for name, member in value.items():
            _constraints_check(member, shape.members[name], f"{path}.{name}" if path else name)
    elif kind == "list":
        if "max" in meta and len(value) > meta["max"]:
            raise _constraint_error(value, path, f"have length less than or equal to {meta['max']}")
        for index, item in enumerate(value):
            _constraints_check(item, shape.member, f"{path}[{index}]")
    elif kind == "string":
        if "max" in meta and len(value) > meta["max"]:
            raise _constraint_error(value, path, f"have length less than or equal to {meta['max']}")
        if "pattern" in meta and not re.search(meta["pattern"], value):
            raise _constraint_error(value, path, f"satisfy regular expression pattern: {meta['pattern']}")
        if shape.enum and value not in shape.enum:
            raise _constraint_error(value, path, f"satisfy enum value set: [{', '.join(shape.enum)}]")
    elif kind in ("integer", "long"):
        if isinstance(value, bool):
            raise _constraint_error(value, path, "be an integer")
        if "max" in meta and value > meta["max"]:
            raise _constraint_error(value, path, f"have value less than or equal to {meta['max']}")
    elif kind == "timestamp" and isinstance(value, bool):
        raise _constraint_error(value, path, "be a timestamp")


def _ranges_check(params: dict) -> None:
    for name, (low, high) in RANGES.items():
        if name in params and not low <= params[name] <= high:
            raise RequestError(
                f"The value {params[name]} is invalid for {name}. Valid values range from {low} to {high}.",
                code=PARAMETER_OUT_OF_RANGE,
            )
    for name, limit in LENGTHS.items():
        if name in params and len(params[name]) > limit:
            raise RequestError(f"{name} must not be longer than {limit} characters.", code=PARAMETER_OUT_OF_RANGE)
    for name, limit in LIST_LENGTHS.items():
        if name in params and len(params[name]) > limit:
            raise RequestError(f"{name} can hold at most {limit} entries.", code=PARAMETER_OUT_OF_RANGE)
    for name in AMOUNTS:
        if name in params and Decimal(params[name]) < MINIMUM_AMOUNT:
            raise RequestError(
                f"The value {params[name]} is invalid for {name}. The minimum is 0.01.", code=PARAMETER_OUT_OF_RANGE
            )
    if _CONTROL_CHARACTERS.search(params.get("RequesterFeedback", "")):
        raise RequestError("RequesterFeedback contains characters that are not allowed.")
    if "Question" in params and len(params["Question"].encode()) > QUESTION_MAX_BYTES:
        raise RequestError(f"Question must not be longer than {QUESTION_MAX_BYTES} bytes.", code=PARAMETER_OUT_OF_RANGE)


def _requirement_check(requirement: dict, path: str) -> None:
    """Comparator and values must fit together (reference §2.0, §4.2)."""
    comparator = requirement["Comparator"]
    integers = requirement.get("IntegerValues", [])
    locales = requirement.get("LocaleValues", [])
    if "RequiredToPreview" in requirement and "ActionsGuarded" in requirement:
        raise RequestError(f"{path}: RequiredToPreview and ActionsGuarded cannot be combined.")
    if comparator in ("Exists", "DoesNotExist"):
        if integers or locales:
            raise RequestError(f"{path}: {comparator} takes no IntegerValues or LocaleValues.")
        return
    if requirement["QualificationTypeId"] == LOCALE:
        values, limit = locales, 30
        if integers or comparator not in ("EqualTo", "NotEqualTo", "In", "NotIn"):
            raise RequestError(
                f"{path}: the Locale qualification compares LocaleValues with EqualTo, NotEqualTo, In or NotIn."
            )
    else:
        values, limit = integers, 15
        if locales:
            raise RequestError(f"{path}: LocaleValues are only valid for the Locale qualification.")
    if comparator in ("In", "NotIn"):
        if not 1 <= len(values) <= limit:
            raise RequestError(f"{path}: {comparator} takes between 1 and {limit} values.")
    elif len(values) != 1:
        raise RequestError(f"{path}: {comparator} takes exactly one value.")
