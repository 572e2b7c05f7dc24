from django.contrib import admin
from django.urls import path

from int21web.harness import views

urlpatterns = [
    path("", views.home, name="home"),
    path("workloads/<str:name>/", views.workload_detail, name="workload"),
    path("admin/", admin.site.urls),
]
