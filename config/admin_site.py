"""The admin site, with its login under the one login throttle (config/login_throttle.py).

Django's `AdminSite.login` builds a plain `LoginView`; this one builds `ThrottledLoginView`
with the same context, form and template, so `/admin/login/` counts and refuses failed logins
exactly as `/accounts/login/` and `/api/auth/token/` do (issue 24, N2). Installed as the
default site by `config.apps.AdminConfig`, so `admin.site` and `@admin.register` are this one.
"""

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from config.login_throttle import ThrottledLoginView


class AdminSite(admin.AdminSite):
    @method_decorator(never_cache)
    @login_not_required
    def login(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        if request.method == "GET" and self.has_permission(request):
            return HttpResponseRedirect(reverse("admin:index", current_app=self.name))
        context = {
            **self.each_context(request),
            "title": "Log in",
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
        }
        if REDIRECT_FIELD_NAME not in request.GET and REDIRECT_FIELD_NAME not in request.POST:
            context[REDIRECT_FIELD_NAME] = reverse("admin:index", current_app=self.name)
        context.update(extra_context or {})
        request.current_app = self.name
        view = ThrottledLoginView.as_view(
            extra_context=context,
            authentication_form=self.login_form or AdminAuthenticationForm,
            template_name=self.login_template or "admin/login.html",
        )
        response = view(request)
        assert isinstance(response, HttpResponse), "a login page renders a template or redirects"
        return response
