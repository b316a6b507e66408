"""The docs tests' count of the marked examples they ran, in the terminal summary (tests/docs/test_examples.py)."""

from collections import Counter


def pytest_terminal_summary(terminalreporter):
    from tests.docs.test_examples import EXAMPLES

    passed = terminalreporter.stats.get("passed", [])
    counts = Counter(
        report.nodeid.split("::")[1].split("[")[0]
        for report in passed
        if "test_examples.py::test_it_" in report.nodeid and "[" in report.nodeid and report.when == "call"
    )
    if counts:
        ran = ", ".join(f"{count} {name.removeprefix('test_it_')}" for name, count in sorted(counts.items()))
        shown = sum(1 for example in EXAMPLES if example.kind == "output")
        terminalreporter.write_line(
            f"docs examples run: {sum(counts.values())} of {len(EXAMPLES) - shown} ({ran}); {shown} output listings"
        )
