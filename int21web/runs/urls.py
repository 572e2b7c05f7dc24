from django.urls import path

from int21web.runs import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
