import pytest


@pytest.mark.django_db
def test_the_home_page_lists_workloads_and_targets(client):
    page = client.get("/workloads/")
    assert page.status_code == 200
    assert b"softmax" in page.content and b"cpu" in page.content


@pytest.mark.django_db
def test_a_workload_page_shows_its_signature_and_space(client):
    page = client.get("/workloads/softmax/")
    assert page.status_code == 200
    assert b"void kernel(const float *x, float *y, int64_t rows, int64_t cols)" in page.content
    assert b"THREADS" in page.content


@pytest.mark.django_db
def test_an_unknown_workload_is_a_404_not_a_500(client):
    assert client.get("/workloads/nope/").status_code == 404
