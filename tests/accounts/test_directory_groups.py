"""A directory's groups mirrored at sign-in (accounts.groups.set_directory_groups): matched by
their directory name, never taking over an admin group or a group another directory name owns;
admins only through the group PAI_DIRECTORY_ADMIN_GROUP names."""

import pytest
from django.contrib.auth.models import Group

from accounts.groups import set_directory_groups
from accounts.models import AuditEntry, GroupInfo
from clusters.grants import create_group

pytestmark = pytest.mark.django_db


def test_a_new_directory_group_is_made_granting_nothing(user):
    assert set_directory_groups(user, ["ml-team"], "ldap") == ["ml_team"]
    info = GroupInfo.objects.get(group__name="ml_team")
    assert (info.external_name, info.admin, info.source) == ("ml-team", False, "ldap")


def test_the_directorys_admingroup_makes_no_admin_unless_named(user, settings):
    settings.PAI_DIRECTORY_ADMIN_GROUP = ""
    set_directory_groups(user, ["admingroup"], "oidc")
    assert not user.is_staff
    assert not GroupInfo.objects.filter(admin=True).exists()


def test_the_group_named_by_pai_directory_admin_group_makes_admins(user, settings):
    settings.PAI_DIRECTORY_ADMIN_GROUP = "pai-admins"
    assert set_directory_groups(user, ["pai-admins"], "ldap") == ["admingroup"]
    assert user.is_staff and user.is_superuser
    set_directory_groups(user, [], "ldap")
    assert not user.is_staff


def test_a_directory_group_never_joins_an_admin_group_by_its_name(user, admin_user, settings):
    settings.PAI_DIRECTORY_ADMIN_GROUP = ""
    create_group(admin_user, "ops", admin=True)
    assert set_directory_groups(user, ["ops"], "oidc") == []
    assert not user.is_staff
    assert AuditEntry.objects.filter(action="group.skip", target="ops").exists()


def test_a_directory_group_never_takes_a_group_another_directory_name_owns(user, admin_user):
    create_group(admin_user, "ml_team", external_name="cn=ml-team,ou=groups,dc=example,dc=org")
    assert set_directory_groups(user, ["ml-team"], "oidc") == []
    assert GroupInfo.objects.get(group__name="ml_team").external_name.startswith("cn=")


def test_a_local_group_of_that_name_without_a_directory_name_is_taken(user, admin_user):
    create_group(admin_user, "vision")
    assert set_directory_groups(user, ["vision"], "ldap") == ["vision"]
    assert GroupInfo.objects.get(group__name="vision").external_name == "vision"


def test_groups_given_by_hand_stay_and_the_directorys_follow_it(user, admin_user):
    user.groups.add(create_group(admin_user, "by_hand"))
    set_directory_groups(user, ["a", "b"], "ldap")
    assert set_directory_groups(user, ["b"], "ldap") == ["b", "by_hand"]
    assert Group.objects.filter(name="a").exists()  # the group stays, without this member
