import pytest
from django.contrib.auth.models import Group, User

from int21web.accounts.roles import ROLES


@pytest.fixture
def users(db):
    """One user per role, password int21-demo (as `manage.py demo` makes them)."""
    made = {}
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        user = User.objects.create_user(role, password="int21-demo")
        user.groups.add(group)
        made[role] = user
    return made


@pytest.fixture
def as_role(client, users):
    def login(role):
        client.force_login(users[role])
        return client
    return login
