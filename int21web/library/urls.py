from django.urls import path

from int21web.library import views

urlpatterns = [
    path("candidates/<int:candidate_id>/", views.candidate, name="candidate"),
    path("candidates/<int:candidate_id>/comments/", views.comment, name="candidate-comment"),
    path("candidates/<int:candidate_id>/propose/", views.propose, name="candidate-propose"),
    path("candidates/<int:candidate_id>/reevaluate/", views.reevaluate, name="candidate-reevaluate"),
    path("reviews/", views.reviews, name="reviews"),
    path("reviews/<int:proposal_id>/approve/", views.approve, name="review-approve"),
    path("reviews/<int:proposal_id>/request-changes/", views.request_changes, name="review-request-changes"),
    path("reviews/<int:proposal_id>/recheck/", views.recheck, name="review-recheck"),
    path("library/", views.library, name="library"),
    path("library/<int:kernel_id>/", views.kernel, name="kernel"),
    path("library/<int:kernel_id>/download/", views.download, name="kernel-download"),
    path("library/<int:kernel_id>/crown/", views.crown, name="kernel-crown"),
    path("knowledge/", views.knowledge, name="knowledge"),
    path("engines/<str:name>/propose/", views.engine_propose, name="engine-propose"),
    path("reviews/engines/<int:proposal_id>/", views.engine_review, name="engine-review"),
    path("reviews/engines/<int:proposal_id>/approve/", views.engine_approve, name="engine-approve"),
    path("reviews/engines/<int:proposal_id>/request-changes/", views.engine_request_changes,
         name="engine-request-changes"),
    path("reviews/engines/<int:proposal_id>/recheck/", views.engine_recheck, name="engine-recheck"),
    path("library/engines/<int:version_id>/", views.engine_version, name="engine-version"),
    path("library/engines/<int:version_id>/download/", views.engine_download, name="engine-download"),
]
