"""HIT types and HITs through real boto3 over loopback HTTP."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from rehearsal.localturk import state
from rehearsal.localturk.models import HIT, HITType, Requester, RequestToken

from .conftest import EXTERNAL_QUESTION, HIT_TYPE, hit_create

pytestmark = pytest.mark.mturk


def test_create_hit_and_read_it_back(mturk, hit_type_id):
    created = hit_create(mturk, hit_type_id, RequesterAnnotation="batch=7;item=42")

    fetched = mturk.get_hit(HITId=created["HITId"])["HIT"]
    listed = mturk.list_hits(MaxResults=100)

    assert re.fullmatch(r"[A-Z0-9]{30}", created["HITId"])
    assert fetched["HITTypeId"] == hit_type_id
    assert fetched["Title"] == HIT_TYPE["Title"]
    assert fetched["Reward"] == "0.06"
    assert fetched["Question"] == EXTERNAL_QUESTION
    assert fetched["RequesterAnnotation"] == "batch=7;item=42"
    assert fetched["HITStatus"] == "Assignable"
    assert (fetched["NumberOfAssignmentsAvailable"], fetched["NumberOfAssignmentsPending"]) == (3, 0)
    assert fetched["Expiration"] - fetched["CreationTime"] == timedelta(hours=1)
    assert [hit["HITId"] for hit in listed["HITs"]] == [created["HITId"]]
    assert listed["NumResults"] == 1 and "NextToken" not in listed


def test_create_hit_in_one_call_reuses_the_matching_type(mturk, hit_type_id):
    hit = mturk.create_hit(**HIT_TYPE, LifetimeInSeconds=600, Question=EXTERNAL_QUESTION)["HIT"]

    assert hit["HITTypeId"] == hit_type_id
    assert mturk.create_hit_type(**HIT_TYPE)["HITTypeId"] == hit_type_id
    assert mturk.create_hit_type(**{**HIT_TYPE, "Reward": "0.07"})["HITTypeId"] != hit_type_id
    assert HITType.objects.count() == 2


def test_requesters_are_told_apart_by_access_key(mturk_factory, mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)
    other = mturk_factory(access_key="AKIDOTHER")

    with pytest.raises(other.exceptions.RequestError) as error:
        other.get_hit(HITId=hit["HITId"])

    assert error.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.HITDoesNotExist"
    assert other.list_hits()["HITs"] == []
    assert set(Requester.objects.values_list("access_key", flat=True)) == {"AKIDLOCAL", "AKIDOTHER"}


def test_duplicate_request_token_names_the_existing_hit(mturk, hit_type_id):
    first = hit_create(mturk, hit_type_id, UniqueRequestToken="task-1")

    with pytest.raises(mturk.exceptions.RequestError) as error:
        hit_create(mturk, hit_type_id, UniqueRequestToken="task-1")

    response = error.value.response
    assert response["TurkErrorCode"] == "AWS.MechanicalTurk.HitAlreadyExists"
    assert first["HITId"] in response["Error"]["Message"]
    assert re.search(r" \(\d{13}\)$", response["Error"]["Message"])
    assert HIT.objects.count() == 1


def test_request_token_expires_after_a_day(mturk, hit_type_id):
    hit_create(mturk, hit_type_id, UniqueRequestToken="task-1")
    RequestToken.objects.update(created_at=datetime.now(UTC) - timedelta(hours=25))

    hit_create(mturk, hit_type_id, UniqueRequestToken="task-1")

    assert HIT.objects.count() == 2


def test_unknown_hit_type_and_unknown_hit(mturk):
    with pytest.raises(mturk.exceptions.RequestError):
        hit_create(mturk, "3" * 30)
    with pytest.raises(mturk.exceptions.RequestError) as error:
        mturk.get_hit(HITId="3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G")
    assert error.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.HITDoesNotExist"
    assert error.value.response["Error"]["Message"].startswith("Hit 3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G does not exist.")


def test_list_hits_pages_through_more_than_a_hundred(mturk, hit_type_id):
    hit_type = HITType.objects.get(type_id=hit_type_id)
    now = datetime.now(UTC)
    HIT.objects.bulk_create(
        HIT(
            requester=hit_type.requester,
            hit_type=hit_type,
            question=EXTERNAL_QUESTION,
            external_url="https://tasks.example.org/",
            max_assignments=1,
            created_at=now,
            expiration=now + timedelta(hours=1),
            available=1,
        )
        for _ in range(205)
    )

    pages = list(mturk.get_paginator("list_hits").paginate(PaginationConfig={"PageSize": 100}))

    tokens = [page["NextToken"] for page in pages if "NextToken" in page]
    ids = [hit["HITId"] for page in pages for hit in page["HITs"]]
    assert [page["NumResults"] for page in pages] == [100, 100, 5]
    assert len(tokens) == len(set(tokens)) == 2
    assert sorted(ids) == sorted(HIT.objects.values_list("hit_id", flat=True))


def test_a_token_from_another_listing_is_refused(mturk, hit_type_id):
    for _ in range(3):
        hit_create(mturk, hit_type_id)
    token = mturk.list_hits(MaxResults=1)["NextToken"]

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.list_reviewable_hits(NextToken=token)
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.list_hits(NextToken="forged")


def test_expire_now_makes_the_hit_reviewable(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)

    mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=datetime(2015, 1, 1))

    expired = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert expired["HITStatus"] == "Reviewable"
    assert expired["NumberOfAssignmentsAvailable"] == 0
    assert expired["Expiration"] <= datetime.now(UTC)
    reviewable = mturk.list_reviewable_hits(HITTypeId=hit["HITTypeId"])["HITs"]
    assert [h["HITId"] for h in reviewable] == [hit["HITId"]]


def test_extending_revives_an_expired_hit_but_shortening_is_refused(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)
    later = datetime.now(UTC) + timedelta(hours=5)

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=datetime.now(UTC) + timedelta(minutes=5))
    mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=datetime(2015, 1, 1))
    mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=later)

    extended = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert extended["HITStatus"] == "Assignable"
    assert abs(extended["Expiration"] - later) < timedelta(seconds=1)


def test_hits_expire_by_the_clock(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)
    HIT.objects.update(expiration=datetime.now(UTC) - timedelta(seconds=1))
    state.next_tick_sweeps()  # as after a second: the sweep runs at most once a second

    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["HITStatus"] == "Reviewable"


def test_delete_hit_only_when_reviewable_and_reviewed(mturk, hit_type_id, worker_factory):
    hit = hit_create(mturk, hit_type_id)
    worker = worker_factory("A1WORKER00001")

    with pytest.raises(mturk.exceptions.RequestError) as assignable:
        mturk.delete_hit(HITId=hit["HITId"])
    assignment_id = worker.complete(hit["HITId"])
    mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=0)
    with pytest.raises(mturk.exceptions.RequestError) as unreviewed:
        mturk.delete_hit(HITId=hit["HITId"])
    mturk.approve_assignment(AssignmentId=assignment_id)
    mturk.delete_hit(HITId=hit["HITId"])

    assert assignable.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidHITState"
    assert "currently in the state 'Assignable'" in assignable.value.response["Error"]["Message"]
    assert "status of: Reviewing, Reviewable" in unreviewed.value.response["Error"]["Message"]
    assert mturk.list_hits()["HITs"] == []
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.get_hit(HITId=hit["HITId"])


def test_review_status_moves_between_reviewable_and_reviewing(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id)
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.update_hit_review_status(HITId=hit["HITId"])
    mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=0)

    mturk.update_hit_review_status(HITId=hit["HITId"])
    reviewing = mturk.list_reviewable_hits(Status="Reviewing")["HITs"]
    mturk.update_hit_review_status(HITId=hit["HITId"], Revert=True)

    assert [h["HITId"] for h in reviewing] == [hit["HITId"]]
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["HITStatus"] == "Reviewable"


def test_additional_assignments_respect_the_ten_assignment_cliff(mturk, hit_type_id):
    hit = hit_create(mturk, hit_type_id, MaxAssignments=5)

    mturk.create_additional_assignments_for_hit(
        HITId=hit["HITId"], NumberOfAdditionalAssignments=4, UniqueRequestToken="more-1"
    )
    with pytest.raises(mturk.exceptions.RequestError) as repeated:
        mturk.create_additional_assignments_for_hit(
            HITId=hit["HITId"], NumberOfAdditionalAssignments=4, UniqueRequestToken="more-1"
        )
    with pytest.raises(mturk.exceptions.RequestError) as cliff:
        mturk.create_additional_assignments_for_hit(HITId=hit["HITId"], NumberOfAdditionalAssignments=1)

    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["MaxAssignments"] == 9
    assert "already been processed" in repeated.value.response["Error"]["Message"]
    assert cliff.value.response["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease"
