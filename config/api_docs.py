"""Who may read the API's schema and its docs page: anyone signed in (a session, or a token for
the schema), and everyone when `API_DOCS_PUBLIC` is set. The schema lists every operation and
its parameters; a deployment that wants it public says so."""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from rest_framework.permissions import BasePermission


def api_docs_open_to(user) -> bool:
    return settings.API_DOCS_PUBLIC or user.is_authenticated


class ApiDocsAccess(BasePermission):
    """The schema view's permission: 401 without credentials (DRF's answer), 200 with them."""

    def has_permission(self, request, view) -> bool:
        return api_docs_open_to(request.user)


def api_docs(request):
    """The Swagger UI page (self-hosted); a visitor who is not signed in goes to the login page."""
    if not api_docs_open_to(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "api/docs.html")
