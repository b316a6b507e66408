"""The ssh runtime plugin settings of a v2 config (extras.com.microsoft.pai.runtimeplugin)."""

from jobs.ssh import ssh_settings
from jobs.ssh.plugin import task_aliases
from tests.factories import partial_spec


def spec_with(*plugins):
    return partial_spec(extras={"com.microsoft.pai.runtimeplugin": list(plugins)}, taskRoles={})


def test_it_enables_jobssh_and_disables_the_barrier_by_default():
    settings = ssh_settings(partial_spec(taskRoles={}))
    assert settings.jobssh is True
    assert settings.sshbarrier is False
    assert settings.public_keys == ()


def test_it_reads_jobssh_and_sshbarrier_from_the_plugin_parameters():
    settings = ssh_settings(spec_with({"plugin": "ssh", "parameters": {"jobssh": False, "sshbarrier": True}}))
    assert settings.jobssh is False
    assert settings.sshbarrier is True


def test_it_reads_parameters_that_lost_their_parameters_key_in_scraping():
    assert ssh_settings(spec_with({"plugin": "ssh", "jobssh": True, "sshbarrier": True})).sshbarrier is True


def test_it_converts_the_barrier_timeout_from_minutes_to_seconds():
    settings = ssh_settings(spec_with({"plugin": "ssh", "parameters": {"sshbarrierTimeout": 2}}))
    assert settings.barrier_timeout_s == 120


def test_it_reads_barrier_task_roles_in_both_schemas():
    old = ssh_settings(spec_with({"plugin": "ssh", "parameters": {"sshbarrier": ["worker"]}}))
    new = ssh_settings(spec_with({"plugin": "ssh", "parameters": {"sshbarrier": True, "sshbarrierTaskRoles": ["ps"]}}))
    assert (old.sshbarrier, old.barrier_roles) == (True, ("worker",))
    assert (new.sshbarrier, new.barrier_roles) == (True, ("ps",))


def test_it_collects_userssh_and_public_keys():
    settings = ssh_settings(
        spec_with(
            {
                "plugin": "ssh",
                "parameters": {
                    "userssh": {"type": "custom", "value": "ssh-ed25519 AAAA1 me@laptop"},
                    "publicKeys": ["ssh-rsa BBBB2 me@desk", "  "],
                },
            }
        )
    )
    assert settings.public_keys == ("ssh-ed25519 AAAA1 me@laptop", "ssh-rsa BBBB2 me@desk")


def test_it_ignores_other_runtime_plugins():
    assert ssh_settings(spec_with({"plugin": "tensorboard", "parameters": {"sshbarrier": True}})).sshbarrier is False


def test_it_names_tasks_taskrole_dash_index():
    spec = partial_spec(taskRoles={"ps": {"instances": 1}, "worker": {"instances": 2}})
    assert task_aliases(spec) == ["ps-0", "worker-0", "worker-1"]
    assert task_aliases(spec, ("worker",)) == ["worker-0", "worker-1"]


def test_it_asks_for_one_ssh_port_per_task_unless_the_config_has_one():
    from jobs.ssh import ports_with_ssh

    assert ports_with_ssh({"http": 1}) == {"http": 1, "ssh": 1}
    assert ports_with_ssh({"ssh": 2}) == {"ssh": 2}
    assert ports_with_ssh(None) == {"ssh": 1}
