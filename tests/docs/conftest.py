"""The docs tests' count of marked examples, in the terminal summary (tests/docs/test_examples.py)."""

from collections import Counter


def pytest_terminal_summary(terminalreporter):
    passed = terminalreporter.stats.get("passed", [])
    counts = Counter(
        report.nodeid.split("::")[1].split("[")[0]
        for report in passed
        if "test_examples.py::test_it_" in report.nodeid and "[" in report.nodeid and report.when == "call"
    )
    if counts:
        names = {
            "test_it_loads_each_marked_config": "configs",
            "test_it_loads_each_marked_fragment_over_a_job": "config fragments",
            "test_it_runs_each_marked_curl_session_against_a_live_portal": "curl sessions",
        }
        ran = ", ".join(f"{count} {names.get(name, name)}" for name, count in sorted(counts.items()))
        terminalreporter.write_line(f"docs examples run: {sum(counts.values())} ({ran})")
