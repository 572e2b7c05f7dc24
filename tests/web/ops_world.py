"""What the own-ops and engine web tests share: an engineer (erin) and a viewer (vic), and a
client signed in as one of them."""
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client


@pytest.fixture
def people(db):
    made = {}
    for name, role in (("erin", "engineer"), ("vic", "viewer")):
        made[name] = User.objects.create_user(name, password="int21-demo")
        made[name].groups.add(Group.objects.get_or_create(name=role)[0])
    return made


def client_for(user):
    c = Client()
    c.force_login(user)
    return c
