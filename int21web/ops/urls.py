from django.urls import path

from int21web.ops import views

urlpatterns = [
    path("ops/", views.problem_list, name="ops"),
    path("ops/import/", views.import_page, name="op_import"),
    path("ops/<str:name>/", views.problem, name="op"),
    path("engines/", views.engine_list, name="engines"),
    path("engines/<str:name>/", views.engine, name="engine"),
    path("engines/<str:name>/jobs/", views.engine_job, name="engine-job"),
]
