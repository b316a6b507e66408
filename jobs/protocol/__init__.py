"""The job protocol (pure Python, no Django): OpenPAI v1 JSON and v2 YAML job configs in, one
normalized v2 spec out. See docs/contracts.md for the interface the rest of the portal relies on."""

from jobs.protocol.errors import JobConfigError, format_error
from jobs.protocol.export import export, mask_config_text
from jobs.protocol.loader import LoadedConfig, load
from jobs.protocol.parsing import MAX_BYTES
from jobs.protocol.task_script import task_script
from jobs.protocol.v2 import MASK

__all__ = [
    "MASK",
    "MAX_BYTES",
    "JobConfigError",
    "LoadedConfig",
    "export",
    "format_error",
    "load",
    "mask_config_text",
    "task_script",
]
