from django.urls import path

from int21web.runs import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("goals/", views.goal_list, name="goals"),
    path("goals/new/", views.goal_new, name="goal_new"),
    path("goals/validate/", views.goal_validate, name="goal_validate"),
    path("goals/space/", views.goal_space_rows, name="goal_space"),
    path("goals/<int:goal_id>/", views.goal_detail, name="goal"),
    path("goals/<int:goal_id>/edit/", views.goal_edit, name="goal_edit"),
    path("goals/<int:goal_id>/clone/", views.goal_clone, name="goal_clone"),
    path("goals/<int:goal_id>/start/", views.goal_start, name="goal_start"),
    path("goals/<int:goal_id>/archive/", views.goal_archive, name="goal_archive"),
    path("goals/<int:goal_id>/delete/", views.goal_delete, name="goal_delete"),
    path("runs/", views.run_list, name="runs"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/guidance/", views.run_guidance, name="run_guidance"),
    path("runs/<int:run_id>/<str:action>/", views.run_control, name="run_control"),
]
