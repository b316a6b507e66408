"""The routes OpenPAI's own clients call (Python SDK, webportal, JS SDK), in OpenPAI's shapes:
answered from microsoft/pai src/rest-server/src (controllers/index.js, routes/user.js, routes/vc.js,
routes/authn.js, routes/token.js, models/v2/virtual-cluster)."""

import base64
import json

import pytest

from accounts.models import Token
from clusters.models import Gpu, GpuType, Node
from tests.api.conftest import bearer_client
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(db):
    node = Node.objects.create(name="n1", executor="process", cpus=16, memory_mb=65536)
    k80 = GpuType.objects.create(name="K80")
    for index in range(4):
        Gpu.objects.create(node=node, index=index, gpu_type=k80)
    return node


def decode_handle(handle: str) -> dict:
    payload = handle.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_it_answers_get_api_v1_anonymously_with_name_version_and_authn_method(anonymous):
    response = anonymous.get("/rest-server/api/v1")
    assert response.status_code == 200
    assert set(response.json()) == {"name", "version", "launcherType", "authnMethod"}
    assert response.json()["authnMethod"] == "basic"


def test_it_answers_the_v1_user_route_with_virtual_clusters_and_admin(alice, default_vc):
    response = alice.get("/rest-server/api/v1/user/alice")
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "alice"
    assert body["admin"] is False
    assert body["virtualCluster"] == ["default"]
    assert "password" not in body


def test_it_answers_the_v2_user_spelling_of_the_users_route(alice):
    assert alice.get("/api/v2/user/alice").json()["username"] == "alice"


def test_it_keeps_other_users_info_from_non_admins_on_v1(alice, other_user):
    response = alice.get("/api/v1/user/bob")
    assert response.status_code == 404
    assert response.json()["code"] == "NoUserError"


def test_it_lists_virtual_clusters_on_v1_with_the_resources_the_sdk_subtracts(alice, cluster):
    response = alice.get("/rest-server/api/v1/virtual-clusters")
    assert response.status_code == 200
    default = response.json()["default"]
    for key in ("resourcesUsed", "resourcesTotal", "resourcesGuaranteed"):
        assert set(default[key]) >= {"GPUs", "memory", "vCores"}
    free = {k: default["resourcesTotal"][k] - default["resourcesUsed"][k] for k in ("GPUs", "memory", "vCores")}
    assert free == {"GPUs": 4, "memory": 65536, "vCores": 16}


def test_it_counts_a_virtual_clusters_jobs(alice, cluster, submit_yaml):
    submit_yaml(v2_yaml("counted"))
    default = alice.get("/api/v2/virtual-clusters").json()["default"]
    assert (default["numJobs"], default["numPendingJobs"], default["numActiveJobs"]) == (1, 1, 0)


def test_it_answers_one_virtual_cluster_on_v1(alice, cluster):
    assert alice.get("/api/v1/virtual-clusters/default").json()["resourcesTotal"]["GPUs"] == 4


def test_it_requires_a_token_for_v1_virtual_clusters_and_says_how_to_get_one(anonymous):
    response = anonymous.get("/rest-server/api/v1/virtual-clusters")
    assert response.status_code == 401
    assert response.json()["code"] == "UnauthorizedUserError"
    assert "Authorization: Bearer" in response.json()["message"]


