"""A client that talks to the portal exactly as OpenPAI's Python SDK (`openpaisdk`, microsoft/pai
contrib/python-sdk, openpaisdk/cluster.py before PR #5489) does: same base (`<pai_uri>/rest-server/api`),
paths, headers and bodies, written from that source and OpenPAI's REST docs, not from these views.
Run against a live server through `requests`, as the SDK's `get_response` does."""

from __future__ import annotations

import json

import pytest
import requests
import yaml

pytestmark = pytest.mark.django_db(transaction=True)


class OpenPaiSdkClient:
    """openpaisdk.cluster.Cluster's REST calls, one method each."""

    def __init__(self, pai_uri: str, user: str, password: str):
        self.rest_srv = f"{pai_uri.strip('/')}/rest-server/api"
        self.user, self.password = user, password
        self.token = ""

    def call(self, method: str, path: list[str], headers=None, body=None) -> requests.Response:
        # get_response: a JSON body unless Content-Type says otherwise; never a session.
        headers = dict(headers or {})
        as_json = "Content-Type" not in headers or headers["Content-Type"] == "application/json"
        data = json.dumps(body) if as_json and body is not None else body
        if as_json:
            headers.setdefault("Content-Type", "application/json")
        return requests.request(method, "/".join([self.rest_srv, *path]), headers=headers, data=data, timeout=10)

    def cluster_info(self) -> requests.Response:
        return self.call("GET", ["v1"])

    def login(self, expiration: int = 3600) -> str:
        body = {"username": self.user, "password": self.password, "expiration": expiration}
        self.token = self.call("POST", ["v1", "token"], body=body).json()["token"]
        return self.token

    def auth(self, **headers: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **headers}

    def user_info(self) -> requests.Response:
        return self.call("GET", ["v1", "user", self.user], headers=self.auth())

    def virtual_clusters(self) -> requests.Response:
        return self.call("GET", ["v1", "virtual-clusters"], headers=self.auth(**{"Content-Type": "application/json"}))

    def submit_v2(self, job: dict) -> requests.Response:
        headers = self.auth(**{"Content-Type": "text/yaml"})
        return self.call("POST", ["v2", "jobs"], headers=headers, body=yaml.dump(job))

    def submit_v1(self, job: dict) -> requests.Response:
        headers = self.auth(**{"Content-Type": "application/json"})
        return self.call("POST", ["v1", "user", self.user, "jobs"], headers=headers, body=job)

    def job_list(self, with_token: bool) -> requests.Response:
        return self.call("GET", ["v1", "user", self.user, "jobs"], headers=self.auth() if with_token else None)

    def job_info(self, job_name: str, info: str | None = None, with_token: bool = True) -> requests.Response:
        path = ["v1", "user", self.user, "jobs", job_name] + ([info] if info else [])
        return self.call("GET", path, headers=self.auth() if with_token else None)

    def execute(self, job_name: str, e_type: str) -> requests.Response:
        path = ["v1", "user", self.user, "jobs", job_name, "executionType"]
        return self.call("PUT", path, headers=self.auth(), body={"value": e_type})


V2_JOB = {
    "protocolVersion": 2,
    "name": "sdk-v2",
    "type": "job",
    "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "pai-portal/base:latest"}],
    "taskRoles": {
        "main": {
            "instances": 1,
            "dockerImage": "image",
            "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0},
            "commands": ["sleep 30"],
        }
    },
}
V1_JOB = {
    "jobName": "sdk-v1",
    "image": "pai-portal/base:latest",
    "taskRoles": [
        {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0, "command": "true"}
    ],
}


@pytest.fixture
def sdk(live_server, default_vc, user) -> OpenPaiSdkClient:
    return OpenPaiSdkClient(live_server.url, "alice", "alice-password-1")


def test_the_sdk_probes_the_cluster_without_a_token(sdk):
    response = sdk.cluster_info()
    assert response.status_code == 200
    assert response.json()["authnMethod"] == "basic"


def test_the_sdk_signs_in_with_an_expiration_and_reads_its_virtual_clusters(sdk):
    assert sdk.login(expiration=3600).startswith("pai_")
    assert sdk.user_info().json()["virtualCluster"] == ["default"]
    free = {
        k: v["resourcesTotal"]["GPUs"] - v["resourcesUsed"]["GPUs"] for k, v in sdk.virtual_clusters().json().items()
    }
    assert free == {"default": 0}


def test_the_sdk_submits_v2_yaml_and_v1_json_then_reads_and_stops_them(sdk):
    sdk.login()
    assert sdk.submit_v2(V2_JOB).status_code == 202
    assert sdk.submit_v1(V1_JOB).status_code == 201
    assert {job["name"] for job in sdk.job_list(with_token=True).json()} == {"sdk-v1", "sdk-v2"}
    assert sdk.job_info("sdk-v2").json()["jobStatus"]["state"] == "WAITING"
    assert yaml.safe_load(sdk.job_info("sdk-v2", "config").text)["name"] == "sdk-v2"
    assert sdk.execute("sdk-v2", "STOP").status_code == 202


def test_the_sdks_tokenless_reads_are_refused_with_how_to_authenticate(sdk):
    sdk.login()
    sdk.submit_v2(V2_JOB)
    for response in (sdk.job_list(with_token=False), sdk.job_info("sdk-v2", with_token=False)):
        assert response.status_code == 401
        assert response.json()["code"] == "UnauthorizedUserError"
        assert "Authorization: Bearer <token>" in response.json()["message"]
