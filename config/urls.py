from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from config.health import healthz
from config.login_throttle import ThrottledLoginView

handler400 = "config.error_views.bad_request"
handler404 = "config.error_views.not_found"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),  # before auth.urls' own
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("config.api_urls")),
    path("hit/", include("annotation.hit_page.urls")),
    path("s/", include("crowd.sessions.urls")),
    path("", include("crowd.urls")),
    path("", include("annotation.dashboard.urls")),
    path("", include("ranking.urls")),
    path("", include("maps.urls")),
]

if settings.LOCALTURK_ENABLED:
    urlpatterns.append(path("localturk/", include("crowd.localturk.urls")))
if settings.LOCALPROLIFIC_ENABLED:
    urlpatterns.append(path("localprolific/", include("crowd.localprolific.urls")))
