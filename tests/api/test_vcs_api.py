"""VCs made, changed and removed through the API (`POST /api/v2/virtual-clusters`, `PATCH` and
`DELETE /api/v2/virtual-clusters/<name>`): admins only, by the VC form's rules (clusters.vc_rules,
as the VC pages, the admin and `createvc` check them), each refusal naming its field and code."""

import pytest

from accounts.models import AuditEntry
from clusters.models import VirtualCluster
from tests.api.conftest import bearer_client
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db

VCS = "/api/v2/virtual-clusters"


@pytest.fixture
def room(default_vc):
    """`default` at 60 %: 40 % left for another VC."""
    default_vc.share_percent = 60
    default_vc.save()
    return default_vc


def create(client, **fields):
    return client.post(
        VCS, {"name": "research", "share_percent": "40", "queue_policy": "fifo", **fields}, format="json"
    )


def test_it_creates_a_vc_and_answers_it_as_get_does(root, room, user):
    answer = create(root, allowed_users=["alice"], max_run_minutes=120)
    assert answer.status_code == 201, answer.json()
    assert answer.json() == root.get(f"{VCS}/research").json()
    vc = VirtualCluster.objects.get(name="research")
    assert (vc.share_percent, vc.max_run_minutes, [u.username for u in vc.allowed_users.all()]) == (40, 120, ["alice"])
    assert (vc.backfill, vc.queue_policy) == (True, "fifo")  # (left out: the model's defaults)
    assert AuditEntry.objects.filter(action="vc.create", target="research").exists()


def test_it_changes_only_the_given_fields(root, room, user):
    create(root, allowed_users=["alice"], description="vision team")
    answer = root.patch(f"{VCS}/research", {"share_percent": "30", "backfill": False}, format="json")
    assert answer.status_code == 200, answer.json()
    vc = VirtualCluster.objects.get(name="research")
    assert (vc.share_percent, vc.backfill, vc.description) == (30, False, "vision team")
    assert [u.username for u in vc.allowed_users.all()] == ["alice"]
    assert AuditEntry.objects.filter(action="vc.update", target="research").exists()


def test_it_refuses_a_share_over_100_percent_in_all_naming_the_field(root, room):
    answer = create(root, share_percent="50")
    assert answer.status_code == 400
    body = answer.json()
    assert body["message"].startswith("share_percent: With this share the VCs' shares would add up to 110%")
    assert (body["field"], body["errors"][0]["code"]) == ("share_percent", "vc.shares_over_100")
    assert body["errors"][0]["params"] == {"total": "110"}
    assert not VirtualCluster.objects.filter(name="research").exists()


@pytest.mark.parametrize(
    ("fields", "field", "code"),
    [
        ({"default_run_minutes": 90, "max_run_minutes": 60}, "default_run_minutes", "vc.default_run_over_max"),
        ({"queue_policy": "lifo"}, "queue_policy", "form.invalid_choice"),
        ({"allowed_users": ["nobody"]}, "allowed_users", "form.invalid_choice"),
    ],
)
def test_it_refuses_what_the_vc_form_refuses_naming_the_field(root, room, fields, field, code):
    answer = create(root, **fields)
    assert answer.status_code == 400
    assert (answer.json()["field"], answer.json()["errors"][0]["code"]) == (field, code)
    assert answer.json()["message"].startswith(f"{field}: ")


def test_it_refuses_a_lending_slurm_vc_on_a_change(root, room):
    VirtualCluster.objects.create(name="hpc", share_percent=0, slurm_partition="gpu")
    answer = root.patch(f"{VCS}/hpc", {"lends_idle_quota": True}, format="json")
    assert (answer.status_code, answer.json()["errors"][0]["code"]) == (400, "vc.slurm_never_lends")
    assert not VirtualCluster.objects.get(name="hpc").lends_idle_quota


def test_it_refuses_an_unknown_field_and_a_new_name(root, room):
    create(root)
    assert create(root).status_code == 409
    assert root.patch(f"{VCS}/research", {"shares": 10}, format="json").json()["message"].startswith("shares: ")
    renamed = root.patch(f"{VCS}/research", {"name": "other"}, format="json")
    assert (renamed.status_code, renamed.json()["message"][:6]) == (400, "name: ")


def test_it_removes_a_vc_no_job_names(root, room):
    create(root)
    assert root.delete(f"{VCS}/research").status_code == 200
    assert not VirtualCluster.objects.filter(name="research").exists()
    assert AuditEntry.objects.filter(action="vc.delete", target="research").exists()


@pytest.mark.parametrize(("jobs", "code"), [(1, "vc.remove.job_names_it"), (2, "vc.remove.jobs_name_it")])
def test_it_keeps_a_vc_jobs_name_saying_why_by_its_code(root, room, user, submit_yaml, jobs, code):
    create(root)
    for number in range(jobs):
        assert submit_yaml(v2_yaml(f"kept{number}", vc="research")).status_code == 202
    answer = root.delete(f"{VCS}/research")
    assert (answer.status_code, answer.json()["code"]) == (409, "ConflictVirtualClusterError")
    assert answer.json()["errors"][0]["code"] == code
    assert answer.json()["errors"][0]["params"] == {"count": jobs, "vc": "research"}
    assert VirtualCluster.objects.filter(name="research").exists()


def test_it_keeps_the_default_vc(root, room):
    answer = root.delete(f"{VCS}/default")
    assert (answer.status_code, answer.json()["errors"][0]["code"]) == (409, "vc.remove.default")


@pytest.mark.parametrize("method", ["post", "patch", "delete"])
def test_it_refuses_changes_from_non_admins_and_application_tokens(alice, admin_user, room, method):
    path = VCS if method == "post" else f"{VCS}/default"
    script = bearer_client(admin_user, kind="application")
    for client in (alice, script):
        assert getattr(client, method)(path, {"name": "x", "share_percent": "1"}, format="json").status_code == 403
    assert list(VirtualCluster.objects.values_list("name", "share_percent")) == [("default", 60)]


def test_it_keeps_answering_reads_to_everyone_signed_in(alice, room):
    assert alice.get(f"{VCS}/default").status_code == 200
    assert "default" in alice.get(VCS).json()
