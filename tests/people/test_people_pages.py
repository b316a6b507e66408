"""The People pages (admins only): users found and changed, groups and their grants, batch
register from CSV (each bad row said, none created), and every change in the audit list."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from accounts.models import AuditEntry
from clusters.grants import create_group
from clusters.models import VirtualCluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def ml(admin_user):
    VirtualCluster.objects.create(name="ml")
    return create_group(admin_user, "ml", description="Machine learning", vcs=["ml"])


def test_it_refuses_the_people_pages_to_users(user):
    client = Client()
    client.force_login(user)
    for path in ("/people/", "/people/groups/", "/people/import/", "/people/audit/", "/people/users/alice/"):
        assert client.get(path).status_code == 403, path


def test_it_finds_users_by_name_email_or_group(root_client, user, other_user, ml):
    user.groups.add(ml)
    page = root_client.get("/people/?q=ml").content.decode()
    assert 'data-user-row="alice"' in page and 'data-user-row="bob"' not in page


def test_an_admin_puts_a_user_in_a_group_and_the_vc_follows(root_client, user, ml):
    answer = root_client.post("/people/users/alice/", {"email": "a@example.org", "active": "on", "groups": [ml.pk]})
    assert answer.status_code == 302
    assert VirtualCluster.objects.get(name="ml").is_open_to(get_user_model().objects.get(pk=user.pk))
    assert AuditEntry.objects.filter(action="user.groups", target="alice", actor_name="root").exists()


def test_disabling_a_user_stops_their_sign_in_and_revokes_their_tokens(root_client, user):
    from accounts.tokens import issue_token

    issue_token(user, "login")
    root_client.post("/people/users/alice/", {"email": ""})
    user.refresh_from_db()
    assert not user.is_active and not user.api_tokens.exists()


def test_an_admin_cannot_disable_or_unmake_themself(root_client, admin_user):
    answer = root_client.post("/people/users/root/", {"email": "", "active": "on"})
    assert answer.status_code == 400
    assert "you cannot take your own admin rights" in answer.content.decode()
    admin_user.refresh_from_db()
    assert admin_user.is_staff


def test_a_group_is_made_on_the_page_with_its_grants(root_client):
    VirtualCluster.objects.create(name="vision")
    vision = VirtualCluster.objects.get(name="vision")
    answer = root_client.post("/people/groups/", {"name": "cv", "external_name": "cn=cv", "vcs": [vision.pk]})
    assert answer.status_code == 302
    assert list(vision.allowed_groups.values_list("name", flat=True)) == ["cv"]


def test_a_bad_group_name_is_said_in_its_field(root_client):
    answer = root_client.post("/people/groups/", {"name": "no spaces"})
    assert answer.status_code == 400
    assert 'data-field-error="name"' in answer.content.decode()
    assert not Group.objects.exists()


def test_deleting_a_group_asks_first(root_client, other_user, ml):
    VirtualCluster.objects.get(name="ml").allowed_users.add(other_user)
    assert "data-confirm-delete" in root_client.get("/people/groups/ml/delete/").content.decode()
    assert Group.objects.filter(name="ml").exists()
    root_client.post("/people/groups/ml/delete/")
    assert not Group.objects.filter(name="ml").exists()


CSV_GOOD = (
    "username,password,email,admin,virtual cluster,groups\n"
    "student1,Tall-Horse-42,s1@example.org,false,ml,ml\n"
    "student2,Tall-Horse-43,s2@example.org,true,,\n"
)


def test_it_registers_users_in_batch_from_csv(root_client, ml):
    answer = root_client.post("/people/import/", {"text": CSV_GOOD})
    assert answer.status_code == 200 and "data-import-done" in answer.content.decode()
    student1 = get_user_model().objects.get(username="student1")
    assert student1.check_password("Tall-Horse-42") and list(student1.groups.values_list("name", flat=True)) == ["ml"]
    assert get_user_model().objects.get(username="student2").is_staff


def test_a_csv_with_bad_rows_says_each_and_creates_none(root_client, user, ml):
    text = CSV_GOOD + "alice,Tall-Horse-44,,false,,\nstudent3,123,not-mail,maybe,nope,nogroup\n"
    answer = root_client.post("/people/import/", {"text": text})
    page = answer.content.decode()
    assert answer.status_code == 400
    assert 'data-import-error="4"' in page and "alice already exists" in page
    for column in ("password", "email", "admin", "virtual cluster", "groups"):
        assert f"<code>{column}</code>" in page, column
    assert not get_user_model().objects.filter(username__startswith="student").exists()


def test_a_csv_without_its_columns_is_refused(root_client):
    answer = root_client.post("/people/import/", {"text": "name,mail\nx,y\n"})
    assert answer.status_code == 400 and "missing column" in answer.content.decode()


def test_the_csv_template_has_openpais_columns(root_client):
    answer = root_client.get("/people/import/template.csv")
    assert answer.content.decode("utf-8-sig").startswith("username,password,email,admin,virtual cluster")


def test_the_audit_list_shows_who_changed_what(root_client, ml):
    page = root_client.get("/people/audit/?q=ml").content.decode()
    assert "group.create" in page and "root" in page


def test_deleting_a_vcs_only_group_is_refused_on_the_page(root_client, ml):
    answer = root_client.post("/people/groups/ml/delete/")
    assert answer.status_code == 409 and "data-delete-refused" in answer.content.decode()
    assert Group.objects.filter(name="ml").exists()


def test_a_csv_of_too_many_users_is_refused_whole(root_client, settings):
    from clusters import user_admin

    rows = "".join(f"student{n},Tall-Horse-{n}x,,false,,\n" for n in range(user_admin.MOST_ROWS + 1))
    answer = root_client.post(
        "/people/import/", {"text": "username,password,email,admin,virtual cluster,groups\n" + rows}
    )
    assert answer.status_code == 400 and "at most 200 users per import" in answer.content.decode()
    assert not get_user_model().objects.filter(username__startswith="student").exists()


def test_a_refused_csv_is_not_shown_back_with_its_passwords(root_client):
    answer = root_client.post("/people/import/", {"text": "username,password\nstudent1,Secret-Horse-42\nbad name,x\n"})
    assert answer.status_code == 400 and "Secret-Horse-42" not in answer.content.decode()


def test_the_audit_list_shows_lists_as_names(root_client, user, ml):
    root_client.post("/people/users/alice/", {"email": "", "active": "on", "groups": [ml.pk]})
    page = root_client.get("/people/audit/?q=user.groups").content.decode()
    assert "added=ml; removed=—" in page