def test_it_signs_in_on_the_v1_basic_login_route_with_a_form_body(anonymous, user):
    response = anonymous.post(
        "/rest-server/api/v1/authn/basic/login",
        data="username=alice&password=alice-password-1&expiration=3600",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert response.json()["user"] == "alice"


def test_it_tells_how_to_sign_in(anonymous):
    response = anonymous.get("/api/v1/authn/info")
    assert response.json() == {"authn_type": "basic", "loginURI": "/api/v1/authn/basic/login", "loginURIMethod": "post"}


def test_it_lists_tokens_as_strings_that_decode_like_openpai_jwts(alice, user):
    (handle,) = alice.get("/api/v2/tokens").json()["tokens"]
    claims = decode_handle(handle)
    assert claims["username"] == "alice"
    assert claims["application"] is False
    assert claims["exp"] > claims["iat"]


def test_it_never_lists_a_usable_token(alice, user, anonymous):
    (handle,) = alice.get("/api/v2/tokens").json()["tokens"]
    anonymous.credentials(HTTP_AUTHORIZATION=f"Bearer {handle}")
    assert anonymous.get("/api/v2/jobs").status_code == 401


def test_it_revokes_a_token_by_the_string_the_list_gave(alice, user):
    alice.post("/api/v2/tokens/application", {}, format="json")
    application = next(h for h in alice.get("/api/v2/tokens").json()["tokens"] if decode_handle(h)["application"])
    assert alice.delete(f"/api/v2/tokens/{application}").status_code == 200
    assert not Token.objects.filter(user=user, kind=Token.Kind.APPLICATION).exists()


def test_it_checks_a_token(alice):
    response = alice.get("/rest-server/api/v2/tokens/check")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert response.json()["application"] is False


def test_it_lists_every_user_to_an_admin(root, user):
    response = root.get("/api/v2/users")
    assert response.status_code == 200
    assert [row["username"] for row in response.json()] == ["alice", "root"]


def test_it_refuses_the_user_list_to_a_non_admin(alice):
    response = alice.get("/api/v2/users")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_updates_my_email_through_users_me(alice, user):
    body = {"data": {"username": "alice", "email": "alice@example.org"}, "patch": True}
    response = alice.put("/api/v2/users/me", body, format="json")
    assert response.status_code == 201
    user.refresh_from_db()
    assert user.email == "alice@example.org"


def test_it_changes_my_password_with_the_old_one_and_revokes_sign_in_tokens(alice, user):
    body = {
        "data": {"username": "alice", "oldPassword": "alice-password-1", "newPassword": "n3w-Passw0rd!"},
        "patch": True,
    }
    assert alice.put("/api/v2/users/me", body, format="json").status_code == 201
    user.refresh_from_db()
    assert user.check_password("n3w-Passw0rd!")
    assert alice.get("/api/v2/jobs").status_code == 401


def test_it_refuses_a_new_password_without_the_right_old_one(alice, user):
    body = {
        "data": {"username": "alice", "oldPassword": "wrong-password", "newPassword": "n3w-Passw0rd!"},
        "patch": True,
    }
    response = alice.put("/api/v2/users/me", body, format="json")
    assert response.status_code == 403
    assert response.json()["message"].startswith("data.oldPassword:")


def test_it_refuses_to_update_another_user_through_users_me(alice, other_user):
    response = alice.put("/api/v2/users/me", {"data": {"username": "bob", "email": "x@example.org"}}, format="json")
    assert response.status_code == 403


def test_it_changes_a_password_on_the_legacy_password_route(alice, user):
    body = {"oldPassword": "alice-password-1", "newPassword": "n3w-Passw0rd!"}
    assert alice.put("/api/v2/users/alice/password", body, format="json").status_code == 201
    user.refresh_from_db()
    assert user.check_password("n3w-Passw0rd!")


def test_it_lets_an_admin_reset_a_password_without_the_old_one(root, user):
    assert root.put("/api/v2/users/alice/password", {"newPassword": "n3w-Passw0rd!"}, format="json").status_code == 201


def test_it_refuses_a_password_change_through_an_application_token(user):
    script = bearer_client(user, Token.Kind.APPLICATION)
    body = {"oldPassword": "alice-password-1", "newPassword": "n3w-Passw0rd!"}
    assert script.put("/api/v2/users/alice/password", body, format="json").status_code == 403


def test_it_names_a_weak_new_password(alice, user):
    body = {"oldPassword": "alice-password-1", "newPassword": "123"}
    response = alice.put("/api/v2/users/alice/password", body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith("newPassword:")


PROD = "extras:\n  hivedScheduler:\n    jobPriorityClass: prod\n"


@pytest.fixture
def prioritized(submit_yaml):
    submit_yaml(v2_yaml("plain"))
    submit_yaml(v2_yaml("urgent") + PROD)


def listed(response) -> list[str]:
    return [job["name"] for job in response.json()]


def test_it_filters_the_job_list_by_priority_class(alice, prioritized):
    assert listed(alice.get("/api/v2/jobs?jobPriority=prod")) == ["urgent"]
    assert listed(alice.get("/api/v2/jobs?jobPriority=default")) == ["plain"]


def test_it_orders_the_job_list_by_priority(alice, prioritized):
    assert listed(alice.get("/api/v2/jobs?order=jobPriority,DESC")) == ["urgent", "plain"]


def test_it_shows_the_priority_class_in_the_job_list(alice, prioritized):
    # (the class each job runs as: one that names none runs as its VC's default, `test`)
    assert {job["name"]: job["jobPriority"] for job in alice.get("/api/v2/jobs").json()} == {
        "urgent": "prod",
        "plain": "test",
    }


def test_it_refuses_an_unknown_priority_class(alice):
    assert alice.get("/api/v2/jobs?jobPriority=urgent").json()["code"] == "InvalidParametersError"


def test_it_filters_events_by_type_and_counts_them(alice, submit_yaml):
    submit_yaml(v2_yaml("evented"))
    everything = alice.get("/api/v2/jobs/alice~evented/events").json()
    assert everything["totalCount"] == len(everything["data"]) == 1
    assert alice.get("/api/v2/jobs/alice~evented/events?type=Warning").json() == {"totalCount": 0, "data": []}
