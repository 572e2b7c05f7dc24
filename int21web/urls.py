from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from int21web.api.api import api
from int21web.harness import views as harness_views

urlpatterns = [
    path("", include("int21web.runs.urls")),
    path("", include("int21web.library.urls")),
    path("", include("int21web.ops.urls")),
    path("workloads/", harness_views.home, name="workloads"),
    path("workloads/<str:name>/", harness_views.workload_detail, name="workload"),
    path("accounts/login/", auth_views.LoginView.as_view(extra_context={"demo": settings.EMBEDDED}), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("workers/", include("int21web.fleet.urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
