"""Property: whatever body and headers reach a write route, the answer is never a 500 and always
`{code, message}` when it is an error."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.tokens import issue_token
from tests.factories import v1_json, v2_yaml
from web.api.throttles import ListThrottle, LoginAccountThrottle, LoginAddressThrottle, SubmitThrottle

WRITE_ROUTES = [
    ("post", "/api/v2/authn/basic/login"),
    ("post", "/api/v1/token"),
    ("delete", "/api/v2/authn/basic/logout"),
    ("post", "/api/v2/tokens/application"),
    ("delete", "/api/v2/tokens/pai_whatever"),
    ("post", "/api/v2/jobs"),
    ("put", "/api/v2/jobs/alice~fuzz/executionType"),
    ("post", "/api/v1/jobs"),
    ("post", "/api/v1/user/alice/jobs"),
    ("delete", "/api/v1/user/alice/jobs/fuzz"),
    ("put", "/api/v1/user/alice/jobs/fuzz/executionType"),
    ("post", "/api/v2/users"),
]
SEEDS = [
    v2_yaml("fuzz"),
    v1_json("fuzz"),
    '{"username": "alice", "password": "alice-password-1"}',
    '{"value": "STOP"}',
    '{"username": "zed", "password": "zed-password-77", "virtualCluster": ["default"]}',
]
CONTENT_TYPES = [
    "application/json",
    "text/yaml",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/octet-stream",
    "",
    "application/json; charset=latin-1",
]
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@st.composite
def mutated(draw) -> bytes:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.text(max_size=8))
        if action == "insert":
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + len(piece) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    return text.encode("utf-8", "surrogatepass")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
bodies = st.one_of(
    mutated(),
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass")),
    json_values.map(lambda value: json.dumps(value).encode()),
)


@pytest.fixture
def unthrottled(monkeypatch):
    for throttle in (SubmitThrottle, ListThrottle, LoginAddressThrottle, LoginAccountThrottle):
        monkeypatch.setattr(throttle, "rate", "100000/min", raising=False)


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=bodies,
    content_type=st.one_of(st.sampled_from(CONTENT_TYPES), header_text),
    authorization=st.sampled_from(["valid", "none", "garbage"]),
    garbage=header_text,
    accept=st.one_of(st.just("application/json"), st.just("*/*"), header_text),
)
def test_it_never_answers_500_and_always_code_and_message(
    method, path, body, content_type, authorization, garbage, accept, user, unthrottled
):
    client = APIClient()
    if authorization == "valid":
        raw, _ = issue_token(user)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    elif authorization == "garbage":
        client.credentials(HTTP_AUTHORIZATION=garbage)
    response = client.generic(method.upper(), path, data=body, content_type=content_type, HTTP_ACCEPT=accept)
    assert response.status_code < 500, response.content[:500]
    if response.status_code >= 400:
        assert set(json.loads(response.content)) >= {"code", "message"}
