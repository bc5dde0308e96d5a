"""The one-line pages of a participant's session (unknown link, try again, nothing left)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def message_page(request: HttpRequest, title: str, text: str, status: int = 200) -> HttpResponse:
    return render(request, "session/message.html", {"title": title, "text": text}, status=status)
