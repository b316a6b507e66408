"""Job templates shared with a group (issue 50): the owner picks one of their groups, its members see
and use the template read-only, anyone else (carol, in no group of alice's) is refused as if it did
not exist; the owner edits and shares it after saving; the template and sweep pages lead back to
their lists."""

import pytest
from django.test import Client
from django.urls import reverse

from jobs import job_templates
from jobs.models import JobTemplate
from jobs.sweeps import submit_sweep
from tests.factories import v2_yaml
from tests.web.test_sweep_pages import GRID

pytestmark = pytest.mark.django_db

CONFIG = v2_yaml("train", "echo <% $parameters.lr %>", extra="parameters: {lr: 0.1}\n")


@pytest.fixture
def shared(user, team) -> JobTemplate:
    return job_templates.save(user, name="team run", config_text=CONFIG, shared_with_group="vision")


@pytest.fixture
def carol_client(stranger) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


def test_it_lists_a_template_shared_with_a_group_for_its_members_saying_whose(bob_client, shared):
    listed = bob_client.get(reverse("templates:list")).content.decode()
    assert 'data-template="team run"' in listed
    assert "Shared with group vision" in listed and "by alice" in listed


def test_a_member_opens_the_submit_form_from_a_shared_template(bob_client, shared, default_vc):
    form = bob_client.get(reverse("jobs:submit"), {"template": shared.pk, "p.lr": "0.5"})
    assert form.status_code == 200
    assert form.context["form_data"].job["parameters"] == "lr=0.5"


def test_it_hides_a_group_template_from_a_user_outside_the_group(carol_client, shared, default_vc):
    assert 'data-template="team run"' not in carol_client.get(reverse("templates:list")).content.decode()
    assert carol_client.get(reverse("templates:detail", args=[shared.pk])).status_code == 404
    assert carol_client.get(reverse("jobs:submit"), {"template": shared.pk}).status_code == 404
    assert carol_client.get(reverse("templates:edit", args=[shared.pk])).status_code == 404


def test_a_member_may_not_edit_unshare_or_delete_a_shared_template(bob_client, shared):
    detail = bob_client.get(reverse("templates:detail", args=[shared.pk])).content.decode()
    assert "data-template-edit" not in detail and reverse("templates:delete", args=[shared.pk]) not in detail
    assert bob_client.get(reverse("templates:edit", args=[shared.pk])).status_code == 404
    changed = {"name": "mine now", "config_text": CONFIG, "visibility": "private"}
    assert bob_client.post(reverse("templates:edit", args=[shared.pk]), changed).status_code == 404
    assert bob_client.post(reverse("templates:delete", args=[shared.pk])).status_code == 404
    template = JobTemplate.objects.get()
    assert (template.name, template.shared_with_group_id) == ("team run", shared.shared_with_group_id)


def test_a_member_who_leaves_the_group_no_longer_sees_its_template(bob_client, other_user, shared, team):
    team.user_set.remove(other_user)
    assert bob_client.get(reverse("templates:detail", args=[shared.pk])).status_code == 404
    assert 'data-template="team run"' not in bob_client.get(reverse("templates:list")).content.decode()


def test_the_owner_edits_a_saved_template_and_shares_it_with_a_group(alice_client, bob_client, user, team):
    template = job_templates.save(user, name="solo", config_text=CONFIG)
    assert bob_client.get(reverse("templates:detail", args=[template.pk])).status_code == 404
    detail = alice_client.get(reverse("templates:detail", args=[template.pk])).content.decode()
    assert f'href="{reverse("templates:edit", args=[template.pk])}"' in detail
    form = alice_client.get(reverse("templates:edit", args=[template.pk])).content.decode()
    assert '<option value="group:vision" >' in form
    edited = CONFIG.replace("echo", "python train.py")
    answer = alice_client.post(
        reverse("templates:edit", args=[template.pk]),
        {"name": "solo v2", "summary": "s", "description": "", "visibility": "group:vision", "config_text": edited},
    )
    assert answer.status_code == 302 and answer.url == reverse("templates:detail", args=[template.pk])
    template.refresh_from_db()
    assert (template.name, template.visibility, template.shared_with_group) == ("solo v2", "private", team)
    assert "python train.py" in template.config_text
    assert bob_client.get(reverse("templates:detail", args=[template.pk])).status_code == 200


def test_the_owner_unshares_a_template_from_the_group(alice_client, bob_client, shared):
    answer = alice_client.post(
        reverse("templates:edit", args=[shared.pk]),
        {"name": "team run", "visibility": "private", "config_text": CONFIG},
    )
    assert answer.status_code == 302
    assert bob_client.get(reverse("templates:detail", args=[shared.pk])).status_code == 404


def test_it_refuses_sharing_with_a_group_the_owner_is_not_in(alice_client, user, stranger):
    from django.contrib.auth.models import Group

    Group.objects.create(name="others").user_set.add(stranger)
    template = job_templates.save(user, name="solo", config_text=CONFIG)
    answer = alice_client.post(
        reverse("templates:edit", args=[template.pk]),
        {"name": "solo", "visibility": "group:others", "config_text": CONFIG},
    )
    assert answer.status_code == 400
    assert 'you are in no group named "others"' in answer.content.decode().replace("&quot;", '"')
    assert JobTemplate.objects.get().shared_with_group is None


def test_it_keeps_the_stored_name_when_an_edit_takes_a_name_in_use(alice_client, user):
    job_templates.save(user, name="taken", config_text=CONFIG)
    template = job_templates.save(user, name="solo", config_text=CONFIG)
    answer = alice_client.post(
        reverse("templates:edit", args=[template.pk]),
        {"name": "taken", "visibility": "private", "config_text": CONFIG},
    )
    assert answer.status_code == 400 and "you have a template named" in answer.content.decode()
    template.refresh_from_db()
    assert template.name == "solo"


def test_the_template_pages_lead_back_to_the_list(alice_client, user):
    template = job_templates.save(user, name="solo", config_text=CONFIG)
    back = f'<a href="{reverse("templates:list")}" data-crumb-templates>Templates</a>'
    for url in (
        reverse("templates:detail", args=[template.pk]),
        reverse("templates:edit", args=[template.pk]),
        reverse("templates:delete", args=[template.pk]),
        reverse("templates:new"),
    ):
        assert back in alice_client.get(url).content.decode(), url


def test_the_sweep_pages_lead_back_to_the_list(alice_client, user, default_vc):
    submit_sweep(user, GRID)
    back = f'<a href="{reverse("sweeps:list")}" data-crumb-sweeps>Sweeps</a>'
    for url in (reverse("sweeps:detail", args=["alice~lrs"]), reverse("sweeps:stop", args=["alice~lrs"])):
        assert back in alice_client.get(url).content.decode(), url
