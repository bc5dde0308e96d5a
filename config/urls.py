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
    path("api/", include("dashboard.api.urls")),
    path("hit/", include("crowd.hit_page.urls")),
    path("s/", include("crowd.channels.urls")),
    path("", include("dashboard.crowd_urls")),
    path("", include("dashboard.urls")),
    path("", include("dashboard.suitability_urls")),
    path("", include("dashboard.ranking_urls")),
    path("", include("maps.urls")),
]

if settings.LOCALTURK_ENABLED:
    urlpatterns.append(path("localturk/", include("rehearsal.localturk.urls")))
if settings.LOCALPROLIFIC_ENABLED:
    urlpatterns.append(path("localprolific/", include("rehearsal.localprolific.urls")))
