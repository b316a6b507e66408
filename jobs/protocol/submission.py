"""A submitted config's text, read once: its document, and whether it is a sweep or a job. Every
submit (the page, the API's routes, `manage.py submitjob`) starts from read(); nothing after it
parses the text again."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from jobs.protocol.export import masked_text
from jobs.protocol.loader import LoadedConfig, detect_version, load_document
from jobs.protocol.parsing import parse
from jobs.protocol.sweeps import sweep_block


@dataclass(frozen=True)
class Submission:
    text: str
    document: dict[str, Any]  # as parse() returns it: left as it is (a sweep's runs are made from it)
    is_json: bool

    @property
    def version(self) -> int:
        return detect_version(self.document, self.is_json)

    @property
    def is_sweep(self) -> bool:
        return sweep_block(self.document) is not None

    @property
    def masked_text(self) -> str:
        """The text to store: every secret value as ****** (export.mask_config_text)."""
        return masked_text(self.text, self.document, self.is_json)

    @cached_property
    def config(self) -> LoadedConfig:
        """The document as one job's config, validated and normalized (raises JobConfigError)."""
        return load_document(self.document, self.is_json)


def read(text: str) -> Submission:
    """Parse a config's text; raises JobConfigError (with its line) for text that is no config."""
    document, is_json = parse(text)
    return Submission(text, document, is_json)
