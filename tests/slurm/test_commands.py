"""clusters.slurm, pure: the command lines, and squeue/sinfo outputs recorded on slurm-wlm 22.05
(tests/fixtures/slurm) read back; Slurm's reasons and end states in the portal's terms."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from catalogue import Message
from clusters.executors.base import Failure
from clusters.slurm import texts as slurm_texts
from clusters.slurm.commands import RoleRequest, batch_script, is_portal_job, job_name, sbatch_argv
from clusters.slurm.exits import status_after
from clusters.slurm.reasons import (
    Ask,
    PartitionUse,
    expected_start,
    final_reason,
    is_final_refusal,
    pending_reason,
    refusal_reason,
)
from clusters.slurm.status import parse_nodes, parse_queue
from tests.messages import param

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
NOW = datetime(2026, 11, 25, 13, 40, tzinfo=UTC)
MASTER = RoleRequest(role="master", instances=1, cpu=2, memory_mb=1000, gpu=2, ports=2)
WORKER = RoleRequest(role="worker", instances=2, cpu=3, memory_mb=1000, gpu=0, ports=1)


@pytest.fixture(scope="module")
def queue():
    return parse_queue((FIXTURES / "squeue.txt").read_text(), "pai")


@pytest.fixture(scope="module")
def nodes():
    return parse_nodes((FIXTURES / "sinfo.txt").read_text())


def test_it_names_a_job_attempt_so_a_restarted_scheduler_finds_it():
    assert job_name("pai", 12, 3) == "pai-12-3"
    assert is_portal_job("pai-12-3", "pai") and not is_portal_job("pai-12-3", "other")
    assert not is_portal_job("pai-12-3x", "pai")


def test_it_asks_for_one_heterogeneous_component_per_role():
    argv = sbatch_argv(
        partition="gpu", name="pai-1-1", comment="c", roles=[MASTER, WORKER], gpu_type="P100", job_dir=Path("/j")
    )
    components = " ".join(argv).split(" : ")
    assert len(components) == 2
    assert "--ntasks=1 --cpus-per-task=2 --mem-per-cpu=500 --gpus-per-task=p100:2" in components[0]
    assert "--ntasks=2 --cpus-per-task=3 --mem-per-cpu=334" in components[1] and "gpus" not in components[1]
    assert "--no-requeue" in argv and argv[-1] == "/j/batch.sh"


def test_it_passes_the_jobs_time_limit_as_time_for_the_whole_job():
    argv = sbatch_argv(
        partition="gpu",
        name="pai-1-1",
        comment="c",
        roles=[MASTER, WORKER],
        gpu_type=None,
        job_dir=Path("/j"),
        time_limit="0-01:30:00",
    )
    assert argv.count("--time=0-01:30:00") == 1 and argv.index("--time=0-01:30:00") < argv.index(":")
    no_limit = sbatch_argv(partition="gpu", name="n", comment="c", roles=[WORKER], gpu_type=None, job_dir=Path("/j"))
    assert not any(arg.startswith("--time") for arg in no_limit)


def test_it_passes_the_jobs_priority_class_as_nice_higher_class_lower_nice():
    from jobs.protocol.priority import slurm_nice

    nices = [slurm_nice(name) for name in ("crit", "prod", "test", "oppo")]
    assert nices == sorted(nices) and min(nices) == 0  # (never negative: no Slurm privilege needed)
    argv = sbatch_argv(
        partition="gpu", name="n", comment="c", roles=[WORKER], gpu_type=None, job_dir=Path("/j"), nice=20
    )
    assert argv.count("--nice=20") == 1 and argv.index("--nice=20") < argv.index("--ntasks=2")


def test_it_starts_one_step_per_task_with_its_own_gpus():
    script = batch_script(roles=[MASTER, WORKER], gpu_type=None, job_dir=Path("/j"), python="py", code_dir=Path("/c"))
    steps = [line for line in script.splitlines() if line.startswith("srun")]
    assert len(steps) == 3 and all(step.endswith(" &") for step in steps)
    assert "--het-group=0" in steps[0] and "--gres=gpu:2" in steps[0] and "master 0 2" in steps[0]
    assert "--het-group=1" in steps[2] and "--gres" not in steps[2] and "worker 1 1" in steps[2]
    assert script.rstrip().endswith("wait")


def test_a_single_role_job_is_no_heterogeneous_job():
    script = batch_script(roles=[WORKER], gpu_type=None, job_dir=Path("/j"), python="py", code_dir=Path("/c"))
    assert "--het-group" not in script


def test_it_reads_only_the_portals_jobs_from_squeue(queue):
    assert sorted(queue) == ["pai-10-2", "pai-11-1", "pai-12-1", "pai-7-1", "pai-8-1", "pai-9-1"]


def test_it_reads_a_heterogeneous_job_as_one_job_on_all_its_nodes(queue):
    job = queue["pai-7-1"]
    assert job.slurm_id == 1 and job.state == "RUNNING" and job.nodes == "slt-1,slt-2" and job.active


def test_the_newest_slurm_job_of_a_name_wins(queue):
    job = queue["pai-10-2"]
    assert job.slurm_id == 12 and job.pending and job.reason == "Resources"
    assert job.expected_start == datetime(2026, 11, 25, 14, 39, 9, tzinfo=UTC)


def test_the_most_telling_end_state_of_a_heterogeneous_job_wins(queue):
    assert queue["pai-12-1"].state == "OUT_OF_MEMORY" and not queue["pai-12-1"].active


def test_it_reads_nodes_with_their_gpus_and_states(nodes):
    first, _, drained, cpu_only = nodes
    assert (first.name, first.address, first.partition, first.cpus, first.cpus_allocated) == (
        "slt-1",
        "10.249.7.2",
        "slt",
        2,
        2,
    )
    assert first.gpus == {"p100": 4} and first.gpus_used == 4 and first.usable
    assert drained.gpus == {"p100": 4} and not drained.usable and drained.reason == "bad fan"
    assert cpu_only.gpus == {} and cpu_only.partition == "cpu" and cpu_only.state == "mixed" and cpu_only.usable


def test_a_partitions_use_counts_only_the_nodes_slurm_can_use(nodes):
    use = PartitionUse.of("slt", nodes)
    assert (use.nodes, use.gpus, use.free_gpus, use.cpus, use.free_cpus) == (3, 8, 4, 4, 2)


def test_it_says_why_slurm_waits_with_numbers_and_the_expected_start(queue, nodes):
    reason = pending_reason(queue["pai-10-2"], Ask(2, 6, 4, 2000), PartitionUse.of("slt", nodes), NOW)
    sentence = param(reason, "sentence")
    assert (reason.code, sentence.code) == ("slurm.waiting_until", "slurm.reason.resources")
    assert param(sentence, "asks") == Message.of("slurm.asks", tasks=2, gpus=6, cpus=4, memory_mb=2000)
    assert (param(sentence, "free_gpus"), param(sentence, "gpus")) == (4, 8)
    text = reason.text
    assert text.startswith("Waiting in Slurm (Resources): Slurm waits for resources in partition slt")
    assert "asks for 2 task(s): 6 GPU(s)" in text and "free now: 4 of 8 GPU(s)" in text
    assert text.endswith("Slurm expects it to start at 2026-11-25 14:39 UTC.")


def test_it_takes_slurms_start_time_as_the_expected_start_only_when_it_means_one(queue):
    assert expected_start(queue["pai-10-2"], NOW) == datetime(2026, 11, 25, 14, 39, 9, tzinfo=UTC)
    assert expected_start(queue["pai-10-2"], datetime(2026, 11, 26, tzinfo=UTC)) is None  # (past)


def test_it_says_when_a_partition_can_never_hold_a_job(queue, nodes):
    reason = pending_reason(queue["pai-9-1"], Ask(4, 16, 4, 1024), PartitionUse.of("slt", nodes), NOW)
    assert (reason.code, param(reason, "sentence").code) == ("slurm.waiting", "slurm.reason.partition_config")
    text = reason.text
    assert "partition slt can never hold this job" in text and "16 GPU(s)" in text and "8 GPU(s)" in text
    assert "expects" not in text


def test_it_passes_an_unknown_reason_code_on():
    job = parse_queue("5|pai-1-1|PENDING|SomethingNew|N/A||p", "pai")["pai-1-1"]
    reason = pending_reason(job, Ask(1, 0, 1, 1), PartitionUse.of("p", []), NOW)
    assert param(reason, "sentence") == Message.of("slurm.reason.other", code="SomethingNew")
    assert "Slurm's reason: SomethingNew" in reason.text


@pytest.mark.parametrize("code", sorted(slurm_texts.REASONS))
def test_each_of_slurms_reason_codes_has_its_own_sentence(code, nodes):
    job = parse_queue(f"5|pai-1-1|PENDING|{code}|N/A||slt", "pai")["pai-1-1"]
    reason = pending_reason(job, Ask(2, 6, 4, 2000), PartitionUse.of("slt", nodes), NOW)
    assert param(reason, "sentence").code == slurm_texts.REASONS[code].code
    assert "{" not in reason.text and "%(" not in reason.text


def test_it_says_why_slurm_will_never_run_a_held_job(nodes):
    job = parse_queue("5|pai-1-1|PENDING|BadConstraints|N/A||slt", "pai")["pai-1-1"]
    reason = final_reason(job, Ask(1, 5, 1, 100), PartitionUse.of("slt", nodes))
    assert (reason.code, param(reason, "sentence").code) == ("slurm.cannot_run", "slurm.reason.bad_constraints")
    assert reason.text.startswith("Slurm cannot run the job (BadConstraints): no node of partition slt can ever")


def test_it_says_why_sbatch_refused_a_job(nodes):
    said = "sbatch: Batch job submission failed: Requested node configuration is not available"
    reason = refusal_reason(said, Ask(4, 16, 4, 1024), PartitionUse.of("slt", nodes))
    assert (reason.code, param(reason, "sentence").code) == ("slurm.refuses", "slurm.refusal.node_configuration")
    assert reason.text.startswith("Slurm refuses the job (Requested node configuration is not available): no node")
    assert "16 GPU(s)" in reason.text


@pytest.mark.parametrize("known", sorted(slurm_texts.REFUSALS))
def test_each_refusal_sbatch_gives_for_good_has_its_own_sentence(known, nodes):
    reason = refusal_reason(
        f"sbatch: error: Batch job submission failed: {known}", Ask(1, 1, 1, 1), PartitionUse.of("slt", nodes)
    )
    assert param(reason, "sentence").code == slurm_texts.REFUSALS[known].code and is_final_refusal(known)


def test_a_refusal_it_has_no_words_for_points_at_slurms():
    reason = refusal_reason(
        "sbatch: error: Socket timed out on send/recv operation", Ask(1, 1, 1, 1), PartitionUse.of("p", [])
    )
    assert param(reason, "sentence") == Message.of("slurm.refusal.other")
    assert reason.text == "Slurm refuses the job (error: Socket timed out on send/recv operation): see Slurm's words."


@pytest.mark.parametrize(
    ("state", "failure", "oom"),
    [
        ("NODE_FAIL", Failure.NODE_LOST, False),
        ("PREEMPTED", Failure.TASK_GONE, False),
        ("OUT_OF_MEMORY", None, True),
        ("TIMEOUT", Failure.TIME_LIMIT, False),
    ],
)
def test_it_maps_slurms_end_states_onto_the_exit_spec(state, failure, oom):
    status = status_after(state)
    assert not status.running and status.failure is failure and status.oom_killed is oom


def test_a_job_slurm_forgot_ended_its_tasks_as_gone():
    assert status_after(None).failure is Failure.TASK_GONE


@pytest.mark.parametrize(
    ("said", "unreachable"),
    [
        ("sinfo: error: Unable to contact slurm controller (connect failure)", True),
        ("sinfo: error: slurm_load_partitions: Socket timed out on send/recv operation", True),
        ("sbatch: error: Batch job submission failed: Requested node configuration is not available", False),
    ],
)
def test_the_client_tells_a_controller_it_did_not_reach_from_its_refusal(said, unreachable):
    from clusters.slurm import client

    with pytest.raises(client.SlurmError) as failed:
        client.run(["sh", "-c", f"echo '{said}' >&2; exit 1"])
    assert isinstance(failed.value, client.SlurmUnreachable) is unreachable


def test_it_reads_a_portal_job_and_its_attempt_from_a_slurm_job_name():
    from clusters.slurm.commands import job_of

    assert job_of("pai-12-3", "pai") == (12, 3)
    assert job_of("other-12-3", "pai") is None and job_of("pai-12", "pai") is None
