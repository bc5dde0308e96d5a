"""Validation of what botocore sends but MTurk refuses."""

import pytest

from rehearsal.localturk.errors import RequestError
from rehearsal.localturk.models import HIT, HITType
from rehearsal.localturk.qualifications import LOCALE, PERCENT_APPROVED
from rehearsal.localturk.validation import params_validate

from .conftest import EXTERNAL_QUESTION, HIT_TYPE, hit_create

TYPE = {"Title": "t", "Description": "d", "Reward": "0.06", "AssignmentDurationInSeconds": 600}


@pytest.mark.parametrize(
    "operation, params, fragment",
    [
        ("CreateHITType", {**TYPE, "Reward": "0.065"}, "pattern"),
        ("CreateHITType", {**TYPE, "Reward": ".5"}, "pattern"),
        ("CreateHITType", {**TYPE, "Reward": "$1"}, "pattern"),
        ("CreateHITType", {**TYPE, "Reward": "0.00"}, "minimum"),
        ("CreateHITType", {**TYPE, "AssignmentDurationInSeconds": 29}, "range"),
        ("CreateHITType", {**TYPE, "AutoApprovalDelayInSeconds": 2_592_001}, "range"),
        ("CreateHITType", {**TYPE, "Title": "x" * 129}, "128"),
        ("CreateHITType", {**TYPE, "AssignmentDurationInSeconds": True}, "integer"),
        ("ListHITs", {"MaxResults": 500}, "less than or equal to 100"),
        ("GetHIT", {"HITId": "3abc"}, "pattern"),
        ("GetHIT", {"HITId": "3" * 65}, "length"),
        ("CreateWorkerBlock", {"WorkerId": "B123", "Reason": "x"}, "pattern"),
        ("ListAssignmentsForHIT", {"HITId": "3ABC", "AssignmentStatuses": ["Accepted"]}, "enum"),
        ("ListAssignmentsForHIT", {"HITId": "3ABC", "AssignmentStatuses": "Submitted"}, "type"),
        ("RejectAssignment", {"AssignmentId": "3ABC", "RequesterFeedback": "bad\x07"}, "not allowed"),
        ("CreateHITWithHITType", {"HITTypeId": "3ABC", "LifetimeInSeconds": 31_536_001}, "range"),
        ("NotifyWorkers", {"Subject": "s", "MessageText": "m", "WorkerIds": ["A1"] * 101}, "at most 100"),
        ("CreateHITType", {**TYPE, "Unknown": 1}, "Unknown parameter"),
        ("GetAccountBalance", {"Extra": 1}, "Unknown parameter"),
    ],
)
def test_refused(operation, params, fragment):
    with pytest.raises(RequestError) as error:
        params_validate(operation, params)

    assert fragment in error.value.message


@pytest.mark.parametrize(
    "requirement",
    [
        {"QualificationTypeId": LOCALE, "Comparator": "EqualTo", "IntegerValues": [1]},
        {"QualificationTypeId": LOCALE, "Comparator": "GreaterThan", "LocaleValues": [{"Country": "US"}]},
        {
            "QualificationTypeId": LOCALE,
            "Comparator": "EqualTo",
            "LocaleValues": [{"Country": "US"}, {"Country": "CA"}],
        },
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "GreaterThan", "IntegerValues": [90, 95]},
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "In", "IntegerValues": list(range(16))},
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "Exists", "IntegerValues": [1]},
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "Bigger", "IntegerValues": [1]},
        {
            "QualificationTypeId": PERCENT_APPROVED,
            "Comparator": "Exists",
            "RequiredToPreview": True,
            "ActionsGuarded": "Accept",
        },
    ],
)
def test_refused_qualification_requirements(requirement):
    with pytest.raises(RequestError):
        params_validate("CreateHITType", {**TYPE, "QualificationRequirements": [requirement]})


def test_accepted():
    requirements = [
        {
            "QualificationTypeId": LOCALE,
            "Comparator": "In",
            "LocaleValues": [{"Country": "US"}, {"Country": "CA"}],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [95]},
        {"QualificationTypeId": "3" * 30, "Comparator": "DoesNotExist"},
    ]
    params_validate("CreateHITType", {**TYPE, "Reward": "5", "QualificationRequirements": requirements})
    params_validate("UpdateExpirationForHIT", {"HITId": "3ABC", "ExpireAt": 1420070400})
    params_validate("GetAccountBalance", {})


@pytest.mark.mturk
@pytest.mark.parametrize(
    "call",
    [
        lambda c, t: c.create_hit_type(**{**HIT_TYPE, "Reward": "0.065"}),
        lambda c, t: c.list_hits(MaxResults=500),
        lambda c, t: hit_create(c, t, LifetimeInSeconds=10),
        lambda c, t: hit_create(c, t, Question="<QuestionForm/>"),
        lambda c, t: hit_create(c, t, Question=EXTERNAL_QUESTION.replace("https://tasks.example.org/hit/42", "/x")),
    ],
    ids=["reward", "max-results", "lifetime", "question-form", "relative-url"],
)
def test_boto3_raises_request_error_and_nothing_is_written(mturk, hit_type_id, call):
    with pytest.raises(mturk.exceptions.RequestError):
        call(mturk, hit_type_id)

    assert HIT.objects.count() == 0
    assert HITType.objects.count() == 1
