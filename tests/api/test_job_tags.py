"""Job tags as OpenPAI keeps them (rest-server routes/v2/job.js, controllers/v2/job.js):
`PUT|DELETE /api/v2/jobs/<user>~<job>/tag {"value": ...}` by the owner or an admin, `tags` in the
detail and the list, `tagsContain` / `tagsNotContain` filters. Under both prefixes."""

import pytest

from accounts.models import Token
from tests.api.answers import openpai
from tests.api.conftest import bearer_client
from tests.conftest import rows_for_module
from tests.factories import create_user, v2_yaml

pytestmark = pytest.mark.django_db

PREFIXES = ["/api", "/rest-server/api"]


@pytest.fixture(scope="module")
def tagged_module(django_db_setup, django_db_blocker):
    """alice's nightly-run and adhoc-run, submitted through the API once for the module
    (`rows_for_module`): each test's tags are undone by its own transaction."""

    def make():
        alice = create_user("alice")
        for name in ("nightly-run", "adhoc-run"):
            response = bearer_client(alice).post("/api/v2/jobs", data=v2_yaml(name), content_type="text/yaml")
            assert response.status_code == 202, response.content
        return alice

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(tagged_module):
    return tagged_module


@pytest.fixture
def two_jobs(tagged_module):
    return tagged_module


def tag(client, job: str, value, prefix: str = "/api", method: str = "put"):
    return getattr(client, method)(f"{prefix}/v2/jobs/{job}/tag", {"value": value}, format="json")


def names(response) -> list[str]:
    return sorted(job["name"] for job in response.json())


@pytest.mark.parametrize("prefix", PREFIXES)
def test_it_adds_a_tag_the_detail_and_list_then_show(alice, two_jobs, prefix):
    response = tag(alice, "alice~nightly-run", "nightly", prefix)
    assert response.status_code == 200
    assert response.json() == {"status": 200, "message": "Add tag nightly for job alice~nightly-run successfully."}
    assert alice.get(f"{prefix}/v2/jobs/alice~nightly-run").json()["tags"] == ["nightly"]
    listed = {job["name"]: job["tags"] for job in alice.get(f"{prefix}/v2/jobs").json()}
    assert listed == {"nightly-run": ["nightly"], "adhoc-run": []}


@pytest.mark.parametrize("prefix", PREFIXES)
def test_it_removes_a_tag(alice, two_jobs, prefix):
    tag(alice, "alice~nightly-run", "nightly")
    response = tag(alice, "alice~nightly-run", "nightly", prefix, method="delete")
    assert response.status_code == 200
    assert alice.get("/api/v2/jobs/alice~nightly-run").json()["tags"] == []


def test_it_answers_no_tag_error_when_removing_a_tag_the_job_lacks(alice, two_jobs):
    response = tag(alice, "alice~nightly-run", "nightly", method="delete")
    assert response.status_code == 404
    assert openpai(response.json()) == {
        "code": "NoTagError",
        "message": "Tag nightly is not found for job alice~nightly-run.",
    }


def test_it_keeps_one_copy_of_a_tag_added_twice(alice, two_jobs):
    tag(alice, "alice~nightly-run", "nightly")
    tag(alice, "alice~nightly-run", "nightly")
    assert alice.get("/api/v2/jobs/alice~nightly-run").json()["tags"] == ["nightly"]


def test_it_filters_the_list_by_tags_it_contains(alice, two_jobs):
    tag(alice, "alice~nightly-run", "nightly")
    tag(alice, "alice~adhoc-run", "debug")
    assert names(alice.get("/api/v2/jobs?tagsContain=nightly")) == ["nightly-run"]
    assert names(alice.get("/api/v2/jobs?tagsContain=nightly,debug")) == ["adhoc-run", "nightly-run"]
    assert names(alice.get("/api/v2/jobs?tagsContain=other")) == []


def test_it_filters_the_list_by_tags_it_does_not_contain(alice, two_jobs):
    tag(alice, "alice~nightly-run", "nightly")
    assert names(alice.get("/api/v2/jobs?tagsNotContain=nightly")) == ["adhoc-run"]


def test_it_counts_only_tagged_jobs_with_the_tag_filter(alice, two_jobs):
    tag(alice, "alice~nightly-run", "nightly")
    assert alice.get("/api/v2/jobs?tagsContain=nightly&withTotalCount=true").json()["totalCount"] == 1


@pytest.mark.parametrize(
    ("value", "problem", "code"),
    [
        ("a,b", "value: must not contain a comma.", "tag.comma"),
        ("", "value: must be a non-empty string.", "tag.blank"),
        (None, "value: must be a non-empty string.", "tag.blank"),
        ("x" * 256, "value: must be at most 255 characters.", "tag.too_long"),
    ],
)
def test_it_refuses_a_bad_tag_naming_the_field(alice, two_jobs, value, problem, code):
    response = tag(alice, "alice~nightly-run", value)
    assert response.status_code == 400
    assert openpai(response.json()) == {"code": "InvalidParametersError", "message": problem}
    said = response.json()["errors"][0]
    assert (said["field"], said["code"], said["params"]["problem"]["code"]) == ("value", "api.tag.invalid", code)


def test_it_forbids_tagging_another_users_job_it_can_see(bob, two_jobs):
    response = tag(bob, "alice~nightly-run", "mine")
    assert response.status_code == 403
    assert openpai(response.json()) == {
        "code": "ForbiddenUserError",
        "message": "User bob is not allowed to add tag to job alice~nightly-run.",
    }


def test_it_forbids_removing_another_users_tag(alice, bob, two_jobs):
    tag(alice, "alice~nightly-run", "nightly")
    assert tag(bob, "alice~nightly-run", "nightly", method="delete").status_code == 403
    assert alice.get("/api/v2/jobs/alice~nightly-run").json()["tags"] == ["nightly"]


def test_it_lets_an_admin_tag_any_job(root, alice, two_jobs):
    assert tag(root, "alice~nightly-run", "checked").status_code == 200
    assert alice.get("/api/v2/jobs/alice~nightly-run").json()["tags"] == ["checked"]


def test_it_keeps_an_admins_application_token_off_other_users_tags(admin_user, two_jobs):
    admin_app = bearer_client(admin_user, Token.Kind.APPLICATION)
    assert tag(admin_app, "alice~nightly-run", "checked").json()["code"] == "ForbiddenUserError"


def test_it_answers_no_job_error_for_a_missing_job(alice):
    assert tag(alice, "alice~missing", "x").json()["code"] == "NoJobError"


def test_it_needs_a_token_to_tag(anonymous, two_jobs):
    assert tag(anonymous, "alice~nightly-run", "x").status_code == 401


def test_the_detail_is_the_bytes_the_apis_renderer_writes(alice, two_jobs):
    """The detail is encoded without DRF's Response (web.api.shapes.json_answer): the same bytes,
    U+2028 and U+2029 escaped as its renderer escapes them, and content negotiation as before."""
    from rest_framework.renderers import JSONRenderer

    from jobs.models import JobTag

    JobTag.objects.create(job_id=alice.get("/api/v2/jobs/alice~nightly-run").json()["debugId"], name="ü\u2028\u2029")
    response = alice.get("/api/v2/jobs/alice~nightly-run")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json()["tags"] == ["ü\u2028\u2029"]
    assert response.content == JSONRenderer().render(response.json())
    assert b"\\u2028\\u2029" in response.content and "ü".encode() in response.content
    refused = alice.get("/api/v2/jobs/alice~nightly-run", HTTP_ACCEPT="application/xml")
    assert refused.status_code == 406
