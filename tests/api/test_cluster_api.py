"""Virtual clusters, users and info."""

import pytest
from django.utils import timezone

from catalogue import Message
from clusters.models import Gpu, GpuType, Node, VirtualCluster, down_reason_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(db):
    node = Node.objects.create(name="n1", executor="process", cpus=16, memory_mb=65536)
    p100 = GpuType.objects.create(name="P100")
    for index in range(4):
        Gpu.objects.create(node=node, index=index, gpu_type=p100)
    VirtualCluster.objects.filter(name="default").update(share_percent=50)
    return node


def test_it_lists_virtual_clusters_with_capacity_and_resources(alice, cluster):
    response = alice.get("/api/v2/virtual-clusters")
    assert response.status_code == 200
    default = response.json()["default"]
    assert default["capacity"] == 50.0
    assert default["usedCapacity"] == 0.0
    assert default["resourcesTotal"]["gpu"] == 2
    assert default["resourcesUsed"] == {"cpu": 0, "memory": 0, "gpu": 0, "vCores": 0, "GPUs": 0}


def test_it_shows_a_virtual_clusters_sharing_settings(alice, cluster):
    VirtualCluster.objects.filter(name="default").update(
        queue_policy="fair-share",
        user_gpu_limit=2,
        default_run_minutes=60,
        max_run_minutes=600,
        lends_idle_quota=True,
        lending_limit_percent=50,
    )
    default = alice.get("/api/v2/virtual-clusters").json()["default"]
    assert (default["queuePolicy"], default["userGpuLimit"]) == ("fair-share", 2)
    assert (default["defaultRunMinutes"], default["maxRunMinutes"]) == (60, 600)
    assert default["lendsIdleQuota"] is True
    assert (default["lendingLimitPercent"], default["borrowingLimitPercent"]) == (50, None)
    assert default["resourcesLent"]["GPUs"] == default["resourcesBorrowed"]["GPUs"] == 0


def test_every_virtual_cluster_lends_when_the_admin_says_so_for_the_cluster(alice, cluster, settings):
    assert alice.get("/api/v2/virtual-clusters").json()["default"]["lendsIdleQuota"] is False
    settings.PAI_LEND_IDLE_QUOTA = True
    assert alice.get("/api/v2/virtual-clusters").json()["default"]["lendsIdleQuota"] is True


def test_it_answers_one_virtual_cluster(alice, cluster):
    response = alice.get("/api/v2/virtual-clusters/default")
    assert response.status_code == 200
    assert response.json()["maxCapacity"] == 50.0


def test_it_answers_404_for_an_unknown_virtual_cluster(alice):
    response = alice.get("/api/v2/virtual-clusters/atlantis")
    assert response.status_code == 404
    assert response.json()["code"] == "NoVirtualClusterError"


def test_it_lists_nodes_with_their_state_and_resources(alice, cluster):
    response = alice.get("/api/v2/nodes")
    assert response.status_code == 200
    [node] = response.json()
    assert node["name"] == "n1" and node["state"] == "READY" and node["downSince"] is None
    assert node["resourcesTotal"]["gpu"] == 4 and node["resourcesUsed"]["gpu"] == 0


def test_it_shows_a_down_node_with_since_when_and_why(alice, cluster):
    reason = [
        Message.of(
            "node.silent_for",
            seconds=30,
            error=[Message.of("node.lane.silent", lane=Message.of("node.node", node="n1"), seconds=30)],
        )
    ]
    Node.objects.filter(pk=cluster.pk).update(down_since=timezone.now(), **down_reason_fields(reason))
    node = alice.get("/api/v2/nodes/n1").json()
    assert node["state"] == "DOWN" and node["schedulable"] is False
    assert node["downReason"] == "did not answer for 30 s: node n1 has not answered for 30 s" and node["downSince"] > 0
    assert node["downReasonMessages"] == [
        {
            "code": "node.silent_for",
            "params": {
                "seconds": 30,
                "error": [
                    {
                        "code": "node.lane.silent",
                        "params": {"lane": {"code": "node.node", "params": {"node": "n1"}}, "seconds": 30},
                    }
                ],
            },
            "message": "did not answer for 30 s: node n1 has not answered for 30 s",
        }
    ]


def test_it_answers_a_down_reason_written_before_its_codes_in_english_only(alice, cluster):
    Node.objects.filter(pk=cluster.pk).update(down_since=timezone.now(), down_reason="did not answer for 30 s")
    node = alice.get("/api/v2/nodes/n1").json()
    assert (node["downReason"], node["downReasonMessages"]) == ("did not answer for 30 s", None)


def test_it_shows_a_cordoned_node(alice, cluster):
    Node.objects.filter(pk=cluster.pk).update(schedulable=False)
    assert alice.get("/api/v2/nodes/n1").json()["state"] == "CORDONED"


def test_it_answers_404_for_an_unknown_node(alice):
    response = alice.get("/api/v2/nodes/atlantis")
    assert response.status_code == 404
    assert response.json()["code"] == "NoNodeError"


def test_it_shows_a_user_themselves_without_the_password(alice):
    response = alice.get("/api/v2/users/alice")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert "password" not in response.json()


def test_it_hides_other_users_from_non_admins(alice, other_user):
    response = alice.get("/api/v2/users/bob")
    assert response.status_code == 404
    assert response.json()["code"] == "NoUserError"


def test_it_lets_an_admin_create_a_user(root, django_user_model):
    response = root.post("/api/v2/users", {"username": "carol", "password": "carol-password-9"}, format="json")
    assert response.status_code == 201
    assert django_user_model.objects.get(username="carol").check_password("carol-password-9")


def test_it_refuses_a_non_admin_creating_a_user(alice):
    response = alice.post("/api/v2/users", {"username": "carol", "password": "carol-password-9"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_answers_409_for_a_taken_user_name(root, user):
    response = root.post("/api/v2/users", {"username": "alice", "password": "carol-password-9"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "ConflictUserError"


def test_it_answers_info_without_a_token(anonymous):
    response = anonymous.get("/api/v2/info")
    assert response.status_code == 200
    assert set(response.json()) == {"name", "version", "launcherType", "authnMethod"}
