"""load(text): v1 JSON or v2 YAML in, one normalized v2 spec out (or a JobConfigError)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobs.protocol import v1, v2
from jobs.protocol.errors import FieldError, JobConfigError
from jobs.protocol.fields import class_field, gpu_type_field, vc_field
from jobs.protocol.limits import check_spec_size, expansion_budget
from jobs.protocol.parsing import parse
from jobs.protocol.schema import schema_errors
from jobs.protocol.spec import NormalizedSpec


@dataclass(frozen=True)
class LoadedConfig:
    spec: NormalizedSpec  # JSON-serializable (a plain dict), secret values masked
    secrets: dict[str, str]  # the real secret values: store apart, never display
    protocol_version: int  # what the user submitted: 1 or 2
    class_field: str  # where the user wrote the priority class (fields.class_field)
    # Secrets a job could not run with (empty, or the `******` of an export): valid to read and
    # export, refused at submit with these (field path, message) pairs.
    secret_errors: tuple[FieldError, ...] = ()

    @property
    def vc_field(self) -> str:
        return vc_field(self.protocol_version)

    @property
    def gpu_type_field(self) -> str:
        return gpu_type_field(self.spec, self.protocol_version)


def detect_version(doc: dict[str, Any], from_json: bool) -> int:
    """v2 says protocolVersion; v1 has jobName and taskRoles as a list. When nothing tells,
    JSON is taken for v1 and YAML for v2, so the errors name the fields the user most likely meant."""
    if "protocolVersion" in doc:
        return 2
    if "jobName" in doc or isinstance(doc.get("taskRoles"), list):
        return 1
    if isinstance(doc.get("taskRoles"), dict) or "name" in doc:
        return 2
    return 1 if from_json else 2


def load(text: str | bytes) -> LoadedConfig:
    """Parse, validate and normalize a job config; raises JobConfigError with field paths."""
    doc, is_json = parse(text)
    return load_document(doc, is_json)


def load_document(doc: dict[str, Any], is_json: bool = False) -> LoadedConfig:
    """Validate and normalize a document as parse() returns it (load without the parse: a sweep's
    runs, made from a parsed document); the document is left as it was."""
    version = detect_version(doc, is_json)
    with expansion_budget():
        loaded = _load_v1(doc) if version == 1 else _load_v2(doc)
    check_spec_size(loaded.spec)
    return loaded


def _load_v1(doc: dict[str, Any]) -> LoadedConfig:
    doc = v1.with_aliases(doc)
    errors = schema_errors(1, doc) or v1.cross_check(doc)
    if errors:
        raise JobConfigError(errors)
    return LoadedConfig(spec=v1.convert(doc), secrets={}, protocol_version=1, class_field=class_field(doc, 1))


def _load_v2(doc: dict[str, Any]) -> LoadedConfig:
    errors = schema_errors(2, doc) or v2.cross_check(doc)
    if errors:
        raise JobConfigError(errors)
    spec, secrets, errors = v2.normalize(doc)
    if errors:
        raise JobConfigError(errors)
    return LoadedConfig(
        spec=spec,
        secrets=secrets,
        protocol_version=2,
        class_field=class_field(doc, 2),
        secret_errors=tuple(v2.unusable_secrets(doc)),
    )
