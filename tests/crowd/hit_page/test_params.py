"""The submit view's form reading (crowd.hit_page.params.form_read): what Django's request.POST
would hold, under Django's limits, without building the QueryDict."""

import pytest
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.test import RequestFactory, override_settings

from crowd.hit_page.params import form_read, last_values

URLENCODED = "application/x-www-form-urlencoded"


def _post(body: bytes, content_type: str = URLENCODED):
    return RequestFactory().generic("POST", "/hit/x/submit/", body, content_type=content_type)


@pytest.mark.parametrize(
    "body",
    [
        b"assignmentId=A1&workerId=W1&rating-3=4&rating-1=5",
        b"a=1&a=2&a=",  # repeated and blank values, in order
        b"blank=&=nameless&novalue&&",
        b"text=caf%C3%A9+au+lait&plus=%2B&amp=%26&semicolon=a;b",
        b"broken=%C3%28&latin=\xe9",  # not UTF-8: read as ISO-8859-1, as Django does
        b"",
    ],
)
def test_a_urlencoded_form_reads_as_request_post(body):
    assert form_read(_post(body)) == dict(_post(body).POST.lists())


def test_a_multipart_form_is_request_posts():
    body = b'--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--\r\n'
    request = _post(body, content_type="multipart/form-data; boundary=b")
    assert form_read(request) == {"a": ["1"]}


def test_a_form_read_already_is_not_read_again():
    request = _post(b"a=1")
    request.POST  # noqa: B018 (the rate limit that counts tokens reads it first)
    assert form_read(request) == {"a": ["1"]}


@override_settings(DATA_UPLOAD_MAX_NUMBER_FIELDS=3)
def test_more_fields_than_django_allows_are_refused_as_django_refuses_them():
    assert form_read(_post(b"a=1&b=2&c=3")) == {"a": ["1"], "b": ["2"], "c": ["3"]}
    with pytest.raises(TooManyFieldsSent):
        _post(b"a=1&b=2&c=3&d=4").POST  # noqa: B018
    with pytest.raises(TooManyFieldsSent):
        form_read(_post(b"a=1&b=2&c=3&d=4"))


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10)
def test_a_body_larger_than_django_allows_is_refused():
    with pytest.raises(RequestDataTooBig):
        form_read(_post(b"a=" + b"x" * 20))


def test_last_values_are_what_querydict_get_gives():
    request = _post(b"a=1&a=2&b=")
    assert (
        last_values(form_read(request))
        == {"a": request.POST.get("a"), "b": request.POST.get("b")}
        == {"a": "2", "b": ""}
    )
