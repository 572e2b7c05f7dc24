from django.urls import path

from int21web.fleet import views

urlpatterns = [
    path("", views.worker_list, name="workers"),
]
