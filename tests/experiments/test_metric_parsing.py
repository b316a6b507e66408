"""Training metrics as tasks report them (jobs/protocol/metrics.py): pure parsing."""

from jobs.protocol.metrics import MAX_LINE_BYTES, Point, downsample, read_lines


def test_it_reads_a_marked_line_of_a_log():
    reading = read_lines(b'epoch 1\nPAI_METRIC {"step": 100, "loss": 0.31, "acc": 0.82}\n', marked=True, next_step=0)
    assert reading.points == [Point(100, "loss", 0.31), Point(100, "acc", 0.82)]


def test_it_ignores_a_logs_unmarked_lines():
    reading = read_lines(b'{"step": 1, "loss": 2}\n+ echo PAI_METRIC {"loss": 1}\n', marked=True, next_step=0)
    assert (reading.points, reading.bad_lines) == ([], 0)


def test_it_reads_every_line_of_a_metrics_file():
    reading = read_lines(b'{"step": 1, "loss": 2}\n\n{"step": 2, "loss": 1.5}\n', marked=False, next_step=0)
    assert [point.step for point in reading.points] == [1, 2]


def test_it_numbers_lines_without_a_step_after_the_last():
    reading = read_lines(b'{"loss": 2}\n{"loss": 1}\n', marked=False, next_step=7)
    assert ([point.step for point in reading.points], reading.next_step) == ([7, 8], 9)


def test_it_leaves_a_line_still_being_written_for_the_next_read():
    data = b'{"step": 1, "loss": 2}\n{"step": 2, "lo'
    reading = read_lines(data, marked=False, next_step=0)
    assert (len(reading.points), reading.consumed) == (1, data.index(b"\n") + 1)


def test_it_skips_and_counts_bad_lines():
    data = b'not json\n[1, 2]\n{"step": "x", "loss": 1}\n{"name": "only text"}\n{"step": 3, "loss": 1}\n'
    reading = read_lines(data, marked=False, next_step=0)
    assert (reading.bad_lines, [point.step for point in reading.points]) == (4, [3])


def test_it_skips_values_that_are_not_finite_numbers():
    data = (
        b'{"step": 1, "loss": NaN, "ok": true, "phase": "train", "big": 1e999, "huge": ' + b"9" * 400 + b', "acc": 1}\n'
    )
    assert read_lines(data, marked=False, next_step=0).points == [Point(1, "acc", 1.0)]


def test_it_counts_a_line_too_long_to_end_as_bad():
    reading = read_lines(b"PAI_METRIC " + b"x" * MAX_LINE_BYTES, marked=True, next_step=0)
    assert (reading.bad_lines, reading.consumed) == (1, MAX_LINE_BYTES + 11)


def test_it_keeps_each_buckets_lowest_and_highest_when_downsampling():
    steps = list(range(1000))
    values = [float(step % 10) for step in steps]
    values[500] = 99.0
    kept_steps, kept_values = downsample(steps, values, 100)
    assert len(kept_steps) <= 100 and 99.0 in kept_values and kept_steps == sorted(kept_steps)
