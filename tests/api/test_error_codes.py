"""Every API error answer says its message as a catalogue code and its parameters (`errors`)
beside OpenPAI's `code` and the English `message`: each ApiError raised in the project is given a
catalogue Text's message (read from the source, so a new raise site cannot forget it), and each
exception the handler answers itself gets one."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import IntegrityError, OperationalError
from django.http import Http404
from rest_framework import exceptions

from accounts.groups import GroupProblem
from catalogue import Message, Text, all_texts, text_of
from jobs.actions import JobNameConflict
from jobs.lifecycle import JobStateError
from jobs.models import Job
from web.api.errors import ApiError, openpai_exception_handler

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("accounts", "clusters", "jobs", "scheduling", "web", "pai_portal")


def raise_sites() -> Iterator[tuple[str, ast.Call, dict[str, ast.expr]]]:
    """Each `ApiError(...)` call of the product's code, with the names its function assigns."""
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text()
            if "ApiError" not in source:  # (no call of it: most files, left unparsed)
                continue
            tree = ast.parse(source)
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for function in ast.walk(tree):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                assigned = {
                    target.id: node.value
                    for node in ast.walk(function)
                    if isinstance(node, ast.Assign)
                    for target in node.targets
                    if isinstance(target, ast.Name)
                }
                for node in ast.walk(function):
                    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ApiError":
                        yield module, node, assigned


def made_by(module: str, expression: ast.expr, assigned: dict[str, ast.expr]) -> Text | None:
    """The catalogue Text whose call `expression` is (through a local name, or a conditional's
    both branches), looked up in the module's namespace; None when it is not one."""
    if isinstance(expression, ast.Name) and expression.id in assigned:
        return made_by(module, assigned[expression.id], {})
    if isinstance(expression, ast.IfExp):
        texts_of = [made_by(module, branch, assigned) for branch in (expression.body, expression.orelse)]
        return texts_of[0] if all(texts_of) else None
    if not isinstance(expression, ast.Call):
        return None
    if ast.unparse(expression.func).endswith("Message.of") and expression.args:
        return text_named(expression.args[0], assigned)
    found = eval(ast.unparse(expression.func), vars(importlib.import_module(module)))  # noqa: S307  (our own source)
    return found if isinstance(found, Text) else None


def text_named(code: ast.expr, assigned: dict[str, ast.expr]) -> Text | None:
    """The catalogue Text of the code `code` names (a literal, a local name, either of two)."""
    if isinstance(code, ast.Name) and code.id in assigned:
        return text_named(assigned[code.id], {})
    if isinstance(code, ast.IfExp):
        texts_of = [text_named(branch, assigned) for branch in (code.body, code.orelse)]
        return texts_of[0] if all(texts_of) else None
    return all_texts().get(code.value) if isinstance(code, ast.Constant) and isinstance(code.value, str) else None


def test_every_api_error_raised_says_a_catalogue_message():
    sites = list(raise_sites())
    assert len(sites) > 50  # (the walk found the views)
    without = [
        f"{module}:{call.lineno}"
        for module, call, assigned in sites
        if len(call.args) < 3 or made_by(module, call.args[2], assigned) is None
    ]
    assert without == []


def test_an_api_error_refuses_english_without_its_code():
    with pytest.raises(TypeError, match="catalogue Message"):
        ApiError(404, "NoJobError", "Job alice~x is not found.")  # type: ignore[arg-type]


ANSWERED = [
    exceptions.NotAuthenticated(),
    exceptions.AuthenticationFailed("Invalid username/password."),
    exceptions.PermissionDenied(),
    exceptions.PermissionDenied(text_of("api.auth.admin_needed").template, code="api.auth.admin_needed"),
    exceptions.Throttled(wait=3),
    exceptions.ValidationError({"data": {"username": ["This field is required."]}}),
    exceptions.ParseError("JSON parse error"),
    exceptions.UnsupportedMediaType("text/csv"),
    exceptions.MethodNotAllowed("PATCH"),
    exceptions.NotAcceptable(),
    exceptions.NotFound(),
    exceptions.APIException(),
    Http404(),
    Job.DoesNotExist(),
    RequestDataTooBig(),
    SuspiciousOperation("Invalid HTTP_HOST header"),
    SuspiciousOperation(),
    IntegrityError(),
    OperationalError(),
    JobNameConflict(Message.of("config.job_name_taken", name="x", user="alice")),
    JobStateError(Message.of("job_state.already_finished", job="alice~x", state="SUCCEEDED")),
    GroupProblem("", Message.of("group.not_found", group="ml"), "NoGroupError", 404),
    RuntimeError("a bug: the 500"),
]


@pytest.mark.parametrize("exc", ANSWERED, ids=lambda exc: type(exc).__name__)
def test_every_error_the_handler_answers_carries_catalogue_codes_beside_openpais(exc):
    body = openpai_exception_handler(exc, {"request": None}).data
    assert set(body) == {"code", "message", "errors", "field"}
    assert body["errors"], body
    for said in body["errors"]:
        assert said["code"] in all_texts(), said
        assert set(said["params"]) == all_texts()[said["code"]].names


def test_a_permission_refusal_answers_the_permissions_own_code():
    body = openpai_exception_handler(
        exceptions.PermissionDenied(text_of("api.auth.admin_needed").template, code="api.auth.admin_needed"), {}
    ).data
    assert body["errors"][0]["code"] == "api.auth.admin_needed"
    assert body["message"] == text_of("api.auth.admin_needed").template


def test_drfs_field_errors_answer_one_entry_per_field():
    body = openpai_exception_handler(exceptions.ValidationError({"data": {"username": ["required"]}}), {}).data
    assert body["message"] == "data: username: required"
    assert body["errors"] == [
        {"field": "data.username", "code": "api.invalid", "params": {"said": "required"}, "message": "required"}
    ]
    assert body["field"] == "data.username"
