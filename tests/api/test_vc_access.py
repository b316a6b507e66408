"""A submit judges its VC's access in one query (clusters.models.vc_access): the same answers as
VirtualCluster.is_open_to and may_use_crit, the rules every other path asks."""

from __future__ import annotations

import pytest

from clusters.models import VcAccess, VirtualCluster, open_vc_names, vc_access


@pytest.fixture
def people(user, other_user, admin_user, stranger):
    return [user, other_user, admin_user, stranger]


def access(name: str, person) -> VcAccess:
    found = vc_access(name, person)
    assert found is not None
    return found


def assert_same_answers(vc: VirtualCluster, people) -> None:
    for person in people:
        access = vc_access(vc.name, person)
        assert access is not None and access.vc.pk == vc.pk
        assert (access.open, access.crit) == (vc.is_open_to(person), vc.may_use_crit(person)), person.username


def test_it_opens_a_vc_naming_nobody_to_everyone(people, default_vc):
    assert_same_answers(default_vc, people)
    assert all(access("default", person).open for person in people)


def test_it_opens_a_vc_naming_users_to_them_and_admins_alone(people, user):
    vc = VirtualCluster.objects.create(name="private", share_percent=0)
    vc.allowed_users.add(user)
    assert_same_answers(vc, people)
    assert [person.username for person in people if access("private", person).open] == ["alice", "root"]


def test_it_opens_a_vc_naming_a_group_to_its_members(people, team):
    vc = VirtualCluster.objects.create(name="team", share_percent=0)
    vc.allowed_groups.add(team)
    assert_same_answers(vc, people)
    assert [person.username for person in people if access("team", person).open] == ["alice", "bob", "root"]


def test_it_gives_crit_to_the_users_named_for_it_and_admins(people, other_user, default_vc):
    default_vc.crit_users.add(other_user)
    assert_same_answers(default_vc, people)
    assert [person.username for person in people if access("default", person).crit] == ["bob", "root"]


def test_it_finds_no_vc_by_an_unknown_name(user):
    assert vc_access("nowhere", user) is None


def test_it_lists_the_vcs_open_to_each_person_as_is_open_to_does(people, user, team):
    private = VirtualCluster.objects.create(name="private", share_percent=0)
    private.allowed_users.add(user)
    VirtualCluster.objects.create(name="team", share_percent=0).allowed_groups.add(team)
    for person in people:
        expected = [vc.name for vc in VirtualCluster.objects.order_by("name") if vc.is_open_to(person)]
        assert open_vc_names(person) == expected, person.username
    assert {person.username: len(open_vc_names(person)) for person in people} == {
        "alice": 3,
        "bob": 2,
        "root": 3,
        "carol": 1,
    }
