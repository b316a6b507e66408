"""SSH into jobs: per-job keys, authorized keys, where each task's sshd is, and the executor's
ssh environment. The web terminal lives in web.consumers; pages in web.ssh.views."""

from jobs.ssh.info import (
    SSH_PORT_LABEL,
    authorized_keys_for,
    connect_command,
    host_network_ssh_env,
    openpai_ssh_info,
    ssh_endpoint,
    ssh_info,
    task_ssh_env,
    task_ssh_secret_env,
)
from jobs.ssh.keys import attach_new_keypair, generate_job_keypair, job_private_key, key_filename
from jobs.ssh.plugin import SshSettings, ports_with_ssh, ssh_settings

__all__ = [
    "SSH_PORT_LABEL",
    "SshSettings",
    "attach_new_keypair",
    "authorized_keys_for",
    "connect_command",
    "generate_job_keypair",
    "host_network_ssh_env",
    "job_private_key",
    "key_filename",
    "openpai_ssh_info",
    "ports_with_ssh",
    "ssh_endpoint",
    "ssh_info",
    "ssh_settings",
    "task_ssh_env",
    "task_ssh_secret_env",
]
